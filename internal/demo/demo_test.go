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
	d, err := New(context.Background(), logger, seal.NewEphemeralManager(), Config{DataDir: t.TempDir(),
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

func testClient(d *Demo, user string, inputs ...weft.Input) *wefttest.Client {
	return wefttest.NewWireClient(d.srv, wefttest.WithHeader("X-User", user), wefttest.WithCapabilities(wefttest.Capabilities(inputs...)))
}

func TestCatalogContinue(t *testing.T) {
	d := newTestDemo(t)
	ctx := context.Background()
	c := testClient(d, "alice", weft.Form(weft.RequiredCapability))
	for _, tc := range []struct {
		action, want string
	}{
		{"accept", "Catalog access approved; continuing."},
		{"decline", "Catalog access was declined; nothing was changed."},
		{"cancel", "Cancelled; nothing was changed."},
	} {
		first, err := c.CallTool(ctx, "catalog.continue", nil)
		if err != nil {
			t.Fatal(err)
		}
		if first.ResultType != "input_required" || first.RequestState == "" || first.InputRequests["approval"].Method != "elicitation/create" {
			t.Fatalf("first round: %+v", first.Result)
		}
		final, err := c.Retry(ctx, first, map[string]exactjson.Value{"approval": exactjson.Object(exactjson.Field("action", exactjson.String(tc.action)))})
		if err != nil {
			t.Fatal(err)
		}
		if final.ResultType != "complete" || final.Text() != tc.want {
			t.Fatalf("%s: got %q (%s)", tc.action, final.Text(), final.ResultType)
		}
	}
	// An accepted answer with fields the (empty) form does not have is refused.
	first, err := c.CallTool(ctx, "catalog.continue", nil)
	if err != nil {
		t.Fatal(err)
	}
	final, err := c.Retry(ctx, first, map[string]exactjson.Value{"approval": exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(exactjson.Field("scope", exactjson.String("all")))))})
	if err != nil {
		t.Fatal(err)
	}
	if !final.IsError || final.Text() != "The approval answer could not be read; start again." {
		t.Fatalf("unexpected content: %q (isError %v)", final.Text(), final.IsError)
	}
	// Without any elicitation capability the conditional request is refused with -32021.
	if _, err := testClient(d, "alice").CallTool(ctx, "catalog.continue", nil); err == nil || !strings.Contains(err.Error(), "-32021") {
		t.Fatalf("missing capability: got %v", err)
	}
}

func TestRefundExactDecimal(t *testing.T) {
	d := newTestDemo(t)
	ctx := context.Background()
	c := testClient(d, "alice", weft.Form(weft.RequiredCapability))
	first, err := c.CallTool(ctx, "refund.request", map[string]any{"orderId": "A-1"})
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
	again, err := c.Retry(ctx, first, amount("500.01"))
	if err != nil || again.ResultType != "input_required" {
		t.Fatalf("500.01: %v %+v", err, again)
	}
	// Three decimals: asked again.
	again, err = c.Retry(ctx, again, amount("3.505"))
	if err != nil || again.ResultType != "input_required" {
		t.Fatalf("3.505: %v", err)
	}
	final, err := c.Retry(ctx, again, amount("3.50"))
	if err != nil {
		t.Fatal(err)
	}
	if final.Text() != "Refund of 3.50 for order A-1 requested." {
		t.Fatalf("got %q", final.Text())
	}
}

// TestCartHandles is the durable application-handle flow: handles bound to
// the principal, rotated on every retry, crossed and replayed handles
// rejected with one fixed error without consuming the rightful owner's.
func TestCartHandles(t *testing.T) {
	d := newTestDemo(t)
	ctx := context.Background()
	alice := testClient(d, "alice", weft.Form(weft.RequiredCapability))
	bob := testClient(d, "bob", weft.Form(weft.RequiredCapability))
	a1, err := alice.CallTool(ctx, "cart.checkout", map[string]any{"items": []string{"tea"}})
	if err != nil {
		t.Fatal(err)
	}
	b1, err := bob.CallTool(ctx, "cart.checkout", map[string]any{"items": []string{"coffee"}})
	if err != nil {
		t.Fatal(err)
	}
	confirm := map[string]exactjson.Value{"confirm": exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(exactjson.Field("confirm", exactjson.Bool(true)))))}
	// Bob presents Alice's handle: one fixed error, and Alice's handle survives.
	crossed := *b1
	crossed.RequestState = a1.RequestState
	res, err := bob.Retry(ctx, &crossed, confirm)
	if err != nil || !res.IsError || res.Text() != "This checkout is invalid or has expired; start again." {
		t.Fatalf("crossed handle: %v %+v", err, res)
	}
	a2, err := alice.Retry(ctx, a1, confirm)
	if err != nil || a2.ResultType != "input_required" || a2.RequestState == a1.RequestState {
		t.Fatalf("alice after the crossing: %v %+v", err, a2)
	}
	// Replaying Alice's first handle fails the same way.
	res, err = alice.Retry(ctx, a1, confirm)
	if err != nil || !res.IsError || res.Text() != "This checkout is invalid or has expired; start again." {
		t.Fatalf("replayed handle: %v %+v", err, res)
	}
	b2, err := bob.Retry(ctx, b1, confirm)
	if err != nil || b2.ResultType != "input_required" {
		t.Fatalf("bob: %v %+v", err, b2)
	}
	ship := map[string]exactjson.Value{"shipping": exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(exactjson.Field("speed", exactjson.String("express")))))}
	a3, err := alice.Retry(ctx, a2, ship)
	if err != nil || a3.Text() != "Ordered tea with express shipping." {
		t.Fatalf("alice final: %v %q", err, a3.Text())
	}
	b3, err := bob.Retry(ctx, b2, ship)
	if err != nil || b3.Text() != "Ordered coffee with express shipping." {
		t.Fatalf("bob final: %v %q", err, b3.Text())
	}
}

// TestAccountLink is the URL-elicitation flow.
func TestAccountLink(t *testing.T) {
	d := newTestDemo(t)
	ctx := context.Background()
	c := testClient(d, "alice", weft.URL(weft.RequiredCapability))
	first, err := c.CallTool(ctx, "account.link", nil)
	if err != nil {
		t.Fatal(err)
	}
	ir := first.InputRequests["link"]
	u, _ := ir.Params.Get("url")
	link, _ := u.AsString()
	if !strings.HasPrefix(link, "http://127.0.0.1:8080/link/") {
		t.Fatalf("link %q", link)
	}
	accept := map[string]exactjson.Value{"link": exactjson.Object(exactjson.Field("action", exactjson.String("accept")))}
	// Not completed in the browser yet: asked again.
	again, err := c.Retry(ctx, first, accept)
	if err != nil || again.ResultType != "input_required" {
		t.Fatalf("before the browser step: %v %+v", err, again)
	}
	// The user completes the page.
	h := strings.TrimPrefix(link, "http://127.0.0.1:8080/link/")
	if !d.stores.links.complete(h, d.stores.links.token(h)) {
		t.Fatal("the page of an issued link did not complete")
	}
	final, err := c.Retry(ctx, again, accept)
	if err != nil || final.Text() != "Account linked." {
		t.Fatalf("after the browser step: %v %q", err, final.Text())
	}
	// Form-only clients cannot be sent a URL request.
	if _, err := testClient(d, "alice", weft.Form(weft.RequiredCapability)).CallTool(ctx, "account.link", nil); err == nil || !strings.Contains(err.Error(), "-32021") {
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
	tasks := task.NewMemoryStore()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, err = New(context.Background(), logger, seal.NewEphemeralManager(), Config{BaseURL: "http://127.0.0.1:8080",
		Fleet: &Fleet{Tasks: tasks, Events: tasks, DB: db, Dialect: handle.SQLite}})
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("New with an unusable handle database: %v", err)
	}
}
