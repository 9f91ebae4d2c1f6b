package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/apps"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
	sessionpg "github.com/weftmcp/weft/sessionstore/pgstore"
	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/pgstore"
	"github.com/weftmcp/weft/task/sqlitestore"
	"go.opentelemetry.io/otel/metric"
)

// demo is the running demo: the MCP server and what it owns.
type demo struct {
	srv     *weft.Server
	stores  *demoStores
	tasks   task.Store
	lease   time.Duration
	closers []func() error
}

// Close releases the demo's stores.
func (d *demo) Close() error {
	errs := []error{d.tasks.Close(), d.stores.db.Close()}
	for _, c := range d.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// demoConfig says where the demo keeps its state.
type demoConfig struct {
	dataDir   string         // SQLite files (tasks.db, handles.db) when postgres is empty
	baseURL   string         // where the demo's web pages are served
	postgres  string         // PostgreSQL URL: tasks, handles and fleet events
	schema    string         // PostgreSQL schema (tests isolate themselves)
	taskLease time.Duration  // task step lease (0: default)
	admission weft.Admission // nil: anonymous

	// meter records metrics (serve --admin serves them at /metrics); nil: none.
	meter metric.MeterProvider
}

// newDemo builds the demo: every tool shows one capability. State lives in
// SQLite files under dataDir, or in PostgreSQL for a fleet.
func newDemo(ctx context.Context, logger *slog.Logger, protector seal.Protector, cfg demoConfig) (*demo, error) {
	var (
		tasksStore task.Store
		events     task.Bus
		stores     *demoStores
		err        error
		legacy     = &weft.LegacyOptions{} // 2025-11-25 clients on the same endpoint
		closers    []func() error
	)
	if cfg.postgres != "" {
		pg, err := pgstore.Open(ctx, cfg.postgres, pgstore.Options{Schema: cfg.schema, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL task store: %w", err)
		}
		tasksStore, events = pg, pg
		sessions, err := sessionpg.Open(ctx, cfg.postgres, sessionpg.Options{Schema: cfg.schema, Logger: logger})
		if err != nil {
			_ = pg.Close()
			return nil, fmt.Errorf("open PostgreSQL session store: %w", err)
		}
		legacy.Store = sessions
		closers = append(closers, sessions.Close)
		if stores, err = openDemoStoresPostgres(ctx, cfg); err != nil {
			_ = pg.Close()
			_ = sessions.Close()
			return nil, err
		}
	} else {
		if tasksStore, err = sqlitestore.Open(ctx, filepath.Join(cfg.dataDir, "tasks.db"), sqlitestore.Options{}); err != nil {
			return nil, fmt.Errorf("open task store: %w", err)
		}
		if stores, err = openDemoStores(ctx, cfg.dataDir, cfg.baseURL); err != nil {
			_ = tasksStore.Close()
			return nil, err
		}
	}
	s := weft.NewServer(weft.Implementation{Name: "weft-demo", Version: "0.1.0", Title: "Weft demo"}, &weft.Options{
		Logger:         logger,
		Protector:      protector,
		Admission:      cfg.admission,
		Visible:        apps.Visible(nil),
		Events:         events,
		Legacy:         legacy,
		MeterProvider:  cfg.meter,
		URLElicitation: elicit.URLPolicy{Development: true},
		Instructions:   "A demo of Weft: multi-round input with sealed state, exact decimals, URL elicitation, durable handles and tasks, prompts and resources.",
	})
	d := &demo{srv: s, stores: stores, tasks: tasksStore, lease: cfg.taskLease, closers: closers}
	if err := d.register(); err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}

func (d *demo) register() error {
	s := d.srv
	for _, add := range []func() error{
		func() error { return addCart(s, d.stores) },
		func() error { return addAccountLink(s, d.stores) },
		func() error { return addReport(s) },
		func() error { return addCounterApp(s) },
		func() error { return addHeadline(s) },
	} {
		if err := add(); err != nil {
			return err
		}
	}
	form := weft.Form(weft.ConditionalCapability)

	// catalog.continue: the approval flow of the product page. It asks for
	// form approval and carries a framework-protected phase between rounds.
	if err := s.AddTool(weft.Tool{
		Name:        "catalog.continue",
		Description: "Continues a catalog workflow after the user approves catalog access.",
		InputSchema: []byte(`{"type":"object","additionalProperties":false}`),
		Inputs:      []weft.Input{form},
		StateMode:   weft.StateFramework,
	}, func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		state, ok, _ := weft.FrameworkState[exactjson.Value](req)
		if !ok {
			return nil, weft.AskInput("approval", form.Ask("Approve catalog access?",
				exactjson.Object(exactjson.Field("type", exactjson.String("object")),
					exactjson.Field("properties", exactjson.Object())))).
				WithFrameworkState(exactjson.Object(exactjson.Field("phase", exactjson.String("waiting-for-approval"))))
		}
		return continueFrom(state, req.InputResponses())
	}); err != nil {
		return err
	}

	// refund.request: asks for an exact decimal amount and validates it.
	if err := s.AddTool(weft.Tool{
		Name:        "refund.request",
		Description: "Requests a refund for an order; asks the user for the exact amount (at most 500.00).",
		InputSchema: []byte(`{"type":"object","properties":{"orderId":{"type":"string","minLength":1}},"required":["orderId"],"additionalProperties":false}`),
		Inputs:      []weft.Input{form},
		StateMode:   weft.StateFramework,
	}, refundHandler(form)); err != nil {
		return err
	}

	if err := s.AddPrompt(weft.Prompt{
		Name:        "summarize",
		Description: "Summarize a text in a given tone.",
		Arguments:   []weft.PromptArgument{{Name: "text", Required: true}, {Name: "tone", Description: "e.g. formal, friendly"}},
		Complete: func(ctx context.Context, req *weft.Request, c weft.CompletionRequest) (weft.Completion, error) {
			if c.Argument != "tone" {
				return weft.Completion{}, nil
			}
			var out []string
			for _, t := range []string{"formal", "friendly", "concise", "playful"} {
				if len(t) >= len(c.Value) && t[:len(c.Value)] == c.Value {
					out = append(out, t)
				}
			}
			return weft.Completion{Values: out}, nil
		},
	}, func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
		tone := args["tone"]
		if tone == "" {
			tone = "neutral"
		}
		return &weft.GetPromptResult{Messages: []weft.PromptMessage{{Role: weft.RoleUser,
			Content: weft.TextContent(fmt.Sprintf("Summarize the following text in a %s tone:\n\n%s", tone, args["text"]))}}}, nil
	}); err != nil {
		return err
	}
	if err := s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "weft://demo/readme", Name: "readme",
		Description: "What this demo shows.", MimeType: "text/markdown"}, Cache: weft.CachePolicy{TTLMillis: 60_000, Public: true}},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(req.Name, "text/markdown", demoReadme)}}, nil
		}); err != nil {
		return err
	}
	if err := s.AddResourceTemplate(weft.ResourceTemplate{URITemplate: "weft://demo/orders/{id}", Name: "order",
		Description: "An order by id.", MimeType: "application/json"},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			id := req.URIParams()["id"]
			body, err := exactjson.Encode(exactjson.Object(exactjson.Field("id", exactjson.String(id)),
				exactjson.Field("status", exactjson.String("shipped"))), 0)
			if err != nil {
				return nil, err
			}
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(req.Name, "application/json", string(body))}}, nil
		}); err != nil {
		return err
	}
	// Tasks last: the runner starts claiming steps at once, and every tool
	// it may run must be registered by then.
	if err := s.EnableTasks(weft.TaskOptions{Store: d.tasks, Lease: d.lease}); err != nil {
		return err
	}
	return nil
}

const demoReadme = "# Weft demo\n\nTools: catalog.continue (form approval + sealed state), refund.request (exact decimal amounts), " +
	"cart.checkout (two confirmation rounds), account.link (URL elicitation), report.generate (a durable task), " +
	"text.headline (sampling and roots), counter.show (an MCP App).\n"

// continueFrom validates the protected phase, branches on the elicitation
// action and completes. It is the application-owned part of the flow.
func continueFrom(state exactjson.Value, in weft.InputResponses) (*weft.CallToolResult, error) {
	phase, _ := state.Get("phase")
	if p, _ := phase.AsString(); p != "waiting-for-approval" {
		return nil, &weft.ToolError{Message: "The workflow is in an unexpected phase; start again."}
	}
	resp, ok := in.Get("approval")
	if !ok {
		return nil, &weft.ToolError{Message: "No approval was received; start again."}
	}
	action, _ := resp.Get("action")
	switch a, _ := action.AsString(); a {
	case "accept":
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("Catalog access approved; continuing.")}}, nil
	case "decline":
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("Catalog access was declined; nothing was changed.")}}, nil
	default:
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("Cancelled; nothing was changed.")}}, nil
	}
}

func refundHandler(form weft.InputDeclaration) weft.ToolHandler {
	maxAmount, _ := exactjson.ParseNumber("500.00")
	schema := exactjson.Object(
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(exactjson.Field("amount", exactjson.Object(
			exactjson.Field("type", exactjson.String("number")),
			exactjson.Field("title", exactjson.String("Refund amount")),
			exactjson.Field("minimum", exactjson.Int(0)),
			exactjson.Field("maximum", exactjson.NumberValue(maxAmount)))))),
		exactjson.Field("required", exactjson.Array(exactjson.String("amount"))))
	ask := func(order, message string) error {
		return weft.AskInput("amount", form.Ask(message, schema)).
			WithFrameworkState(exactjson.Object(exactjson.Field("order", exactjson.String(order))))
	}
	return func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		ov, _ := req.Arguments().Get("orderId")
		order, _ := ov.AsString()
		state, ok, _ := weft.FrameworkState[exactjson.Value](req)
		if !ok {
			return nil, ask(order, fmt.Sprintf("How much should be refunded for order %s?", order))
		}
		if so, _ := state.Get("order"); !exactjson.Equal(so, exactjson.String(order)) {
			return nil, &weft.ToolError{Message: "The refund state belongs to another order."}
		}
		resp, ok := req.InputResponses().Get("amount")
		if !ok {
			return nil, ask(order, "Please enter the refund amount.")
		}
		if a, _ := resp.Get("action"); !exactjsonIs(a, "accept") {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("Refund cancelled.")}}, nil
		}
		content, _ := resp.Get("content")
		av, _ := content.Get("amount")
		amount, isNum := av.AsNumber()
		zero, _ := exactjson.ParseNumber("0")
		if !isNum || amount.Cmp(zero) <= 0 || amount.Cmp(maxAmount) > 0 {
			return nil, ask(order, "The amount must be a number greater than 0 and at most 500.00. Please enter it again.")
		}
		if _, scale := amount.Decimal(); scale > 2 {
			return nil, ask(order, "The amount may have at most two decimal places. Please enter it again.")
		}
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(fmt.Sprintf("Refund of %s for order %s requested.", amount.String(), order))}}, nil
	}
}

func exactjsonIs(v exactjson.Value, s string) bool { x, ok := v.AsString(); return ok && x == s }
