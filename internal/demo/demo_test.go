package demo

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/handle"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/wefttest"
)

// headerAdmission admits "X-User: name" as principal name in partition
// tenant-<name>: a stand-in for a real token check.
func headerAdmission(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
	u := r.Header.Get("X-User")
	if u == "" {
		return weft.Identity{}, &weft.AdmissionError{Status: http.StatusUnauthorized, Message: "Unauthorized"}
	}
	return weft.Identity{Principal: u, Partition: "tenant-" + u}, nil
}

func newTestDemo(t *testing.T) *Demo {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := New(context.Background(), logger, seal.NewEphemeralManager(nil), Config{DataDir: t.TempDir(),
		BaseURL: "http://127.0.0.1:8080", Admission: headerAdmission})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = d.srv.Shutdown(ctx)
		_ = d.Close()
	})
	return d
}

func testClient(t *testing.T, d *Demo, user string, inputs ...weft.Input) *client.Client {
	return wefttest.NewClient(t, d.srv, &wefttest.Options{Header: http.Header{"X-User": {user}},
		Client: client.Options{Capabilities: weft.ClientCapabilities(inputs...)}})
}

// round is one round of a tools/call driven by hand, as the user's client
// would after showing the user what the tool asks: its params and result.
type round struct {
	c              *client.Client
	params, result exactjson.Value
}

// callTool sends the first round of a tools/call.
func callTool(ctx context.Context, c *client.Client, tool string, args any) (*round, error) {
	a, err := exactjson.FromGo(args)
	if err != nil {
		return nil, err
	}
	if a.IsNull() {
		a = exactjson.Object()
	}
	r := &round{c: c, params: exactjson.Object(exactjson.Field("name", exactjson.String(tool)), exactjson.Field("arguments", a))}
	r.result, err = c.Call(ctx, "tools/call", r.params)
	return r, err
}

// retry sends the next round: the same params with the answers and the
// request state of r's result.
func (r *round) retry(ctx context.Context, responses map[string]exactjson.Value) (*round, error) {
	in := exactjson.Object()
	for k, v := range responses {
		in = in.With(k, v)
	}
	next := &round{c: r.c, params: r.params.With("inputResponses", in)}
	if st, ok := r.result.Get("requestState"); ok {
		next.params = next.params.With("requestState", st)
	}
	var err error
	next.result, err = r.c.Call(ctx, "tools/call", next.params)
	return next, err
}

func (r *round) get(path ...string) exactjson.Value {
	v := r.result
	for _, p := range path {
		v, _ = v.Get(p)
	}
	return v
}

func (r *round) str(path ...string) string {
	s, _ := r.get(path...).AsString()
	return s
}

func (r *round) resultType() string { return r.str("resultType") }
func (r *round) state() string      { return r.str("requestState") }
func (r *round) isError() bool      { return exactjson.Equal(r.get("isError"), exactjson.Bool(true)) }

// text joins the text blocks of the result's content.
func (r *round) text() string {
	var parts []string
	for b := range r.get("content").Values() {
		if s, ok := b.Get("text"); ok {
			t, _ := s.AsString()
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

func TestCatalogContinue(t *testing.T) {
	d := newTestDemo(t)
	ctx := context.Background()
	c := testClient(t, d, "alice", weft.Form(weft.RequiredCapability))
	for _, tc := range []struct {
		action, want string
	}{
		{"accept", "Catalog access approved; continuing."},
		{"decline", "Catalog access was declined; nothing was changed."},
		{"cancel", "Cancelled; nothing was changed."},
	} {
		first, err := callTool(ctx, c, "catalog.continue", nil)
		if err != nil {
			t.Fatal(err)
		}
		if first.resultType() != "input_required" || first.state() == "" || first.str("inputRequests", "approval", "method") != "elicitation/create" {
			t.Fatalf("first round: %s", first.result)
		}
		final, err := first.retry(ctx, map[string]exactjson.Value{"approval": exactjson.Object(exactjson.Field("action", exactjson.String(tc.action)))})
		if err != nil {
			t.Fatal(err)
		}
		if final.resultType() != "complete" || final.text() != tc.want {
			t.Fatalf("%s: got %q (%s)", tc.action, final.text(), final.resultType())
		}
	}
	// An accepted answer with fields the (empty) form does not have is refused.
	first, err := callTool(ctx, c, "catalog.continue", nil)
	if err != nil {
		t.Fatal(err)
	}
	final, err := first.retry(ctx, map[string]exactjson.Value{"approval": exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(exactjson.Field("scope", exactjson.String("all")))))})
	if err != nil {
		t.Fatal(err)
	}
	if !final.isError() || final.text() != "The approval answer could not be read; start again." {
		t.Fatalf("unexpected content: %q (isError %v)", final.text(), final.isError())
	}
	// Without any elicitation capability the conditional request is refused with -32021.
	if _, err := testClient(t, d, "alice").CallTool(ctx, "catalog.continue", nil); err == nil || !strings.Contains(err.Error(), "-32021") {
		t.Fatalf("missing capability: got %v", err)
	}
}

func TestRefundExactDecimal(t *testing.T) {
	d := newTestDemo(t)
	ctx := context.Background()
	c := testClient(t, d, "alice", weft.Form(weft.RequiredCapability))
	first, err := callTool(ctx, c, "refund.request", map[string]any{"orderId": "A-1"})
	if err != nil {
		t.Fatal(err)
	}
	amount := func(lit string) map[string]exactjson.Value {
		n, err := exactjson.ParseNumber(lit)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]exactjson.Value{"amount": exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
			exactjson.Field("content", exactjson.Object(exactjson.Field("amount", exactjson.NumberValue(n)))))}
	}
	// Over the maximum: asked again.
	again, err := first.retry(ctx, amount("500.01"))
	if err != nil || again.resultType() != "input_required" {
		t.Fatalf("500.01: %v %s", err, again.result)
	}
	// Three decimals: asked again.
	again, err = again.retry(ctx, amount("3.505"))
	if err != nil || again.resultType() != "input_required" {
		t.Fatalf("3.505: %v", err)
	}
	final, err := again.retry(ctx, amount("3.50"))
	if err != nil {
		t.Fatal(err)
	}
	if final.text() != "Refund of 3.50 for order A-1 requested." {
		t.Fatalf("got %q", final.text())
	}
}

// TestCartHandles is the durable application-handle flow: handles bound to
// the principal, rotated on every retry, crossed and replayed handles
// rejected with one fixed error without consuming the rightful owner's.
func TestCartHandles(t *testing.T) {
	d := newTestDemo(t)
	ctx := context.Background()
	alice := testClient(t, d, "alice", weft.Form(weft.RequiredCapability))
	bob := testClient(t, d, "bob", weft.Form(weft.RequiredCapability))
	a1, err := callTool(ctx, alice, "cart.checkout", map[string]any{"items": []string{"tea"}})
	if err != nil {
		t.Fatal(err)
	}
	b1, err := callTool(ctx, bob, "cart.checkout", map[string]any{"items": []string{"coffee"}})
	if err != nil {
		t.Fatal(err)
	}
	confirm := map[string]exactjson.Value{"confirm": exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(exactjson.Field("confirm", exactjson.Bool(true)))))}
	// Bob presents Alice's handle: one fixed error, and Alice's handle survives.
	crossed := *b1
	crossed.result = crossed.result.With("requestState", exactjson.String(a1.state()))
	res, err := crossed.retry(ctx, confirm)
	if err != nil || !res.isError() || res.text() != "This checkout is invalid or has expired; start again." {
		t.Fatalf("crossed handle: %v %s", err, res.result)
	}
	a2, err := a1.retry(ctx, confirm)
	if err != nil || a2.resultType() != "input_required" || a2.state() == a1.state() {
		t.Fatalf("alice after the crossing: %v %s", err, a2.result)
	}
	// Replaying Alice's first handle fails the same way.
	res, err = a1.retry(ctx, confirm)
	if err != nil || !res.isError() || res.text() != "This checkout is invalid or has expired; start again." {
		t.Fatalf("replayed handle: %v %s", err, res.result)
	}
	b2, err := b1.retry(ctx, confirm)
	if err != nil || b2.resultType() != "input_required" {
		t.Fatalf("bob: %v %s", err, b2.result)
	}
	ship := map[string]exactjson.Value{"shipping": exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(exactjson.Field("speed", exactjson.String("express")))))}
	a3, err := a2.retry(ctx, ship)
	if err != nil || a3.text() != "Ordered tea with express shipping." {
		t.Fatalf("alice final: %v %q", err, a3.text())
	}
	b3, err := b2.retry(ctx, ship)
	if err != nil || b3.text() != "Ordered coffee with express shipping." {
		t.Fatalf("bob final: %v %q", err, b3.text())
	}
}

// TestAccountLink is the URL-elicitation flow.
func TestAccountLink(t *testing.T) {
	d := newTestDemo(t)
	ctx := context.Background()
	c := testClient(t, d, "alice", weft.URL(weft.RequiredCapability))
	first, err := callTool(ctx, c, "account.link", nil)
	if err != nil {
		t.Fatal(err)
	}
	link := first.str("inputRequests", "link", "params", "url")
	if !strings.HasPrefix(link, "http://127.0.0.1:8080/link/") {
		t.Fatalf("link %q", link)
	}
	accept := map[string]exactjson.Value{"link": exactjson.Object(exactjson.Field("action", exactjson.String("accept")))}
	// Not completed in the browser yet: asked again.
	again, err := first.retry(ctx, accept)
	if err != nil || again.resultType() != "input_required" {
		t.Fatalf("before the browser step: %v %s", err, again.result)
	}
	// The user completes the page.
	h := strings.TrimPrefix(link, "http://127.0.0.1:8080/link/")
	if !d.stores.links.complete(h, d.stores.links.token(h)) {
		t.Fatal("the page of an issued link did not complete")
	}
	final, err := again.retry(ctx, accept)
	if err != nil || final.text() != "Account linked." {
		t.Fatalf("after the browser step: %v %q", err, final.text())
	}
	// Form-only clients cannot be sent a URL request.
	if _, err := testClient(t, d, "alice", weft.Form(weft.RequiredCapability)).CallTool(ctx, "account.link", nil); err == nil || !strings.Contains(err.Error(), "-32021") {
		t.Fatalf("form-only client: %v", err)
	}
}

// TestNewReleasesAFleetItCannotUse: when the fleet's handle database
// refuses the demo's tables, New reports it and releases the fleet's
// stores (a Fleet without Close included) instead of failing on them.
func TestNewReleasesAFleetItCannotUse(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "handles.db"))
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close() // handle.New fails on a closed database
	tasks := task.NewMemoryStore(nil)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, err = New(context.Background(), logger, seal.NewEphemeralManager(nil), Config{BaseURL: "http://127.0.0.1:8080",
		Fleet: &Fleet{Tasks: tasks, Events: tasks, DB: db, Dialect: handle.SQLite}})
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("New with an unusable handle database: %v", err)
	}
}
