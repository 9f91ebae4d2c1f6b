package demo

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/handle"
	_ "modernc.org/sqlite" // the embedded database driver
)

// demoStores are the demo's embedded stores in the data directory.
type demoStores struct {
	db      *sql.DB
	handles *handle.Store
	links   *linkRegistry // URL-elicitation link pages issued, and whether completed (demo_link.go)
	baseURL string        // where the link page is served, e.g. http://127.0.0.1:8080
	// allowedHosts and allowedOrigins are the demo's own beyond loopback
	// (--allowed-hosts, --allowed-origins): the link page accepts them too.
	allowedHosts, allowedOrigins []string
}

// openDemoStores opens the demo's SQLite handle database in dataDir.
func openDemoStores(ctx context.Context, dataDir, baseURL string) (*demoStores, error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "handles.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, fmt.Errorf("open handle database: %w", err)
	}
	st, err := newDemoStores(ctx, db, handle.SQLite, baseURL)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return st, nil
}

// newDemoStores keeps handles in db (PostgreSQL for a fleet, so that every
// instance redeems the same handles); it owns db from then on.
func newDemoStores(ctx context.Context, db *sql.DB, dialect handle.Dialect, baseURL string) (*demoStores, error) {
	hs, err := handle.New(ctx, db, dialect, nil)
	if err != nil {
		return nil, err
	}
	links, err := newLinkRegistry()
	if err != nil {
		return nil, err
	}
	return &demoStores{db: db, handles: hs, links: links, baseURL: baseURL}, nil
}

func binding(req *weft.Request, op string) handle.Binding {
	return handle.Binding{Principal: req.Identity.Principal, Partition: req.Identity.Partition, Operation: op}
}

// addCart registers cart.checkout: application-protected state carrying a
// rotating durable handle; every retry redeems the handle and gets a new one.
func addCart(s *weft.Server, st *demoStores) error {
	type confirmForm struct {
		Confirm bool `json:"confirm"`
	}
	type shippingForm struct {
		Speed string `json:"speed"`
	}
	confirm := weft.FormOf[confirmForm](weft.ConditionalCapability, elicit.BooleanField("confirm").Title("Confirm the order"))
	shipping := weft.FormOf[shippingForm](weft.ConditionalCapability, elicit.EnumField("speed", "standard", "express").Title("Shipping"))
	type cart struct {
		Items []string `json:"items"`
		Step  string   `json:"step"`
	}
	type args struct {
		Items []string `json:"items" jsonschema:"the items to buy"`
	}
	return weft.AddTool(s, weft.Tool{Name: "cart.checkout", Description: "Checks out a cart in two confirmation rounds; the cart lives server-side behind a rotating handle.",
		Inputs: []weft.Input{confirm, shipping}, StateMode: weft.StateApplication},
		func(ctx context.Context, req *weft.Request, in args) (*weft.CallToolResult, error) {
			b := binding(req, "cart.checkout")
			// ask issues a handle for the cart's next step and asks for it.
			ask := func(c cart, r weft.InputRequest) error {
				payload, _ := json.Marshal(c)
				h, err := st.handles.Issue(ctx, b, payload, 15*time.Minute)
				if err != nil {
					return err
				}
				return weft.AskInput(c.Step, r).WithApplicationState(h)
			}
			h, retry := req.ApplicationState()
			if !retry {
				return nil, ask(cart{Items: in.Items, Step: "confirm"}, confirm.Ask("Check out these items?"))
			}
			var c cart
			switch payload, err := st.handles.Consume(ctx, h, b); {
			case errors.Is(err, handle.ErrInvalid):
				return nil, &weft.ToolError{Message: "This checkout is invalid or has expired; start again."}
			case err != nil:
				return nil, err
			default:
				if err := json.Unmarshal(payload, &c); err != nil {
					return nil, err
				}
			}
			switch c.Step {
			case "confirm":
				answer, outcome, present, err := confirm.Answer(req, "confirm")
				switch {
				case !present || err != nil:
					return nil, ask(c, confirm.Ask("Check out these items?"))
				case outcome != weft.Accepted:
					return text("Checkout cancelled; nothing was ordered."), nil
				case !answer.Confirm:
					return text("Checkout not confirmed; nothing was ordered."), nil
				}
				c.Step = "shipping"
				return nil, ask(c, shipping.Ask("How should we ship?"))
			case "shipping":
				answer, outcome, present, err := shipping.Answer(req, "shipping")
				switch {
				case !present || err != nil:
					return nil, ask(c, shipping.Ask("How should we ship?"))
				case outcome != weft.Accepted:
					return text("Checkout cancelled; nothing was ordered."), nil
				}
				return text(fmt.Sprintf("Ordered %s with %s shipping.", strings.Join(c.Items, ", "), answer.Speed)), nil
			}
			return nil, &weft.ToolError{Message: "This checkout is in an unknown state; start again."}
		})
}

func text(s string) *weft.CallToolResult {
	return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(s)}}
}

// addAccountLink registers account.link: URL-mode elicitation to a page the
// server owns, with an opaque single-purpose handle in the path.
func addAccountLink(s *weft.Server, st *demoStores) error {
	link := weft.URL(weft.ConditionalCapability)
	type linkState struct {
		Handle string `json:"handle"`
	}
	return weft.AddTool(s, weft.Tool{Name: "account.link", Description: "Links an external account: the user opens a page, then retries.",
		Inputs: []weft.Input{link}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			b := binding(req, "account.link")
			ask := func(h string) error {
				page, err := elicit.HandleURL(st.baseURL+"/link", h)
				if err != nil {
					return err
				}
				return weft.AskInput("link", link.Ask("Open this page to link your account, then come back.", page)).
					WithFrameworkState(linkState{Handle: h})
			}
			state, resumed, err := weft.FrameworkState[linkState](req)
			switch {
			case err != nil:
				return nil, err
			case !resumed:
				h, err := st.handles.Issue(ctx, b, nil, linkLifetime)
				if err != nil {
					return nil, err
				}
				if err := st.links.issue(h); err != nil {
					return nil, &weft.ToolError{Message: "Too many account links are pending; try again later."}
				}
				return nil, ask(h)
			}
			if outcome, present, err := link.Answer(req, "link"); present && (err != nil || outcome != weft.Accepted) {
				return text("Account linking was cancelled."), nil
			}
			if !st.links.done(state.Handle) {
				return nil, ask(state.Handle) // not finished in the browser yet: ask again
			}
			if _, err := st.handles.Consume(ctx, state.Handle, b); err != nil {
				return nil, &weft.ToolError{Message: "This link is invalid or has expired; start again."}
			}
			st.links.remove(state.Handle)
			return text("Account linked."), nil
		})
}

// addReport registers report.generate: a durable task with progress that
// asks for input through tasks/update.
func addReport(s *weft.Server) error {
	type chartsForm struct {
		Charts bool `json:"charts"`
	}
	charts := weft.FormOf[chartsForm](weft.ConditionalCapability, elicit.BooleanField("charts").Title("Charts"))
	type args struct {
		Topic string `json:"topic"`
	}
	return weft.AddTool(s, weft.Tool{Name: "report.generate", Description: "Generates a report as a durable task (progress, then a question through tasks/update).",
		Task: weft.TaskOptional, Inputs: []weft.Input{charts}},
		func(ctx context.Context, req *weft.Request, in args) (*weft.CallToolResult, error) {
			if req.Task() == nil && req.TasksSupported() {
				return nil, weft.RunAsTask(nil)
			}
			answer, outcome, present, err := charts.Answer(req, "charts")
			if !present || err != nil {
				for i := 1; i <= 4; i++ {
					_ = req.Progress(float64(i*25), 100, "collecting data")
					select {
					case <-time.After(250 * time.Millisecond):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				if req.Task() == nil {
					// Served synchronously (no tasks extension): no charts.
					return text("Report on " + in.Topic + " (without charts)."), nil
				}
				return nil, weft.AskInput("charts", charts.Ask("Include charts in the report?"))
			}
			if outcome == weft.Accepted && answer.Charts {
				return text("Report on " + in.Topic + " with charts."), nil
			}
			return text("Report on " + in.Topic + " without charts."), nil
		})
}

// addHeadline registers text.headline: it asks the client's model for a
// headline (sampling, REQUIRED: a client without it is told so before the
// tool runs) and, in the same round, for the client's roots when the client
// offers them (CONDITIONAL). Nothing needs to survive the round, so it uses
// no request state.
func addHeadline(s *weft.Server) error {
	sampling, roots := weft.Sampling(weft.RequiredCapability), weft.Roots(weft.ConditionalCapability)
	type args struct {
		Text string `json:"text" jsonschema:"the text to find a headline for"`
	}
	return weft.AddTool(s, weft.Tool{Name: "text.headline",
		Description: "Suggests a headline for a text by asking the client's model (sampling); mentions the client's roots when it shares them.",
		Inputs:      []weft.Input{sampling, roots}},
		func(ctx context.Context, req *weft.Request, in args) (*weft.CallToolResult, error) {
			if strings.TrimSpace(in.Text) == "" {
				return nil, &weft.ToolError{Message: "Give a non-empty text."}
			}
			h, answered, err := sampling.Answer(req, "headline")
			if !answered {
				ask := weft.AskInput("headline", sampling.Ask(weft.SamplingRequest{
					SystemPrompt: "You write short, factual headlines. Answer with the headline only.",
					MaxTokens:    40,
					Messages:     []weft.SamplingMessage{{Role: weft.RoleUser, Content: weft.TextContent("Write a headline for:\n\n" + in.Text)}},
				}))
				if req.ClientSupports(roots) {
					ask.Ask("roots", roots.Ask())
				}
				return nil, ask
			}
			if err != nil {
				return nil, &weft.ToolError{Message: "The headline answer could not be read; try again."}
			}
			headline := strings.TrimSpace(h.Text())
			if headline == "" {
				return nil, &weft.ToolError{Message: "The model gave no text; try again."}
			}
			out := fmt.Sprintf("Headline: %s\n(written by %s)", headline, h.Model)
			if rs, _, err := roots.Answer(req, "roots"); err == nil && len(rs) > 0 {
				out += "\nYour workspace: " + rs[0].URI
			}
			return text(out), nil
		})
}
