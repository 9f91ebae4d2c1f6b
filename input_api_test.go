package weft_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/wefttest"
)

// checkout is framework state with what canonical JSON respells: integers
// of 100 and more (1E+2), exact decimals, nesting.
type checkout struct {
	Round  int              `json:"round"`
	Cents  int64            `json:"cents"`
	Total  exactjson.Number `json:"total"`
	Items  []string         `json:"items"`
	Custom struct {
		Code uint64 `json:"code"`
	} `json:"custom"`
}

type confirmation struct {
	Confirm bool   `json:"confirm" jsonschema:"place the order"`
	Note    string `json:"note,omitempty"`
}

// TestTypedRoundTrip: a typed form and typed framework state over real
// rounds, sealed and verified by the server.
func TestTypedRoundTrip(t *testing.T) {
	s, err := weft.NewServer(weft.Implementation{Name: "shop", Version: "1"}, &weft.Options{Protector: seal.NewEphemeralManager(nil)})
	if err != nil {
		t.Fatal(err)
	}
	confirm := weft.FormOf[confirmation](weft.ConditionalCapability, elicit.StringField("note").MaxLength(10))
	var seen []checkout
	err = weft.AddTool(s, weft.Tool{Name: "checkout", Description: "Checks out after confirmation.",
		Inputs: []weft.Input{confirm}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			st, resumed, err := weft.FrameworkState[checkout](req)
			if err != nil {
				return nil, err
			}
			if !resumed {
				st = checkout{Cents: 9007199254740993, Total: mustNumber(t, "1.50"), Items: []string{"tea"}}
				st.Custom.Code = 18446744073709551615
			}
			seen = append(seen, st)
			answer, outcome, present, err := confirm.Answer(req, "confirm")
			switch {
			case !present || err != nil:
				st.Round += 100
				return nil, weft.AskInput("confirm", confirm.Ask("Place the order?")).WithFrameworkState(st)
			case outcome != weft.Accepted || !answer.Confirm:
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("cancelled")}}, nil
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(fmt.Sprintf("ordered %v note=%q", st.Items, answer.Note))}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// The first answer breaks the form (note too long): asked again, the
	// state advancing round by round.
	answers := []map[string]any{{"confirm": true, "note": "far too long a note"}, {"confirm": true, "note": "ok"}}
	i := 0
	c := wefttest.NewClient(t, s, &wefttest.Options{Client: client.Options{Handlers: client.Handlers{
		Elicit: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
			a := answers[i]
			i++
			return wefttest.AcceptForm(a)(ctx, params)
		}}}})
	final, err := c.CallTool(context.Background(), "checkout", nil)
	if err != nil {
		t.Fatal(err)
	}
	if i != 2 || final.Text() != `ordered [tea] note="ok"` {
		t.Fatalf("%d answers, final %q", i, final.Text())
	}
	if len(seen) != 3 || seen[1].Round != 100 || seen[2].Round != 200 {
		t.Fatalf("rounds seen in state: %+v", seen)
	}
	for _, st := range seen[1:] {
		// 1.50 comes back canonical (1.5): the same number, not the same spelling.
		if st.Cents != 9007199254740993 || st.Custom.Code != 18446744073709551615 || st.Total.Cmp(mustNumber(t, "1.5")) != 0 || len(st.Items) != 1 {
			t.Errorf("state after the round trip: %+v", st)
		}
	}
}

// TestFrameworkStateOfAnotherType: state that does not decode into the
// handler's type is an error, not a silent zero value.
func TestFrameworkStateOfAnotherType(t *testing.T) {
	s, err := weft.NewServer(weft.Implementation{Name: "s", Version: "1"}, &weft.Options{Protector: seal.NewEphemeralManager(nil)})
	if err != nil {
		t.Fatal(err)
	}
	form := weft.FormOf[struct{}](weft.ConditionalCapability)
	var got error
	err = weft.AddTool(s, weft.Tool{Name: "t", Description: "d", Inputs: []weft.Input{form}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			_, resumed, err := weft.FrameworkState[struct {
				N int `json:"n"`
			}](req)
			if !resumed {
				return nil, weft.AskInput("ok", form.Ask("OK?")).WithFrameworkState(map[string]string{"n": "not a number"})
			}
			got = err
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("done")}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	c := wefttest.NewClient(t, s, &wefttest.Options{Client: client.Options{Handlers: client.Handlers{Elicit: wefttest.AcceptForm(nil)}}})
	if _, err := c.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	if got == nil || !strings.Contains(got.Error(), "framework state") {
		t.Fatalf("decode error = %v", got)
	}
}

func mustNumber(t testing.TB, s string) exactjson.Number {
	t.Helper()
	n, err := exactjson.ParseNumber(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A typed form: the requested schema comes from a Go struct (refined with
// package elicit's fields), and the accepted answer is validated against it
// and decoded into the struct, decimals exact.
func ExampleFormOf() {
	type refund struct {
		Amount exactjson.Number `json:"amount" jsonschema:"the amount to refund"`
		Reason string           `json:"reason,omitempty"`
	}
	form := weft.FormOf[refund](weft.ConditionalCapability,
		elicit.NumberField("amount").MinInt(0).MaxDecimal("500.00"),
		elicit.EnumField("reason", "damaged", "late").Title("Reason"))
	fmt.Println(form.Schema().Value())

	s, err := weft.NewServer(weft.Implementation{Name: "refunds", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	err = weft.AddTool(s, weft.Tool{Name: "refund", Description: "Refunds an amount the user enters.", Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			r, outcome, present, err := form.Answer(req, "refund")
			switch {
			case !present:
				return nil, weft.AskInput("refund", form.Ask("How much should we refund?"))
			case err != nil: // the problems are safe to show the user
				return nil, weft.AskInput("refund", form.Ask(err.Error()))
			case outcome != weft.Accepted:
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("No refund.")}}, nil
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("Refunding " + r.Amount.String() + " (" + r.Reason + ").")}}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	answer, _ := exactjson.ParseString(`{"amount":12.50,"reason":"late"}`, exactjson.Limits{})
	c := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{Handlers: client.Handlers{
		Elicit: func(ctx context.Context, form exactjson.Value) (exactjson.Value, error) {
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", answer)), nil
		}}})

	final, err := c.CallTool(context.Background(), "refund", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.Text())
	// Output:
	// {"type":"object","properties":{"amount":{"type":"number","minimum":0,"maximum":500.00,"description":"the amount to refund"},"reason":{"type":"string","title":"Reason","enum":["damaged","late"]}},"required":["amount"]}
	// Refunding 12.50 (late).
}

// Framework state as a Go value: sealed by the server when the handler asks
// for input, verified and decoded into the same type on the retry.
func ExampleFrameworkState() {
	key, err := seal.GenerateKey("example")
	if err != nil {
		log.Fatal(err)
	}
	ring, err := seal.NewKeyring(key)
	if err != nil {
		log.Fatal(err)
	}
	s, err := weft.NewServer(weft.Implementation{Name: "wizard", Version: "1.0.0"}, &weft.Options{Protector: seal.NewManager(ring, nil)})
	if err != nil {
		log.Fatal(err)
	}
	type step struct {
		Done  []string `json:"done"`
		Count int      `json:"count"`
	}
	next := weft.FormOf[struct{}](weft.ConditionalCapability)
	err = weft.AddTool(s, weft.Tool{Name: "wizard", Description: "Three steps.", Inputs: []weft.Input{next}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			st, _, err := weft.FrameworkState[step](req)
			if err != nil {
				return nil, err
			}
			if len(st.Done) == 3 {
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(fmt.Sprint(st.Done, st.Count))}}, nil
			}
			st.Done = append(st.Done, fmt.Sprintf("step %d", len(st.Done)+1))
			st.Count += 100
			return nil, weft.AskInput(fmt.Sprint("next", len(st.Done)), next.Ask("Continue?")).WithFrameworkState(st)
		})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	asked := 0
	c := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{Handlers: client.Handlers{
		Elicit: func(ctx context.Context, form exactjson.Value) (exactjson.Value, error) {
			asked++
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", exactjson.Object())), nil
		}}})

	final, err := c.CallTool(context.Background(), "wizard", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(asked, "answers:", final.Text())
	// Output:
	// 3 answers: [step 1 step 2 step 3] 300
}

// An untyped form: the requested schema is built at call time (here, from
// the caller's own orders), and the answer is read as JSON, checked only
// for the protocol shape: validate it before acting on it.
func ExampleForm() {
	s, err := weft.NewServer(weft.Implementation{Name: "orders", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	choose := weft.Form(weft.ConditionalCapability)
	err = weft.AddTool(s, weft.Tool{Name: "cancel_order", Description: "Cancels one of the caller's orders.", Inputs: []weft.Input{choose}},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			orders := []string{"A-1", "A-7"} // looked up for this caller
			schema, err := elicit.BuildSchema(elicit.EnumField("order", orders...).Title("Order").Required())
			if err != nil {
				return nil, err
			}
			content, outcome, present, err := choose.Answer(req, "order")
			if !present || err != nil || schema.Validate(content) != nil {
				return nil, weft.AskInput("order", choose.Ask("Which order should be cancelled?", schema.Value()))
			}
			if outcome != weft.Accepted {
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("Nothing cancelled.")}}, nil
			}
			order, _ := content.Get("order")
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("Cancelled " + order.String() + ".")}}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	c := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{Handlers: client.Handlers{
		Elicit: func(ctx context.Context, form exactjson.Value) (exactjson.Value, error) {
			schema, _ := form.Get("requestedSchema")
			fmt.Println(schema)
			answer, _ := exactjson.ParseString(`{"order":"A-7"}`, exactjson.Limits{})
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", answer)), nil
		}}})

	final, err := c.CallTool(context.Background(), "cancel_order", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.Text())
	// Output:
	// {"type":"object","properties":{"order":{"type":"string","title":"Order","enum":["A-1","A-7"]}},"required":["order"]}
	// Cancelled "A-7".
}

// URL-mode elicitation sends the user to a page the server owns, with an
// opaque handle in the path; the server checks the URL against
// Options.URLElicitation before anything reaches the client.
func ExampleURL() {
	s, err := weft.NewServer(weft.Implementation{Name: "accounts", Version: "1.0.0"},
		&weft.Options{URLElicitation: elicit.URLPolicy{AllowedOrigins: []string{"https://accounts.example.com"}}})
	if err != nil {
		log.Fatal(err)
	}
	link := weft.URL(weft.ConditionalCapability)
	err = weft.AddTool(s, weft.Tool{Name: "link", Description: "Links an account on the server's page.", Inputs: []weft.Input{link}},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			outcome, present, err := link.Answer(req, "link")
			if !present || err != nil {
				// In a real server: elicit.NewHandle, stored bound to the user.
				page, err := elicit.HandleURL("https://accounts.example.com/link", "pZ8qW3vN0xK5rT2yB7mC4hJ9gF6dS1aL0eU3iO8nQ5w")
				if err != nil {
					return nil, err
				}
				return nil, weft.AskInput("link", link.Ask("Open this page to link your account.", page))
			}
			// Accepted means the user agreed to open the page: check the
			// handle's record before completing.
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("link: " + outcome.String())}}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	c := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{Handlers: client.Handlers{
		Elicit: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
			fmt.Println(params)
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept"))), nil
		}}})

	final, err := c.CallTool(context.Background(), "link", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.Text())
	// Output:
	// {"mode":"url","message":"Open this page to link your account.","url":"https://accounts.example.com/link/pZ8qW3vN0xK5rT2yB7mC4hJ9gF6dS1aL0eU3iO8nQ5w"}
	// link: accept
}

// Roots are asked for only when the client offers them: a conditional
// declaration, and ClientSupports before asking.
func ExampleRoots() {
	s, err := weft.NewServer(weft.Implementation{Name: "workspace", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	roots := weft.Roots(weft.ConditionalCapability)
	err = weft.AddTool(s, weft.Tool{Name: "where", Description: "Names the user's workspace.", Inputs: []weft.Input{roots}},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			rs, present, err := roots.Answer(req, "roots")
			switch {
			case err != nil:
				return nil, err
			case !present && req.ClientSupports(roots):
				return nil, weft.AskInput("roots", roots.Ask())
			case len(rs) == 0:
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("no workspace")}}, nil
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(rs[0].URI)}}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	listRoots := func(ctx context.Context) (exactjson.Value, error) {
		return exactjson.ParseString(`{"roots":[{"uri":"file:///home/ada/src"}]}`, exactjson.Limits{})
	}
	for _, handlers := range []client.Handlers{{Roots: listRoots}, {}} {
		c := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{Handlers: handlers})
		final, err := c.CallTool(context.Background(), "where", nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(final.Text())
	}
	// Output:
	// file:///home/ada/src
	// no workspace
}

// TestMiddlewareAsksForInput: a middleware returns input_required the way
// a handler does, as its error, and sees the handler's the same way.
func TestMiddlewareAsksForInput(t *testing.T) {
	confirm := weft.Form(weft.ConditionalCapability)
	empty, _ := exactjson.ParseString(`{"type":"object","properties":{}}`, exactjson.Limits{})
	var seen []string
	confirmDeletes := func(next weft.Handler) weft.Handler {
		return func(ctx context.Context, req *weft.Request) (weft.Result, error) {
			if req.Method != "tools/call" || req.Name != "delete" {
				res, err := next(ctx, req)
				var ir *weft.InputRequired
				if errors.As(err, &ir) {
					seen = append(seen, req.Name+" asked "+strings.Join(ir.Keys(), ","))
				}
				return res, err
			}
			_, action, answered, err := confirm.Answer(req, "sure")
			switch {
			case err != nil:
				return nil, err
			case !answered:
				return nil, weft.AskInput("sure", confirm.Ask("Delete it?", empty))
			case action != weft.Accepted:
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("kept")}}, nil
			}
			return next(ctx, req)
		}
	}
	s, err := weft.NewServer(weft.Implementation{Name: "s", Version: "1"}, &weft.Options{Middleware: []weft.Middleware{confirmDeletes}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"delete", "ask"} {
		err := s.AddTool(weft.Tool{Name: name, Description: "d", Inputs: []weft.Input{confirm}},
			func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
				if name == "ask" {
					if _, _, answered, _ := confirm.Answer(req, "again"); !answered {
						return nil, weft.AskInput("again", confirm.Ask("Again?", empty))
					}
				}
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(name + " done")}}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		tool   string
		answer wefttest.ElicitFunc
		want   string
	}{
		{"delete", wefttest.AcceptForm(nil), "delete done"},
		{"delete", wefttest.Decline(), "kept"},
		{"ask", wefttest.AcceptForm(nil), "ask done"},
	} {
		c := wefttest.NewClient(t, s, &wefttest.Options{Client: client.Options{Handlers: client.Handlers{Elicit: tt.answer}}})
		res, err := c.CallTool(context.Background(), tt.tool, nil)
		if err != nil || res.Text() != tt.want {
			t.Errorf("%s: %v, %v; want %q", tt.tool, res, err, tt.want)
		}
	}
	if strings.Join(seen, ";") != "ask asked again" {
		t.Errorf("the middleware saw %q", seen)
	}
}
