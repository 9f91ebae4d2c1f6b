// Package demo is the Weft demo server: one tool per capability (multi-round
// input with sealed state, exact decimals, URL elicitation, durable handles
// and tasks, prompts and resources, an app). cmd/weft-demo runs it on its
// embedded defaults (SQLite files in a data directory); `weft serve` runs it
// with the operator's options (PostgreSQL for a fleet, authorization,
// metrics), handing it stores this package does not link.
package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/apps"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/handle"
	"github.com/weftmcp/weft/internal/serving"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/sqlitestore"
	"go.opentelemetry.io/otel/metric"
)

// Demo is the running demo: the MCP server and what it owns.
type Demo struct {
	srv     *weft.Server
	stores  *demoStores
	tasks   task.Store
	closers []func() error
}

// Server is the demo's MCP server.
func (d *Demo) Server() *weft.Server { return d.srv }

// Handler serves the demo over HTTP: the MCP endpoint at /mcp, the health
// probes (serving.Mux) and the URL-elicitation link page at /link/.
func (d *Demo) Handler() *http.ServeMux {
	mux := serving.Mux(d.srv)
	mux.HandleFunc("/link/", d.stores.linkPage)
	return mux
}

// Close releases the demo's stores.
func (d *Demo) Close() error {
	errs := []error{d.tasks.Close(), d.stores.db.Close()}
	for _, c := range d.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// Config says where the demo keeps its state and how it is reached.
type Config struct {
	// DataDir holds the SQLite files (tasks.db, handles.db) when Fleet is
	// nil.
	DataDir string
	// BaseURL is where the demo's web pages are served, e.g.
	// http://127.0.0.1:8080.
	BaseURL string
	// Fleet, when set, holds the shared stores of a fleet (`weft serve
	// --postgres`) instead of the SQLite files.
	Fleet *Fleet
	// TaskLease is the lease of a running task step (0: the default).
	TaskLease time.Duration
	// Admission admits requests (nil: anonymous).
	Admission weft.Admission
	// AllowedHosts and AllowedOrigins extend the loopback defaults
	// (weft.Options.AllowedHosts, AllowedOrigins).
	AllowedHosts, AllowedOrigins []string
	// Meter records metrics; nil: none.
	Meter metric.MeterProvider
	// Eras are the protocol eras served (weft serve --eras): "both" (or
	// empty), "2026" or "2025".
	Eras string
}

// Fleet is the state a fleet of demo instances shares: tasks and their
// events, 2025-era sessions and handles. Close releases what it owns
// beyond Tasks and DB (the demo closes those).
type Fleet struct {
	Tasks    task.Store
	Events   task.Bus
	Sessions sessionstore.Store
	// DB holds the handles (handle.New with Dialect).
	DB      *sql.DB
	Dialect handle.Dialect
	Close   func() error
}

// New builds the demo. State lives in SQLite files under cfg.DataDir, or
// in cfg.Fleet.
func New(ctx context.Context, logger *slog.Logger, protector seal.Protector, cfg Config) (*Demo, error) {
	var (
		tasksStore task.Store
		events     task.Bus
		stores     *demoStores
		err        error
		// 2025-era clients with sessions: in this process (the demo is
		// one instance), or the fleet's store.
		legacy  = weft.LegacyOptions{InMemorySessions: true, Disabled: cfg.Eras == "2026", Only: cfg.Eras == "2025"}
		closers []func() error
	)
	if f := cfg.Fleet; f != nil {
		tasksStore, events = f.Tasks, f.Events
		legacy.Store, legacy.InMemorySessions = f.Sessions, false
		if f.Close != nil {
			closers = append(closers, f.Close)
		}
		if stores, err = newDemoStores(ctx, f.DB, f.Dialect, cfg.BaseURL); err != nil {
			// The demo owns the fleet's stores from New on: release them.
			errs := []error{err, tasksStore.Close(), f.DB.Close()}
			for _, c := range closers {
				errs = append(errs, c())
			}
			return nil, errors.Join(errs...)
		}
	} else {
		if tasksStore, err = sqlitestore.Open(ctx, filepath.Join(cfg.DataDir, "tasks.db"), nil); err != nil {
			return nil, fmt.Errorf("open task store: %w", err)
		}
		if stores, err = openDemoStores(ctx, cfg.DataDir, cfg.BaseURL); err != nil {
			_ = tasksStore.Close()
			return nil, err
		}
	}
	s, err := weft.NewServer(weft.Implementation{Name: "weft-demo", Version: "0.1.0", Title: "Weft demo"}, &weft.Options{
		Logger:         logger,
		Protector:      protector,
		Admission:      cfg.Admission,
		AllowedHosts:   cfg.AllowedHosts,
		AllowedOrigins: cfg.AllowedOrigins,
		Visible:        apps.Visible(nil),
		Events:         events,
		Legacy:         legacy,
		MeterProvider:  cfg.Meter,
		URLElicitation: elicit.URLPolicy{Development: true},
		Instructions:   "A demo of Weft: multi-round input with sealed state, exact decimals, URL elicitation, durable handles and tasks, prompts and resources.",
		// The runner starts at once; a step of a tool not registered yet
		// waits for it (it is not failed).
		Tasks: &weft.TaskOptions{Store: tasksStore, Lease: cfg.TaskLease, WorkerID: fmt.Sprintf("weft-%s-%d", hostname(), os.Getpid())},
	})
	if err != nil {
		_ = (&Demo{stores: stores, tasks: tasksStore, closers: closers}).Close()
		return nil, err
	}
	stores.allowedHosts, stores.allowedOrigins = cfg.AllowedHosts, cfg.AllowedOrigins
	d := &Demo{srv: s, stores: stores, tasks: tasksStore, closers: closers}
	if err := d.register(); err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Demo) register() error {
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
	// catalog.continue: the approval flow of the product page. It asks for
	// form approval and carries a framework-protected phase between rounds.
	approval := weft.FormOf[struct{}](weft.ConditionalCapability)
	if err := weft.AddTool(s, weft.Tool{Name: "catalog.continue",
		Description: "Continues a catalog workflow after the user approves catalog access.",
		Inputs:      []weft.Input{approval}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			state, resumed, err := weft.FrameworkState[catalogState](req)
			if err != nil {
				return nil, err
			}
			if !resumed {
				return nil, weft.AskInput("approval", approval.Ask("Approve catalog access?")).
					WithFrameworkState(catalogState{Phase: "waiting-for-approval"})
			}
			_, outcome, _, err := approval.Answer(req, "approval")
			return continueFrom(state, outcome, err)
		}); err != nil {
		return err
	}

	// refund.request: asks for an exact decimal amount and validates it.
	if err := addRefund(s); err != nil {
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
	return nil
}

const demoReadme = "# Weft demo\n\nTools: catalog.continue (form approval + sealed state), refund.request (exact decimal amounts), " +
	"cart.checkout (two confirmation rounds), account.link (URL elicitation), report.generate (a durable task), " +
	"text.headline (sampling and roots), counter.show (an MCP App).\n"

// catalogState is the framework-protected state of catalog.continue.
type catalogState struct {
	Phase string `json:"phase"`
}

// continueFrom validates the protected phase, branches on the elicitation
// action and completes. It is the application-owned part of the flow.
func continueFrom(state catalogState, outcome weft.Action, answerErr error) (*weft.CallToolResult, error) {
	switch {
	case answerErr != nil:
		return nil, &weft.ToolError{Message: "The approval answer could not be read; start again."}
	case state.Phase != "waiting-for-approval":
		return nil, &weft.ToolError{Message: "The workflow is in an unexpected phase; start again."}
	case outcome == 0:
		return nil, &weft.ToolError{Message: "No approval was received; start again."}
	case outcome == weft.Accepted:
		return text("Catalog access approved; continuing."), nil
	case outcome == weft.Declined:
		return text("Catalog access was declined; nothing was changed."), nil
	}
	return text("Cancelled; nothing was changed."), nil
}

// refundForm is the form refund.request asks: one exact decimal amount.
type refundForm struct {
	Amount exactjson.Number `json:"amount" jsonschema:"the amount to refund, with at most two decimal places"`
}

// addRefund registers refund.request: a typed form with an exact decimal
// field and typed framework state naming the order.
func addRefund(s *weft.Server) error {
	form := weft.FormOf[refundForm](weft.ConditionalCapability,
		elicit.NumberField("amount").Title("Refund amount").MinInt(0).MaxDecimal("500.00"))
	type args struct {
		OrderID string `json:"orderId" jsonschema:"the order to refund"`
	}
	type refundState struct {
		Order string `json:"order"`
	}
	return weft.AddTool(s, weft.Tool{Name: "refund.request",
		Description: "Requests a refund for an order; asks the user for the exact amount (at most 500.00).",
		InputSchema: []byte(`{"type":"object","properties":{"orderId":{"type":"string","minLength":1}},"required":["orderId"],"additionalProperties":false}`),
		Inputs:      []weft.Input{form}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, in args) (*weft.CallToolResult, error) {
			ask := func(message string) error {
				return weft.AskInput("amount", form.Ask(message)).WithFrameworkState(refundState{Order: in.OrderID})
			}
			state, resumed, err := weft.FrameworkState[refundState](req)
			switch {
			case err != nil:
				return nil, err
			case !resumed:
				return nil, ask(fmt.Sprintf("How much should be refunded for order %s?", in.OrderID))
			case state.Order != in.OrderID:
				return nil, &weft.ToolError{Message: "The refund state belongs to another order."}
			}
			refund, outcome, present, err := form.Answer(req, "amount")
			switch {
			case !present:
				return nil, ask("Please enter the refund amount.")
			case err == nil && outcome != weft.Accepted:
				return text("Refund cancelled."), nil
			case err != nil || refund.Amount.IsZero(): // not a number, or outside the form's 0..500.00
				return nil, ask("The amount must be a number greater than 0 and at most 500.00. Please enter it again.")
			}
			if _, scale := refund.Amount.Decimal(); scale > 2 {
				return nil, ask("The amount may have at most two decimal places. Please enter it again.")
			}
			return text(fmt.Sprintf("Refund of %s for order %s requested.", refund.Amount, in.OrderID)), nil
		})
}

// hostname names this machine in the task runner's WorkerID, so that an
// operator sees which instance holds a step's lease.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
