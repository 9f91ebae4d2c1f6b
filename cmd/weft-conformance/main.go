// Command weft-conformance serves every fixture tool, prompt and resource
// that the official MCP conformance suite exercises, at /mcp, using only
// Weft's public API. It doubles as a tour of the API.
//
//	go run ./cmd/weft-conformance -addr 127.0.0.1:3917
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "client" {
		runClientMode(os.Args[2:]) // client.go: the suite's client scenarios
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "client-summary" {
		runSummary(os.Args[2:])
		return
	}
	addr := flag.String("addr", "127.0.0.1:3917", "listen address (loopback)")
	stdio := flag.Bool("stdio", false, "serve the fixtures over stdin/stdout instead of HTTP (for a gateway in front)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := newServer(logger)
	if err != nil {
		logger.Error("building the fixture server failed", "err", err)
		os.Exit(1)
	}
	if *stdio {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := srv.ServeStdio(ctx, os.Stdin, os.Stdout); err != nil && ctx.Err() == nil {
			logger.Error("serve failed", "err", err)
			os.Exit(1)
		}
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	hs := weft.NewHTTPServer(*addr, mux)
	hs.RegisterOnShutdown(func() { _ = srv.Shutdown(context.Background()) })
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = hs.Shutdown(sctx)
	}()
	logger.Info("weft conformance fixtures", "url", "http://"+*addr+"/mcp")
	if err := hs.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve failed", "err", err)
		os.Exit(1)
	}
}

// A 1x1 PNG and a tiny WAV header.
var (
	pngPixel, _  = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	wavSample, _ = base64.StdEncoding.DecodeString("UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=")
)

func text(s string) *weft.CallToolResult {
	return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(s)}}
}

type noArgs struct{}

func newServer(logger *slog.Logger) (*weft.Server, error) {
	s, err := weft.NewServer(weft.Implementation{Name: "weft-conformance", Version: "0.1.0"}, fixtureOptions(logger)) // legacy.go
	if err != nil {
		return nil, err
	}
	var errs []error
	add := func(err error) { errs = append(errs, err) }

	simple := func(name, desc string, h weft.TypedToolHandler[noArgs, *weft.CallToolResult]) {
		add(weft.AddTool(s, weft.Tool{Name: name, Description: desc}, h))
	}
	simple("test_simple_text", "Returns a simple text response.", func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		return text("This is a simple text response for testing."), nil
	})
	simple("test_image_content", "Returns an image.", func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.ImageContent(pngPixel, "image/png")}}, nil
	})
	simple("test_audio_content", "Returns audio.", func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.AudioContent(wavSample, "audio/wav")}}, nil
	})
	simple("test_embedded_resource", "Returns an embedded resource.", func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.EmbeddedResource(
			weft.TextResource("test://embedded-resource", "text/plain", "This is an embedded resource content."))}}, nil
	})
	simple("test_multiple_content_types", "Returns text, an image and a resource.", func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{
			weft.TextContent("Multiple content types test:"),
			weft.ImageContent(pngPixel, "image/png"),
			weft.EmbeddedResource(weft.TextResource("test://mixed-content-resource", "application/json", `{"test":"data","value":123}`)),
		}}, nil
	})
	simple("test_error_handling", "Always fails with a tool error.", func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		return nil, &weft.ToolError{Message: "This tool intentionally returns an error for testing"}
	})
	simple("test_tool_with_progress", "Reports progress three times.", func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				select {
				case <-time.After(50 * time.Millisecond):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if err := req.Progress(p, 100, fmt.Sprintf("step %d", i+1)); err != nil && !errors.Is(err, weft.ErrNoProgress) {
				return nil, err
			}
		}
		return text("Progress complete."), nil
	})
	add(weft.AddTool(s, weft.Tool{Name: "test_missing_capability", Description: "Needs the client's sampling capability.",
		Inputs: []weft.Input{weft.Sampling(weft.RequiredCapability)}},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			return text("The client declared sampling."), nil
		}))
	add(weft.AddTool(s, weft.Tool{Name: "test_streaming_elicitation", Description: "Answers without any server-to-client request.",
		Inputs: []weft.Input{weft.Form(weft.ConditionalCapability)}},
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			return text("No server-to-client request was sent."), nil
		}))
	simple("test_logging_tool", "Logs only when the request asks for a log level.", func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		for _, m := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if _, err := req.Log(weft.LevelInfo, "test_logging_tool", exactjson.String(m)); err != nil {
				return nil, err
			}
		}
		return text("Logging test completed."), nil
	})
	simple("test_trigger_tool_change", "Re-adds a tool so that listeners hear tools/list_changed.", func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		err := weft.AddTool(s, weft.Tool{Name: "__transient_tool_for_list_changed", Description: "Added by test_trigger_tool_change."},
			func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
				return text("transient"), nil
			})
		if err != nil {
			return nil, err
		}
		return text("Tool list changed."), nil
	})
	simple("test_trigger_prompt_change", "Re-adds a prompt so that listeners hear prompts/list_changed.", func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
		err := s.AddPrompt(weft.Prompt{Name: "__transient_prompt_for_list_changed", Description: "Added by test_trigger_prompt_change."},
			func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
				return &weft.GetPromptResult{Messages: []weft.PromptMessage{{Role: weft.RoleUser, Content: weft.TextContent("transient")}}}, nil
			})
		if err != nil {
			return nil, err
		}
		return text("Prompt list changed."), nil
	})
	addMRTRTools(s, add)
	add(s.AddTool(weft.Tool{Name: "json_schema_2020_12_tool", Description: "Has an authored JSON Schema 2020-12 input schema.",
		InputSchema: []byte(jsonSchema2020)},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return text("Schema accepted: " + req.Arguments().String()), nil
		}))
	add(s.AddTool(weft.Tool{Name: "test_x_mcp_header", Description: "Mirrors its region argument into the Mcp-Param-Region header.",
		InputSchema: []byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"query":{"type":"string"}}}`)},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return text("Region: " + req.Arguments().String()), nil
		}))

	addTaskTools(s, add)
	addPrompts(s, add)
	addResources(s, add)
	addSkills(s, add)         // skills.go: the SEP-2640 skills fixtures
	addLegacyFixtures(s, add) // legacy.go: the 2025-11-25 scenarios
	return s, errors.Join(errs...)
}

const jsonSchema2020 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
    }
  },
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"},
    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
    "phone": {"type": "string"},
    "email": {"type": "string"}
  },
  "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
  "if": {"properties": {"contactMethod": {"const": "phone"}}},
  "then": {"required": ["phone"]},
  "else": {"required": ["email"]},
  "additionalProperties": false
}`

func addPrompts(s *weft.Server, add func(error)) {
	msg := func(role weft.Role, c weft.Content) weft.PromptMessage {
		return weft.PromptMessage{Role: role, Content: c}
	}
	add(s.AddPrompt(weft.Prompt{Name: "test_simple_prompt", Description: "A simple prompt without arguments."},
		func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
			return &weft.GetPromptResult{Messages: []weft.PromptMessage{msg(weft.RoleUser, weft.TextContent("This is a simple prompt for testing."))}}, nil
		}))
	add(s.AddPrompt(weft.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with two required arguments.",
		Arguments: []weft.PromptArgument{{Name: "arg1", Description: "First argument", Required: true}, {Name: "arg2", Description: "Second argument", Required: true}},
		Complete: func(ctx context.Context, req *weft.Request, c weft.CompletionRequest) (weft.Completion, error) {
			var out []string
			for _, v := range []string{"test", "testing", "tested", "value"} {
				if len(v) >= len(c.Value) && v[:len(c.Value)] == c.Value {
					out = append(out, v)
				}
			}
			return weft.Completion{Values: out, Total: len(out)}, nil
		}},
		func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
			return &weft.GetPromptResult{Messages: []weft.PromptMessage{msg(weft.RoleUser,
				weft.TextContent(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"])))}}, nil
		}))
	add(s.AddPrompt(weft.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt embedding a resource.",
		Arguments: []weft.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
			return &weft.GetPromptResult{Messages: []weft.PromptMessage{
				msg(weft.RoleUser, weft.EmbeddedResource(weft.TextResource(args["resourceUri"], "text/plain", "Embedded resource content for testing."))),
				msg(weft.RoleUser, weft.TextContent("Please process the embedded resource above.")),
			}}, nil
		}))
	add(s.AddPrompt(weft.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image."},
		func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
			return &weft.GetPromptResult{Messages: []weft.PromptMessage{
				msg(weft.RoleUser, weft.ImageContent(pngPixel, "image/png")),
				msg(weft.RoleUser, weft.TextContent("Please analyze the image above.")),
			}}, nil
		}))
	form := weft.Form(weft.ConditionalCapability)
	add(s.AddPrompt(weft.Prompt{Name: "test_input_required_result_prompt", Description: "Asks for context before building the prompt.",
		Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, args map[string]string) (*weft.GetPromptResult, error) {
			content, ok := acceptedContent(req, form, "user_context")
			if !ok {
				return nil, weft.AskInput("user_context", form.Ask("What context should the prompt use?",
					objectSchema(stringProp("context"))))
			}
			c, _ := content.Get("context")
			cs, _ := c.AsString()
			return &weft.GetPromptResult{Messages: []weft.PromptMessage{msg(weft.RoleUser, weft.TextContent("Prompt with context: "+cs))}}, nil
		}))
}

func addResources(s *weft.Server, add func(error)) {
	add(s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "test://static-text", Name: "static-text",
		Description: "A static text resource.", MimeType: "text/plain"}, Cache: weft.CachePolicy{TTLMillis: 60000, Public: true}},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(req.Name, "text/plain", "This is the content of the static text resource.")}}, nil
		}))
	add(s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "test://static-binary", Name: "static-binary",
		Description: "A static binary resource.", MimeType: "image/png"}, Cache: weft.CachePolicy{TTLMillis: 60000, Public: true}},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.BlobResource(req.Name, "image/png", pngPixel)}}, nil
		}))
	add(s.AddResourceTemplate(weft.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template-data",
		Description: "Data for an id.", MimeType: "application/json"},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			id := req.URIParams()["id"]
			body, err := exactjson.Encode(exactjson.Object(
				exactjson.Field("id", exactjson.String(id)),
				exactjson.Field("templateTest", exactjson.Bool(true)),
				exactjson.Field("data", exactjson.String("Data for ID: "+id))), 0)
			if err != nil {
				return nil, err
			}
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{weft.TextResource(req.Name, "application/json", string(body))}}, nil
		}))
}
