package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/sessionstore/pgstore"
	"github.com/weftmcp/weft/task"
)

// Both eras on one endpoint: 2026-07-28 requests are served statelessly;
// 2025-11-25 clients get sessions (in memory, or in PostgreSQL shared by
// several processes) and the same fixtures, their input_required results
// turned into server-to-client requests.
var (
	erasFlag      = flag.String("eras", "both", `protocol eras served: "both", "modern" (2026-07-28 only) or "legacy" (2025-11-25 only)`)
	sessionsDSN   = flag.String("sessions", "", "PostgreSQL DSN of the legacy session store shared by a fleet (default: in memory)")
	sessionSchema = flag.String("sessions-schema", "", "PostgreSQL schema of the session store (default: the search_path)")
	keyringFile   = flag.String("keyring", "", "seal keyring file shared by a fleet (request state and legacy cursors); default: an ephemeral key")
	pageSize      = flag.Int("page-size", 0, "items per list page (default 256)")
)

// fixtureOptions builds the server options from the flags.
func fixtureOptions(logger *slog.Logger) *weft.Options {
	opts := &weft.Options{Logger: logger, Instructions: "Weft conformance fixtures.", PageSize: *pageSize,
		Tasks: &weft.TaskOptions{Store: task.NewMemoryStore(nil), PollInterval: 200 * time.Millisecond}}
	fail := func(what string, err error) {
		logger.Error(what, "err", err)
		os.Exit(1)
	}
	if *keyringFile != "" {
		kr, err := seal.LoadKeyringFile(*keyringFile)
		if err != nil {
			fail("loading the keyring failed", err)
		}
		opts.Protector = seal.NewManager(kr, nil)
	}
	switch *erasFlag {
	case "modern":
		opts.Legacy.Disabled = true
		return opts
	case "both", "legacy":
	default:
		fail("bad -eras", fmt.Errorf("unknown value %q", *erasFlag))
	}
	opts.Legacy = weft.LegacyOptions{InMemorySessions: true, Only: *erasFlag == "legacy"}
	if *sessionsDSN != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := pgstore.Open(ctx, *sessionsDSN, &pgstore.Options{Schema: *sessionSchema, Logger: logger})
		if err != nil {
			fail("opening the session store failed", err)
		}
		opts.Legacy.Store, opts.Legacy.InMemorySessions = st, false
	}
	return opts
}

func stringSchema(desc string) exactjson.Value {
	return exactjson.Object(exactjson.Field("type", exactjson.String("string")), exactjson.Field("description", exactjson.String(desc)))
}

func mustJSON(s string) exactjson.Value {
	v, err := exactjson.ParseString(s, exactjson.Limits{})
	if err != nil {
		panic(err)
	}
	return v
}

// elicitationSummary renders an elicitation answer for the tool result.
func elicitationSummary(prefix string, r exactjson.Value) string {
	a, _ := r.Get("action")
	action, _ := a.AsString()
	c, _ := r.Get("content")
	return fmt.Sprintf("%s: action=%s, content=%s", prefix, action, c.String())
}

// addLegacyFixtures adds the fixtures of the 2025-11-25 scenarios. They are
// ordinary multi-round handlers: a 2026-07-28 client gets input_required, a
// 2025-11-25 client gets real server-to-client requests.
func addLegacyFixtures(s *weft.Server, add func(error)) {
	form := weft.Form(weft.ConditionalCapability)
	sampling := weft.Sampling(weft.ConditionalCapability)

	add(weft.AddTool(s, weft.Tool{Name: "test_tool_with_logging", Description: "Sends three log messages while it runs."},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			for i, m := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					select {
					case <-time.After(50 * time.Millisecond):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				if _, err := req.Log(weft.LevelInfo, "test_tool_with_logging", exactjson.String(m)); err != nil {
					return nil, err
				}
			}
			return text("Logging test completed."), nil
		}))

	type promptArgs struct {
		Prompt string `json:"prompt"`
	}
	add(weft.AddTool(s, weft.Tool{Name: "test_sampling", Description: "Asks the client's model to answer a prompt.",
		Inputs: []weft.Input{sampling}},
		func(ctx context.Context, req *weft.Request, in promptArgs) (*weft.CallToolResult, error) {
			answer, ok, err := sampling.Answer(req, "llm")
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, weft.AskInput("llm", sampling.Ask(question(in.Prompt)))
			}
			return text("LLM response: " + answer.Text()), nil
		}))

	type messageArgs struct {
		Message string `json:"message"`
	}
	add(weft.AddTool(s, weft.Tool{Name: "test_elicitation", Description: "Asks the user for a username and an email address.",
		Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, in messageArgs) (*weft.CallToolResult, error) {
			r, ok := req.InputResponses().Get("user_info")
			if !ok {
				schema := exactjson.Object(
					exactjson.Field("type", exactjson.String("object")),
					exactjson.Field("properties", exactjson.Object(
						exactjson.Field("username", stringSchema("User's response")),
						exactjson.Field("email", stringSchema("User's email address")))),
					exactjson.Field("required", exactjson.Array(exactjson.String("username"), exactjson.String("email"))))
				return nil, weft.AskInput("user_info", form.Ask(in.Message, schema))
			}
			return text(elicitationSummary("User response", r)), nil
		}))

	add(weft.AddTool(s, weft.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicits with defaults for every primitive type.",
		Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			r, ok := req.InputResponses().Get("defaults")
			if !ok {
				return nil, weft.AskInput("defaults", form.Ask("Please review your profile.", mustJSON(`{
					"type": "object",
					"properties": {
						"name": {"type": "string", "description": "Your name", "default": "John Doe"},
						"age": {"type": "integer", "description": "Your age", "minimum": 0, "maximum": 150, "default": 30},
						"score": {"type": "number", "description": "Your score", "minimum": 0, "maximum": 100, "default": 95.5},
						"status": {"type": "string", "description": "Your status", "enum": ["active", "inactive", "pending"], "default": "active"},
						"verified": {"type": "boolean", "description": "Whether you are verified", "default": true}
					},
					"required": ["name"]
				}`)))
			}
			return text(elicitationSummary("Elicitation completed", r)), nil
		}))

	add(weft.AddTool(s, weft.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicits with every enum schema variant.",
		Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			r, ok := req.InputResponses().Get("enums")
			if !ok {
				return nil, weft.AskInput("enums", form.Ask("Please choose.", mustJSON(`{
					"type": "object",
					"properties": {
						"untitledSingle": {"type": "string", "description": "Untitled single-select", "enum": ["option1", "option2", "option3"]},
						"titledSingle": {"type": "string", "description": "Titled single-select", "oneOf": [
							{"const": "value1", "title": "First Option"},
							{"const": "value2", "title": "Second Option"},
							{"const": "value3", "title": "Third Option"}]},
						"legacyEnum": {"type": "string", "description": "Legacy titled enum", "enum": ["opt1", "opt2", "opt3"],
							"enumNames": ["Option One", "Option Two", "Option Three"]},
						"untitledMulti": {"type": "array", "description": "Untitled multi-select",
							"items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
						"titledMulti": {"type": "array", "description": "Titled multi-select", "items": {"anyOf": [
							{"const": "value1", "title": "First Choice"},
							{"const": "value2", "title": "Second Choice"},
							{"const": "value3", "title": "Third Choice"}]}}
					},
					"required": []
				}`)))
			}
			return text(elicitationSummary("Elicitation completed", r)), nil
		}))

	add(s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "test://watched-resource", Name: "watched-resource",
		Description: "A resource to subscribe to.", MimeType: "text/plain"}},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(req.Name, "text/plain", "Watched resource content.")}}, nil
		}))
	add(weft.AddTool(s, weft.Tool{Name: "test_update_watched_resource", Description: "Announces a change of test://watched-resource to its subscribers."},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			s.NotifyResourceUpdated("test://watched-resource")
			return text("Update announced."), nil
		}))
}
