package main

import (
	"context"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// objectSchema builds a flat form schema whose properties are all required.
func objectSchema(props ...exactjson.Member) exactjson.Value {
	names := make([]exactjson.Value, len(props))
	for i, p := range props {
		names[i] = exactjson.String(p.Name)
	}
	return exactjson.Object(
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(props...)),
		exactjson.Field("required", exactjson.Array(names...)))
}

func stringProp(name string) exactjson.Member {
	return exactjson.Field(name, exactjson.Object(exactjson.Field("type", exactjson.String("string"))))
}

func boolProp(name string) exactjson.Member {
	return exactjson.Field(name, exactjson.Object(exactjson.Field("type", exactjson.String("boolean"))))
}

// acceptedContent returns the content of an accepted form elicitation
// under key.
func acceptedContent(req *weft.Request, form weft.FormInput, key string) (exactjson.Value, bool) {
	content, outcome, ok, err := form.Answer(req, key)
	return content, ok && err == nil && outcome == weft.Accepted
}

// question is a sampling request for one user question.
func question(q string) weft.SamplingRequest {
	return weft.SamplingRequest{MaxTokens: 100, Messages: []weft.SamplingMessage{{Role: weft.RoleUser, Content: weft.TextContent(q)}}}
}

// step is the framework state of the multi-round fixtures.
type step struct {
	Phase string `json:"phase"`
}

func phase(req *weft.Request) string {
	st, _, _ := weft.FrameworkState[step](req)
	return st.Phase
}

func phaseState(p string) step { return step{Phase: p} }

func addMRTRTools(s *weft.Server, add func(error)) {
	form := weft.Form(weft.ConditionalCapability)
	sampling := weft.Sampling(weft.ConditionalCapability)
	roots := weft.Roots(weft.ConditionalCapability)
	all := []weft.Input{form, sampling, roots}
	tool := func(name, desc string, mode weft.StateMode, h weft.TypedToolHandler[noArgs, *weft.CallToolResult]) {
		add(weft.AddTool(s, weft.Tool{Name: name, Description: desc, Inputs: all, StateMode: mode}, h))
	}

	tool("test_input_required_result_elicitation", "Asks for the user's name.", weft.StateNone,
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			content, ok := acceptedContent(req, form, "user_name")
			if !ok {
				return nil, weft.AskInput("user_name", form.Ask("What is your name?", objectSchema(stringProp("name"))))
			}
			n, _ := content.Get("name")
			name, isString := n.AsString()
			if !isString {
				return nil, weft.AskInput("user_name", form.Ask("What is your name?", objectSchema(stringProp("name"))))
			}
			return text("Hello, " + name + "!"), nil
		})
	tool("test_input_required_result_sampling", "Asks the client's model a question.", weft.StateNone,
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			answer, ok, err := sampling.Answer(req, "capital_question")
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, weft.AskInput("capital_question", sampling.Ask(question("What is the capital of France?")))
			}
			return text("The model answered: " + answer.Text()), nil
		})
	tool("test_input_required_result_list_roots", "Asks for the client's roots.", weft.StateNone,
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			rs, ok, err := roots.Answer(req, "client_roots")
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, weft.AskInput("client_roots", roots.Ask())
			}
			return text("The client has " + itoa(len(rs)) + " root(s)."), nil
		})
	tool("test_input_required_result_request_state", "Asks for confirmation and carries sealed state.", weft.StateFramework,
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			if phase(req) == "confirming" && req.InputResponses().Has("confirm") {
				return text("state-ok"), nil
			}
			return nil, weft.AskInput("confirm", form.Ask("Please confirm.", objectSchema(boolProp("ok")))).
				WithFrameworkState(phaseState("confirming"))
		})
	tool("test_input_required_result_multiple_inputs", "Asks for three inputs at once.", weft.StateFramework,
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			in := req.InputResponses()
			if phase(req) == "collecting" && len(in.Missing("user_name", "greeting", "client_roots")) == 0 {
				return text("All inputs received."), nil
			}
			return nil, weft.AskInput("user_name", form.Ask("What is your name?", objectSchema(stringProp("name")))).
				Ask("greeting", sampling.Ask(question("Write a short greeting."))).
				Ask("client_roots", roots.Ask()).
				WithFrameworkState(phaseState("collecting"))
		})
	tool("test_input_required_result_multi_round", "Asks twice, one round after the other.", weft.StateFramework,
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			in := req.InputResponses()
			switch {
			case phase(req) == "step2" && in.Has("step2"):
				return text("Both rounds completed."), nil
			case phase(req) == "step1" && in.Has("step1"):
				return nil, weft.AskInput("step2", form.Ask("Step 2: confirm.", objectSchema(boolProp("ok")))).
					WithFrameworkState(phaseState("step2"))
			}
			return nil, weft.AskInput("step1", form.Ask("Step 1: your name?", objectSchema(stringProp("name")))).
				WithFrameworkState(phaseState("step1"))
		})
	tool("test_input_required_result_tampered_state", "Carries sealed state that must not be tampered with.", weft.StateFramework,
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			if phase(req) == "sealed" {
				return text("State verified."), nil
			}
			return nil, weft.AskInput("confirm", form.Ask("Please confirm.", objectSchema(boolProp("ok")))).
				WithFrameworkState(phaseState("sealed"))
		})
	tool("test_input_required_result_capabilities", "Asks only for what the client supports.", weft.StateNone,
		func(ctx context.Context, req *weft.Request, _ noArgs) (*weft.CallToolResult, error) {
			if req.InputResponses().Len() > 0 {
				return text("Input received."), nil
			}
			ir := new(weft.InputRequired)
			if req.ClientSupports(form) {
				ir.Ask("user_name", form.Ask("What is your name?", objectSchema(stringProp("name"))))
			}
			if req.ClientSupports(sampling) {
				ir.Ask("greeting", sampling.Ask(question("Write a short greeting.")))
			}
			if req.ClientSupports(roots) {
				ir.Ask("client_roots", roots.Ask())
			}
			if len(ir.Keys()) == 0 {
				return text("The client supports no input requests."), nil
			}
			return nil, ir
		})
}

func itoa(i int) string {
	v, _ := exactjson.Int(int64(i)).AsNumber()
	return v.String()
}
