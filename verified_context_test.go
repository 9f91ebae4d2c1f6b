package weft

import (
	"context"
	"sync"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// stageView is what one stage saw of a request.
type stageView struct {
	stage     string
	req       *Request
	round     int
	responses int
	hasState  bool
}

type stageRecorder struct {
	mu    sync.Mutex
	views []stageView
}

func (r *stageRecorder) see(stage string, req *Request) {
	_, has, _ := FrameworkState[exactjson.Value](req)
	r.mu.Lock()
	r.views = append(r.views, stageView{stage, req, req.Round(), req.InputResponses().Len(), has})
	r.mu.Unlock()
}

func (r *stageRecorder) RequestStarted(ctx context.Context, req *Request) {
	r.see("RequestStarted", req)
}
func (r *stageRecorder) RequestFinished(ctx context.Context, req *Request, o Outcome, err error) {
	r.see("RequestFinished", req)
}

func (r *stageRecorder) take() []stageView {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.views
	r.views = nil
	return v
}

// TestVerifiedRetryReachesEveryStage: a valid retry's verified answers,
// state and round reach the Observer's RequestStarted, the middleware
// before it calls next, the handler and RequestFinished, all on the same
// *Request.
func TestVerifiedRetryReachesEveryStage(t *testing.T) {
	rec := &stageRecorder{}
	mw := func(next Handler) Handler {
		return func(ctx context.Context, req *Request) (Result, error) {
			rec.see("middleware", req)
			return next(ctx, req)
		}
	}
	f := newStateFixture(t, &Options{Observer: rec, Middleware: []Middleware{mw}})
	tok := tokenOf(t, f.call(t, "/mcp", 1, "flow", nil, nil))
	rec.take()
	r := f.call(t, "/mcp", 2, "flow", nil, M{"requestState": tok, "inputResponses": M{"approve": M{"action": "accept"}}})
	if r.text(t) != "approved" {
		t.Fatalf("retry: %v", r)
	}
	handler := f.last(t)
	if handler.round != 1 || handler.responses.Len() != 1 || !handler.hasFw {
		t.Fatalf("the handler saw round %d, %d answers, state %v", handler.round, handler.responses.Len(), handler.hasFw)
	}
	views := rec.take()
	if len(views) != 3 {
		t.Fatalf("stages seen: %+v", views)
	}
	for _, v := range views {
		if v.req != views[0].req {
			t.Errorf("%s saw another *Request", v.stage)
		}
		if v.round != 1 || v.responses != 1 || !v.hasState {
			t.Errorf("%s saw round %d, %d answers, state %v; want round 1, 1 answer, state", v.stage, v.round, v.responses, v.hasState)
		}
	}
	// A retry whose state fails verification is observed, and never
	// reaches the middleware or the handler.
	before := f.calls()
	r = f.call(t, "/mcp", 3, "flow", nil, M{"requestState": tok + "x", "inputResponses": M{"approve": M{"action": "accept"}}})
	r.wantError(t, 400, CodeInvalidParams)
	views = rec.take()
	if len(views) != 2 || views[0].stage != "RequestStarted" || views[1].stage != "RequestFinished" || f.calls() != before {
		t.Fatalf("a retry with broken state: stages %+v, handler calls %d -> %d", views, before, f.calls())
	}
	for _, v := range views {
		if v.round != 0 || v.responses != 0 || v.hasState {
			t.Errorf("%s of a rejected retry saw round %d, %d answers, state %v; want nothing unverified", v.stage, v.round, v.responses, v.hasState)
		}
	}
}
