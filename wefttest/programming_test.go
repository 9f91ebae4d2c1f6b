package wefttest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/wefttest"
)

// fakeTB records what a test would be failed with.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) failures() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errors...)
}

// TestProgrammingErrorsFailTheTest: a mistake the server can only see at
// run time still answers the client with the sanitized -32603, but the
// test fails with the cause, which names the fix; OnProgrammingError
// receives the *weft.ProgrammingError instead.
func TestProgrammingErrorsFailTheTest(t *testing.T) {
	type out struct {
		N int `json:"n"`
	}
	srv, err := weft.NewServer(weft.Implementation{Name: "buggy", Version: "1"}, &weft.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Framework state, but the tool declares no StateMode.
	must(weft.AddTool(srv, weft.Tool{Name: "stateless", Description: "Forgets its StateMode.", Inputs: []weft.Input{weft.Form(weft.ConditionalCapability)}},
		func(ctx context.Context, req *weft.Request, _ struct{}) (out, error) {
			return out{}, weft.AskInput("ok", weft.Form(weft.ConditionalCapability).Ask("Proceed?", formSchema("ok", "boolean"))).WithFrameworkState(map[string]int{"step": 1})
		}))
	// An input request the tool does not declare.
	must(weft.AddTool(srv, weft.Tool{Name: "undeclared", Description: "Asks for roots it never declared."},
		func(ctx context.Context, req *weft.Request, _ struct{}) (out, error) {
			return out{}, weft.AskInput("roots", weft.Roots(weft.ConditionalCapability).Ask())
		}))
	// Structured content outside the declared output schema.
	must(srv.AddTool(weft.Tool{Name: "off_schema", Description: "Breaks its output schema.",
		OutputSchema: []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{StructuredContent: exactjson.Object(exactjson.Field("n", exactjson.String("one")))}, nil
		}))
	// A handler that panics.
	must(srv.AddTool(weft.Tool{Name: "panics", Description: "Panics."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			panic("index out of range")
		}))
	must(srv.AddTool(weft.Tool{Name: "fine", Description: "Works."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) { return text("ok"), nil }))

	caps := exactjson.Object(
		exactjson.Field("elicitation", exactjson.Object(exactjson.Field("form", exactjson.Object()))),
		exactjson.Field("roots", exactjson.Object()))
	for _, c := range []struct {
		tool string
		fix  string // what the failure must say
	}{
		{"stateless", `returned framework state but declares none: set weft.Tool.StateMode (weft.StateFramework)`},
		{"undeclared", `add weft.Roots(...) to weft.Tool.Inputs`},
		{"off_schema", `fix the handler's CallToolResult.StructuredContent or Tool.OutputSchema`},
		{"panics", `the handler panicked: index out of range`},
	} {
		t.Run(c.tool, func(t *testing.T) {
			tb := &fakeTB{TB: t}
			cl := wefttest.NewClient(tb, srv, &wefttest.Options{Client: client.Options{Capabilities: caps}})
			_, err := cl.CallTool(t.Context(), c.tool, nil)
			// The client still sees only the sanitized error.
			var rerr *client.RPCError
			if !errors.As(err, &rerr) || weft.Code(rerr.Code) != weft.CodeInternalError || rerr.Message != "Internal error" || rerr.HTTPStatus != 500 {
				t.Fatalf("CallTool error %v, want the sanitized -32603", err)
			}
			if strings.Contains(rerr.Data.String(), "StateMode") {
				t.Errorf("the cause reached the client: %v", rerr.Data)
			}
			// The test fails with the cause.
			if f := tb.failures(); len(f) != 1 || !strings.Contains(f[0], c.fix) {
				t.Errorf("test failures %q, want one naming %q", f, c.fix)
			}
			// OnProgrammingError gets it instead.
			var mu sync.Mutex
			var got []error
			cl = wefttest.NewClient(t, srv, &wefttest.Options{
				Client: client.Options{Capabilities: caps},
				OnProgrammingError: func(err error) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, err)
				},
			})
			if _, err := cl.CallTool(t.Context(), c.tool, nil); !errors.As(err, &rerr) {
				t.Fatalf("CallTool error %v, want an RPCError", err)
			}
			mu.Lock()
			defer mu.Unlock()
			var pe *weft.ProgrammingError
			if len(got) != 1 || !errors.As(got[0], &pe) || pe.Name != c.tool || pe.Method != "tools/call" || !strings.Contains(pe.Error(), c.fix) {
				t.Errorf("OnProgrammingError got %v, want one *weft.ProgrammingError of %q naming %q", got, c.tool, c.fix)
			}
		})
	}
	tb := &fakeTB{TB: t}
	if res, err := wefttest.NewClient(tb, srv, nil).CallTool(t.Context(), "fine", nil); err != nil || res.Text() != "ok" || len(tb.failures()) != 0 {
		t.Errorf("a correct tool: %v, %v, failures %q", res, err, tb.failures())
	}
}
