package weft

import (
	"context"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// TestRetrySkipsValidatedArguments: a tools/call that validated its
// arguments seals the fingerprint of the input schema; a retry whose state
// carries the current schema's fingerprint does not validate the (bound,
// hence identical) arguments again, and any other retry does.
func TestRetrySkipsValidatedArguments(t *testing.T) {
	f := newStateFixture(t, nil)
	form := Form(ConditionalCapability)
	schema := func(max int) []byte {
		return []byte(`{"type":"object","properties":{"n":{"type":"integer","maximum":` + itoa(max) + `}},"required":["n"]}`)
	}
	type seenArgs struct {
		args     string
		verified bool
	}
	var last seenArgs
	add := func(max int) {
		must(t, f.s.AddTool(Tool{Name: "bounded", Description: "Bounded n.", InputSchema: schema(max), Inputs: []Input{form}, StateMode: StateFramework},
			func(ctx context.Context, req *Request) (*CallToolResult, error) {
				last = seenArgs{}
				if req.stateMeta() != nil {
					f.s.mu.RLock()
					e, _ := f.s.tools.get("bounded")
					f.s.mu.RUnlock()
					last = seenArgs{args: req.stateMeta().Args, verified: req.argsVerified(e.op)}
				}
				if _, ok, _ := FrameworkState[exactjson.Value](req); ok {
					return textResult("done"), nil
				}
				return nil, AskInput("approve", form.Ask("Approve?", approveSchema)).WithFrameworkState(exactjson.String("s"))
			}))
	}
	add(10)
	fp := schemaFingerprint(mustCompact(t, schema(10)))
	if len(fp) != 16 {
		t.Fatalf("fingerprint %q: want 16 hex digits", fp)
	}

	tok := tokenOf(t, f.call(t, "/mcp", 1, "bounded", M{"n": 5}, nil))
	if r := f.retry(t, "/mcp", 2, "bounded", M{"n": 5}, tok); r.text(t) != "done" {
		t.Fatalf("retry: %v", r)
	}
	if last.args != fp || !last.verified {
		t.Errorf("retry saw args fingerprint %q (verified %v), want %q (true)", last.args, last.verified, fp)
	}

	// White box: the same schema fingerprint but a validator that refuses
	// everything. A first call fails validation; the verified retry does
	// not validate, so it completes.
	f.s.mu.Lock()
	e, _ := f.s.tools.get("bounded")
	refuse, err := compileSchema([]byte(`{"type":"object","not":{}}`), "input", true)
	must(t, err)
	keep := e.input
	e.input = refuse.validator
	f.s.mu.Unlock()
	if r := f.call(t, "/mcp", 3, "bounded", M{"n": 5}, nil); !strings.Contains(r.text(t), "do not match the tool's inputSchema") {
		t.Fatalf("a first call must be validated: %v", r)
	}
	if r := f.retry(t, "/mcp", 4, "bounded", M{"n": 5}, tok); r.text(t) != "done" {
		t.Fatalf("a verified retry must not be validated again: %v", r)
	}
	f.s.mu.Lock()
	e.input = keep
	f.s.mu.Unlock()

	// A stricter schema (another fingerprint): the retry is validated again
	// and fails, though its state verifies.
	add(3)
	if r := f.retry(t, "/mcp", 5, "bounded", M{"n": 5}, tok); !strings.Contains(r.text(t), "do not match the tool's inputSchema") {
		t.Fatalf("a retry under a changed schema must be validated: %v", r)
	}

	// Prompts have no input schema, so their state carries no fingerprint.
	f.s.mu.RLock()
	p, _ := f.s.prompts.get("flow")
	f.s.mu.RUnlock()
	if p.op.argsFingerprint != "" {
		t.Errorf("prompt operation has an args fingerprint %q", p.op.argsFingerprint)
	}
}

func mustCompact(t testing.TB, raw []byte) []byte {
	t.Helper()
	c, err := compileSchema(raw, "input", true)
	must(t, err)
	return c.compact
}

func itoa(n int) string { return exactjson.Int(int64(n)).String() }
