package openapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
)

// confirmation is the answer to the confirmation form.
type confirmation struct {
	Confirm bool `json:"confirm"`
}

// confirmState is the framework-protected state of a confirmation round:
// the tool it belongs to.
type confirmState struct {
	Confirm string `json:"confirm"`
}

// newConfirmInput declares the confirmation form. It is conditional: a
// client without form elicitation gets the framework's missing-capability
// error when the form is asked, so a dangerous request is never sent
// unconfirmed.
func newConfirmInput(host string) weft.TypedFormInput[confirmation] {
	return weft.FormOf[confirmation](weft.ConditionalCapability,
		elicit.BooleanField("confirm").Title("Send the request").
			Description("The request changes or removes data on "+host+"."))
}

// ConfirmKey is the input-request key of the confirmation form; its one
// field is the boolean "confirm".
const ConfirmKey = "confirm"

func (a *API) toolHandler(op *Operation) weft.ToolHandler {
	return func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		if op.Confirm {
			if res, err := a.confirm(op, req); res != nil || err != nil {
				return res, err
			}
		}
		r, err := a.do(ctx, req, op.plan, req.Arguments())
		if err != nil {
			return errResult(err)
		}
		return a.toolResult(op.plan, r)
	}
}

func errResult(err error) (*weft.CallToolResult, error) {
	var ce *callError
	if errors.As(err, &ce) {
		return toolError(ce.msg), nil
	}
	return nil, err
}

// confirmMessage names the request about to be sent.
func confirmMessage(op *Operation, args exactjson.Value) string {
	msg := fmt.Sprintf("Confirm %s %s", op.Method, op.Path)
	if op.Summary != "" {
		msg += " (" + op.Summary + ")"
	}
	if args.Kind() == exactjson.KindObject && args.Len() > 0 {
		msg += " with " + clip([]byte(args.String()), 512)
	}
	return msg + "?"
}

// confirm runs the confirmation round. It returns (nil, nil) when the user
// confirmed on a verified retry: the request may be sent.
func (a *API) confirm(op *Operation, req *weft.Request) (*weft.CallToolResult, error) {
	ask := func() error {
		// The state is sealed and bound to these arguments by the framework,
		// so the retry cannot change what is sent.
		return weft.AskInput(ConfirmKey, a.confirmInput.Ask(confirmMessage(op, req.Arguments()))).
			WithFrameworkState(confirmState{Confirm: op.Name})
	}
	state, resumed, err := weft.FrameworkState[confirmState](req)
	if err != nil || !resumed || state.Confirm != op.Name {
		return nil, ask()
	}
	answer, outcome, present, err := a.confirmInput.Answer(req, ConfirmKey)
	switch {
	case !present:
		return nil, ask()
	case err != nil:
		return toolError("The confirmation answer was not valid: " + err.Error() + "; nothing was sent."), nil
	case outcome != weft.Accepted:
		return toolError(fmt.Sprintf("The user did not confirm; %s %s was not sent.", op.Method, op.Path)), nil
	case !answer.Confirm:
		return toolError(fmt.Sprintf("The user answered no; %s %s was not sent.", op.Method, op.Path)), nil
	}
	return nil, nil
}

// resourceHandler reads a GET operation as a resource: template variables
// become the arguments (converted to the parameter's type).
func (a *API) resourceHandler(op *Operation) weft.ResourceHandler {
	return func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
		uri := req.Name
		args := exactjson.Object()
		vars := req.URIParams()
		for _, p := range op.plan.params {
			s, ok := vars[p.arg]
			if !ok || s == "" && p.in == "query" {
				continue
			}
			v, err := typed(p, s)
			if err != nil {
				return nil, weft.InvalidParams(fmt.Sprintf("%s: %v", uri, err))
			}
			args = args.With(p.arg, v)
		}
		r, err := a.do(ctx, req, op.plan, args)
		if err != nil {
			var ce *callError
			if errors.As(err, &ce) {
				return nil, weft.NewError(weft.CodeInternalError, ce.msg)
			}
			return nil, err
		}
		if r.status == http.StatusNotFound {
			return nil, weft.ResourceNotFound(uri)
		}
		if r.status < 200 || r.status > 299 {
			return nil, weft.NewError(weft.CodeInternalError, fmt.Sprintf("%s %s: the upstream answered HTTP %d: %s", op.Method, op.Path, r.status,
				clip(r.body, a.opts.MaxErrorBytes))).WithData(exactjson.Object(exactjson.Field("status", exactjson.Int(int64(r.status)))))
		}
		mt := r.header.Get("Content-Type")
		c := content(r, mediaType(mt))
		rc := weft.TextResource(uri, mediaType(mt), c.Text)
		if c.Type != "text" {
			rc = weft.BlobResource(uri, mediaType(mt), r.body)
		}
		return &weft.ReadResourceResult{Contents: []weft.ResourceContents{rc}}, nil
	}
}

func mediaType(ctype string) string {
	if i := strings.IndexByte(ctype, ';'); i >= 0 {
		ctype = ctype[:i]
	}
	return strings.ToLower(strings.TrimSpace(ctype))
}

// typed converts a template variable to the parameter's JSON type.
func typed(p param, s string) (exactjson.Value, error) {
	switch p.typ {
	case "integer", "number":
		n, err := exactjson.ParseNumber(s)
		if err != nil || p.typ == "integer" && !n.IsInteger() {
			return exactjson.Value{}, fmt.Errorf("%s must be %s", p.arg, map[string]string{"integer": "an integer", "number": "a number"}[p.typ])
		}
		return exactjson.NumberValue(n), nil
	case "boolean":
		switch s {
		case "true":
			return exactjson.Bool(true), nil
		case "false":
			return exactjson.Bool(false), nil
		}
		return exactjson.Value{}, fmt.Errorf("%s must be true or false", p.arg)
	}
	return exactjson.String(s), nil
}

// StaticHeader sends one fixed header (an API key, a service token) on
// every upstream request, whoever the MCP caller is.
func StaticHeader(name, value string) Authorizer {
	return func(_ context.Context, _ *weft.Request, up *http.Request) error {
		up.Header.Set(name, value)
		return nil
	}
}

// StaticQuery adds one fixed query parameter (an API key sent as
// ?api_key=...) to every upstream request. Transport errors never quote the
// query.
func StaticQuery(name, value string) Authorizer {
	return func(_ context.Context, _ *weft.Request, up *http.Request) error {
		pair := escape(name, false) + "=" + escape(value, false)
		if up.URL.RawQuery == "" {
			up.URL.RawQuery = pair
		} else {
			up.URL.RawQuery += "&" + pair
		}
		return nil
	}
}

// BearerPassThrough forwards the MCP request's own bearer token upstream.
// Use it only when the upstream is the audience of that token (one
// authorization server, and tokens minted for both); otherwise it is the
// token passthrough the MCP authorization spec forbids, and the server
// becomes a confused deputy (docs/openapi.md). Calls without a bearer
// token fail.
func BearerPassThrough() Authorizer {
	return func(_ context.Context, req *weft.Request, up *http.Request) error {
		h := ""
		if req != nil && req.Header != nil {
			h = req.Header.Get("Authorization")
		}
		if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
			return errors.New("the MCP request carries no bearer token to forward")
		}
		up.Header.Set("Authorization", h)
		return nil
	}
}
