package weft

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	gschema "github.com/google/jsonschema-go/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/ecmare"
	"github.com/weftmcp/weft/internal/fastschema"
	"github.com/weftmcp/weft/internal/mirror"
)

// Tool describes a tool. Name is required; a Description is recommended
// (clients and models choose tools by it; a tool without one is logged at
// Debug when registered). An empty
// InputSchema is sent as {"type":"object"} by [Server.AddTool] and inferred
// from the Go argument type by the generic [AddTool].
type Tool struct {
	// Name is 1-128 characters of [A-Za-z0-9_.-], unique per server.
	Name        string
	Title       string
	Description string
	// InputSchema is a JSON Schema 2020-12 document with root type "object".
	// An authored schema is sent exactly as written (insignificant whitespace
	// removed) and arguments are validated against it. When empty, see
	// [Server.AddTool] and [AddTool].
	InputSchema []byte
	// OutputSchema optionally describes structuredContent.
	OutputSchema []byte
	Annotations  *ToolAnnotations
	Meta         exactjson.Value
	// Inputs declares the client requests the handler may embed in an
	// input_required result.
	Inputs []Input
	// StateMode selects the protection of retry state.
	StateMode StateMode
	// Task declares whether the tool may continue as a durable task
	// (see [RunAsTask] and [Options].Tasks).
	Task TaskSupport
	// Scopes are the OAuth scopes a caller needs for this tool (see
	// [AdmissionRequest].Scopes); with admission on, tools/list hides it
	// from callers whose identity lacks one of them.
	Scopes []string
}

// ToolAnnotations are hints about a tool's behaviour.
type ToolAnnotations struct {
	Title           string
	ReadOnlyHint    *bool
	DestructiveHint *bool
	IdempotentHint  *bool
	OpenWorldHint   *bool
}

// ToolHandler handles tools/call. Return a result, or:
//   - an [*InputRequired] to ask the client for input;
//   - a [*ToolError] for an execution failure the model should see (isError);
//   - an [*Error] for an application JSON-RPC error;
//   - any other error for a failure the client sees only as "Internal error".
type ToolHandler func(ctx context.Context, req *Request) (*CallToolResult, error)

type toolEntry struct {
	tool    Tool
	op      *operation
	handler ToolHandler
	input   *jsonschema.Schema
	output  *jsonschema.Schema
	// fastInput pre-checks arguments (schema_fast.go); nil when the input
	// schema uses constructs it does not model.
	fastInput *fastschema.Schema
	mirrors   []mirror.Mirror
	// trustedOutput: the output schema was inferred from the handler's Go
	// output type, so calls skip output validation.
	trustedOutput bool
	// searchOnce fills searchName and searchText, the lower-case text the
	// search tool matches (toolsearch.go), on the first search.
	searchOnce             sync.Once
	searchName, searchText string
}

// mirror is an x-mcp-header argument: header Mcp-Param-<Header> mirrors
// arguments.<Path...>.
// validToolName reports whether name follows the spec's tool-name rule.
func validToolName(name string) bool {
	if len(name) < 1 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// AddTool registers (or replaces) a tool with an untyped handler. An empty
// InputSchema becomes {"type":"object"}, which accepts any arguments object;
// set one to have arguments validated, or use the generic [AddTool] to infer
// it from a Go type.
func (s *Server) AddTool(t Tool, h ToolHandler) error { return s.addTool(t, false, h) }

// addTool registers a tool. trustedOutput marks an output schema inferred
// from the Go type that produces the output: the structured content is then
// correct by construction and is not validated again on every call.
func (s *Server) addTool(t Tool, trustedOutput bool, h ToolHandler) error {
	if h == nil {
		return fmt.Errorf("weft: tool %q: nil handler", t.Name)
	}
	if !validToolName(t.Name) {
		return fmt.Errorf("weft: tool name %q must be 1-128 characters of A-Z a-z 0-9 _ . -", t.Name)
	}
	if strings.TrimSpace(t.Description) == "" {
		s.log.Debug("weft: tool has no description; models choose tools by it: set Tool.Description", "tool", t.Name)
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = []byte(`{"type":"object"}`)
	}
	e := &toolEntry{tool: t, handler: h, trustedOutput: trustedOutput}
	in, err := compileSchema(t.InputSchema, "input", true)
	if err != nil {
		return fmt.Errorf("weft: tool %q: %w", t.Name, err)
	}
	e.tool.InputSchema, e.input = in.compact, in.validator
	if len(t.OutputSchema) > 0 {
		out, err := compileSchema(t.OutputSchema, "output", false)
		if err != nil {
			return fmt.Errorf("weft: tool %q: %w", t.Name, err)
		}
		e.tool.OutputSchema, e.output = out.compact, out.validator
	}
	if f, ok := fastschema.Compile(in.doc); ok {
		e.fastInput = f
	}
	if e.mirrors, err = mirror.Find(in.doc); err != nil {
		return fmt.Errorf("weft: tool %q: %w", t.Name, err)
	}
	if e.op, err = s.newOperation(KindTool, t.Name, t.Inputs, t.StateMode); err != nil {
		return err
	}
	e.op.argsFingerprint = schemaFingerprint(e.tool.InputSchema)
	if t.Task != TaskNone {
		if err := s.ensureTasks(); err != nil {
			return fmt.Errorf("weft: tool %q: %w", t.Name, err)
		}
	}
	s.mu.Lock()
	s.tools.put(t.Name, e)
	s.mu.Unlock()
	warnOversize(s, KindTool, t.Name, e.op, e.tool)
	s.bus.publish(event{kind: evToolsListChanged})
	return nil
}

// RemoveTool removes a tool; it reports whether the tool existed.
func (s *Server) RemoveTool(name string) bool {
	s.mu.Lock()
	ok := s.tools.remove(name)
	s.mu.Unlock()
	if ok {
		s.bus.publish(event{kind: evToolsListChanged})
	}
	return ok
}

// TypedToolHandler is a tool handler with typed arguments and output. See
// [ToolHandler] for the errors it may return. When Out is *CallToolResult the
// result is sent as returned; otherwise the output becomes structuredContent
// and a text block with its JSON.
type TypedToolHandler[In, Out any] func(ctx context.Context, req *Request, in In) (Out, error)

// AddTool registers a tool with typed arguments. Empty InputSchema and
// OutputSchema are inferred from In and Out (json struct tags; fields without
// omitempty/omitzero are required). Arguments are validated against the
// input schema (violations become an isError result the model can correct)
// and then decoded into In exactly: integers beyond 2^53 and decimals held in
// [exactjson.Number] fields keep every digit.
func AddTool[In, Out any](s *Server, t Tool, h TypedToolHandler[In, Out]) error {
	if h == nil {
		return fmt.Errorf("weft: tool %q: nil handler", t.Name)
	}
	if len(t.InputSchema) == 0 {
		b, err := inferSchema[In](true)
		if err != nil {
			return fmt.Errorf("weft: tool %q: infer input schema: %w", t.Name, err)
		}
		t.InputSchema = b
	}
	rawResult := reflect.TypeFor[Out]() == reflect.TypeFor[*CallToolResult]()
	inferredOutput := false
	if len(t.OutputSchema) == 0 && !rawResult && reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		b, err := inferSchema[Out](false)
		if err != nil {
			return fmt.Errorf("weft: tool %q: infer output schema: %w", t.Name, err)
		}
		t.OutputSchema = b
		inferredOutput = true
	}
	return s.addTool(t, inferredOutput, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		var in In
		args := req.Arguments()
		if args.Kind() == exactjson.KindNull {
			args = exactjson.Object()
		}
		if err := exactjson.Unmarshal(args, &in); err != nil {
			return &CallToolResult{IsError: true, Content: []Content{TextContent("Arguments could not be decoded: " + err.Error())}}, nil
		}
		out, err := h(ctx, req, in)
		if err != nil {
			return nil, err
		}
		if rawResult {
			r := any(out).(*CallToolResult)
			if r == nil {
				return nil, errors.New("weft: typed tool handler returned a nil *CallToolResult")
			}
			return r, nil
		}
		// Marshal once: the bytes are both the text block and, parsed, the
		// structured content (they are compact, strict JSON).
		text, err := jsonv2.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("weft: encode tool output: %w", err)
		}
		// One string for both: text is this call's own buffer, written by
		// nothing after Marshal returns.
		ts := unsafe.String(unsafe.SliceData(text), len(text))
		v, err := exactjson.ParseString(ts, exactjson.Limits{})
		if err != nil {
			return nil, fmt.Errorf("weft: encode tool output: %w", err)
		}
		return &CallToolResult{StructuredContent: v, Content: []Content{TextContent(ts)}}, nil
	})
}

var numberSchema = &gschema.Schema{Type: "number"}

func inferSchema[T any](object bool) ([]byte, error) {
	opts := &gschema.ForOptions{TypeSchemas: map[reflect.Type]*gschema.Schema{
		reflect.TypeFor[exactjson.Number](): numberSchema,
		reflect.TypeFor[exactjson.Value]():  {},
	}}
	sch, err := gschema.For[T](opts)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(sch)
	if err != nil {
		return nil, err
	}
	if object && !bytes.Contains(b, []byte(`"type":"object"`)) {
		return nil, errors.New("tool arguments must be a struct or map type (the input schema root must be an object)")
	}
	return b, nil
}

// denyLoader refuses every external $ref: schemas are never fetched.
type denyLoader struct{}

func (denyLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not loaded", url)
}

// compiledSchema is an authored schema after compileSchema: its compact
// text (what tools/list shows and what the sealed-state fingerprint
// covers), the parsed document, and the JSON Schema 2020-12 validator.
type compiledSchema struct {
	compact   []byte
	doc       exactjson.Value
	validator *jsonschema.Schema
}

// compileSchema validates an authored schema strictly, compacts it and
// compiles it with a JSON Schema 2020-12 validator, parsing it once.
func compileSchema(raw []byte, which string, requireObject bool) (compiledSchema, error) {
	v, err := exactjson.Parse(raw, exactjson.Limits{})
	if err != nil {
		return compiledSchema{}, fmt.Errorf("%s schema is not valid JSON: %w", which, err)
	}
	if v.Kind() != exactjson.KindObject {
		return compiledSchema{}, fmt.Errorf("%s schema must be a JSON object", which)
	}
	if requireObject {
		if t, ok := v.Get("type"); !ok || !isString(t, "object") {
			return compiledSchema{}, fmt.Errorf(`%s schema must have root "type": "object"`, which)
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return compiledSchema{}, fmt.Errorf("%s schema: %w", which, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// Patterns are ECMA-262 (\u00e9, \/), not Go's syntax.
	c.UseRegexpEngine(ecmare.Compile)
	c.UseLoader(denyLoader{})
	const loc = "weft:///schema.json"
	// v.Any() hands the validator the document it would decode itself (numbers
	// as json.Number), without parsing the text again.
	if err := c.AddResource(loc, v.Any()); err != nil {
		return compiledSchema{}, fmt.Errorf("%s schema: %w", which, err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return compiledSchema{}, fmt.Errorf("%s schema does not compile: %w", which, err)
	}
	return compiledSchema{compact: buf.Bytes(), doc: v, validator: sch}, nil
}

// schemaFingerprint identifies a compact input schema: the first 8 bytes of
// its SHA-256, in hex. Sealed state records the fingerprint of the schema
// that validated the emitting call's arguments (docs/request-state.md).
func schemaFingerprint(compact []byte) string {
	d := sha256.Sum256(compact)
	return hex.EncodeToString(d[:8])
}

// encode writes the tool's list entry. The schemas are the compact forms
// compiled at registration; 2025-11-25 output schemas are objects, so
// another is left out there.
func (t *Tool) encode(e *enc) {
	e.open()
	e.str("name", t.Name)
	e.strOpt("title", t.Title)
	e.str("description", t.Description)
	e.raw("inputSchema", t.InputSchema)
	if len(t.OutputSchema) > 0 && (!e.era.objectsOnly() || objectSchema(t.OutputSchema)) {
		e.raw("outputSchema", t.OutputSchema)
	}
	if a := t.Annotations; a != nil {
		e.name("annotations")
		e.open()
		e.strOpt("title", a.Title)
		for _, h := range []struct {
			n string
			v *bool
		}{{"readOnlyHint", a.ReadOnlyHint}, {"destructiveHint", a.DestructiveHint}, {"idempotentHint", a.IdempotentHint}, {"openWorldHint", a.OpenWorldHint}} {
			if h.v != nil {
				e.boolean(h.n, *h.v)
			}
		}
		e.close()
	}
	e.valueOpt("_meta", t.Meta)
	e.close()
}

// objectSchema reports whether a schema's root type is "object".
func objectSchema(schema []byte) bool {
	v, err := exactjson.Parse(schema, exactjson.Limits{})
	if err != nil {
		return false
	}
	ty, _ := v.Get("type")
	return isString(ty, "object")
}
