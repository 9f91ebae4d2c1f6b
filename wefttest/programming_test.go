package wefttest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/weftmcp/weft"
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
// wefttest client returns the cause (wrapping ErrProgramming and the
// *weft.ProgrammingError) and, with WithTest, fails the test with it.
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

	caps := wefttest.WithCapabilities(exactjson.Object(
		exactjson.Field("elicitation", exactjson.Object(exactjson.Field("form", exactjson.Object()))),
		exactjson.Field("roots", exactjson.Object())))
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
			cl := wefttest.NewClient(srv, caps, wefttest.WithTest(tb))
			resp, err := cl.Call(t.Context(), "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String(c.tool))))
			// The client still sees only the sanitized error.
			if resp == nil || resp.Error == nil || weft.Code(resp.Error.Code) != weft.CodeInternalError || resp.Error.Message != "Internal error" || resp.HTTPStatus != 500 {
				t.Fatalf("response %+v, want the sanitized -32603", resp)
			}
			if strings.Contains(resp.Error.Data.String(), "StateMode") {
				t.Errorf("the cause reached the client: %v", resp.Error.Data)
			}
			// The test gets the cause: returned...
			var pe *weft.ProgrammingError
			if !errors.Is(err, wefttest.ErrProgramming) || !errors.As(err, &pe) || pe.Name != c.tool || pe.Method != "tools/call" {
				t.Fatalf("Call error %v, want ErrProgramming with a *weft.ProgrammingError of %q", err, c.tool)
			}
			if !strings.Contains(err.Error(), c.fix) {
				t.Errorf("error %q does not name the fix %q", err, c.fix)
			}
			// ...and as a test failure.
			if f := tb.failures(); len(f) != 1 || !strings.Contains(f[0], c.fix) {
				t.Errorf("test failures %q, want one naming %q", f, c.fix)
			}
			// The typed methods return it too.
			if _, err := cl.CallTool(t.Context(), c.tool, nil); !errors.As(err, &pe) {
				t.Errorf("CallTool error %v, want a *weft.ProgrammingError", err)
			}
		})
	}
	tb := &fakeTB{TB: t}
	if res, err := wefttest.NewClient(srv, wefttest.WithTest(tb)).CallTool(t.Context(), "fine", nil); err != nil || res.Text() != "ok" || len(tb.failures()) != 0 {
		t.Errorf("a correct tool: %v, %v, failures %q", res, err, tb.failures())
	}
}
