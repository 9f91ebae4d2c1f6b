package weft

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
)

// answered is a request whose retry carries the given input responses.
func answered(t testing.TB, responses string) *Request {
	t.Helper()
	return &Request{retry: &retryState{inputResponses: InputResponses{mustParse(t, responses)}}}
}

type orderForm struct {
	Item     string           `json:"item" jsonschema:"what to order"`
	Quantity int              `json:"quantity"`
	Price    exactjson.Number `json:"price"`
	Gift     bool             `json:"gift,omitempty"`
	Note     string           `json:"note,omitzero"`
}

func TestFormOfSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		form interface {
			Schema() *elicit.Schema
			Err() error
		}
		want string
	}{
		{"empty struct", FormOf[struct{}](RequiredCapability), `{"type":"object","properties":{}}`},
		{"field order, descriptions, required and exact decimals", FormOf[orderForm](RequiredCapability),
			`{"type":"object","properties":{"item":{"type":"string","description":"what to order"},"quantity":{"type":"integer"},` +
				`"price":{"type":"number"},"gift":{"type":"boolean"},"note":{"type":"string"}},"required":["item","quantity","price"]}`},
		{"refinements", FormOf[orderForm](RequiredCapability,
			elicit.EnumField("item", "tea", "coffee").Title("Item"),
			elicit.NumberField("price").MinInt(0).MaxDecimal("9.50"),
			elicit.StringField("note").MaxLength(20).Required()),
			`{"type":"object","properties":{"item":{"type":"string","title":"Item","enum":["tea","coffee"],"description":"what to order"},` +
				`"quantity":{"type":"integer"},"price":{"type":"number","minimum":0,"maximum":9.50},"gift":{"type":"boolean"},` +
				`"note":{"type":"string","maxLength":20}},"required":["item","quantity","price","note"]}`},
		{"integer refinement of a number", FormOf[struct {
			N exactjson.Number `json:"n"`
		}](RequiredCapability, elicit.IntegerField("n").MinInt(1)),
			`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`},
		{"multi-select of a string slice", FormOf[struct {
			Tags []string `json:"tags"`
		}](RequiredCapability, elicit.MultiSelectField("tags", "a", "b").MaxItems(2)),
			`{"type":"object","properties":{"tags":{"type":"array","maxItems":2,"items":{"type":"string","enum":["a","b"]}}},"required":["tags"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.form.Err(); err != nil {
				t.Fatal(err)
			}
			got, err := exactjson.Encode(tc.form.Schema().Value(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("schema\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestFormOfRejects(t *testing.T) {
	type nested struct {
		Address struct {
			City string `json:"city"`
		} `json:"address"`
	}
	type pointer struct {
		Name *string `json:"name"`
	}
	type tags struct {
		Tags []string `json:"tags"`
	}
	type one struct {
		N int `json:"n"`
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"not a struct", FormOf[int](RequiredCapability).Err(), "a form is described by a struct type"},
		{"map", FormOf[map[string]string](RequiredCapability).Err(), "struct type"},
		{"nested object", FormOf[nested](RequiredCapability).Err(), `"address"`},
		{"nullable field", FormOf[pointer](RequiredCapability).Err(), `"name"`},
		{"slice without options", FormOf[tags](RequiredCapability).Err(), `"tags"`},
		{"refinement of an unknown field", FormOf[one](RequiredCapability, elicit.IntegerField("m")).Err(), `refinement of "m"`},
		{"refinement of another type", FormOf[one](RequiredCapability, elicit.StringField("n")).Err(), "cannot hold the values"},
		{"invalid refinement", FormOf[one](RequiredCapability, elicit.IntegerField("n").MinLength(2)).Err(), "MinLength does not apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %s", tc.err, tc.want)
			}
		})
	}
}

func TestTypedFormAnswer(t *testing.T) {
	form := FormOf[orderForm](RequiredCapability, elicit.NumberField("price").MinInt(0).MaxDecimal("9.50"))
	req := answered(t, `{
		"ok": {"action":"accept","content":{"item":"tea","quantity":2,"price":3.50}},
		"over": {"action":"accept","content":{"item":"tea","quantity":2,"price":9.51}},
		"extra": {"action":"accept","content":{"item":"tea","quantity":2,"price":1,"role":"admin"}},
		"declined": {"action":"decline"},
		"cancelled": {"action":"cancel"},
		"roots": {"roots":[]}
	}`)
	got, outcome, present, err := form.Answer(req, "ok")
	if err != nil || !present || outcome != Accepted {
		t.Fatalf("ok: %v %v %v", outcome, present, err)
	}
	if got.Item != "tea" || got.Quantity != 2 || got.Price.String() != "3.50" || got.Gift {
		t.Errorf("decoded %+v", got)
	}
	for _, key := range []string{"over", "extra"} {
		got, outcome, present, err := form.Answer(req, key)
		var ve *elicit.ValidationError
		if !errors.As(err, &ve) || !present || outcome != Accepted || got != (orderForm{}) {
			t.Errorf("%s: %+v %v %v %v, want a validation error and no answer", key, got, outcome, present, err)
		}
	}
	for key, want := range map[string]Action{"declined": Declined, "cancelled": Cancelled} {
		if got, outcome, present, err := form.Answer(req, key); err != nil || !present || outcome != want || got != (orderForm{}) {
			t.Errorf("%s: %+v %v %v %v", key, got, outcome, present, err)
		}
	}
	if _, _, present, err := form.Answer(req, "roots"); !present || !errors.Is(err, elicit.ErrInvalidResult) {
		t.Errorf("a roots answer: %v %v", present, err)
	}
	if _, _, present, err := form.Answer(req, "absent"); present || err != nil {
		t.Errorf("absent: %v %v", present, err)
	}
}

func TestFormRequests(t *testing.T) {
	typed := FormOf[struct {
		OK bool `json:"ok"`
	}](ConditionalCapability)
	r := typed.Ask("Proceed?")
	if r.Err() != nil || r.Method() != "elicitation/create" {
		t.Fatalf("%v %s", r.Err(), r.Method())
	}
	if got := r.Params().String(); got != `{"mode":"form","message":"Proceed?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}` {
		t.Errorf("params %s", got)
	}
	u := URL(ConditionalCapability).Ask("Sign in.", "https://example.com/s/h")
	if got := u.Params().String(); u.Err() != nil || got != `{"mode":"url","message":"Sign in.","url":"https://example.com/s/h"}` {
		t.Errorf("URL params %s %v", got, u.Err())
	}
	for name, r := range map[string]InputRequest{
		"empty message":         typed.Ask("  "),
		"invalid UTF-8":         Form(RequiredCapability).Ask("\xff", approveSchema),
		"URL without a message": URL(RequiredCapability).Ask("", "https://example.com"),
		"bad schema":            Form(RequiredCapability).Ask("Name?", exactjson.Object()),
		"zero roots":            RootsInput{}.Ask(),
		"zero sampling":         SamplingInput{}.Ask(SamplingRequest{}),
		"zero URL":              URLInput{}.Ask("m", "https://example.com"),
		"failed inference":      FormOf[int](RequiredCapability).Ask("m"),
	} {
		if r.Err() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestInputDeclarations(t *testing.T) {
	s, _ := newServer(t, nil)
	h := func(ctx context.Context, req *Request) (*CallToolResult, error) { return textResult("x"), nil }
	type login struct {
		Password string `json:"password"`
	}
	type badge struct {
		Code string `json:"badgeCode"`
	}
	for _, tc := range []struct {
		name   string
		inputs []Input
		want   string // "" for success
	}{
		{"every kind", []Input{Form(RequiredCapability), URL(RequiredCapability), Sampling(RequiredCapability).WithTools(), Roots(RequiredCapability)}, ""},
		{"two forms, one requirement", []Input{Form(ConditionalCapability), FormOf[orderForm](ConditionalCapability)}, ""},
		{"two forms, two requirements", []Input{Form(ConditionalCapability), FormOf[orderForm](RequiredCapability)}, "both as"},
		{"nil", []Input{nil}, "nil input declaration"},
		{"zero", []Input{RootsInput{}}, "must be built with"},
		{"zero typed form", []Input{TypedFormInput[orderForm]{}}, "must be built with"},
		{"failed inference", []Input{FormOf[int](RequiredCapability)}, "struct type"},
		{"secret field", []Input{FormOf[login](RequiredCapability)}, "secret policy"},
		{"field the default policy allows", []Input{FormOf[badge](RequiredCapability)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.AddTool(Tool{Name: "t", Description: "d", Inputs: tc.inputs}, h)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("AddTool = %v, want %q", err, tc.want)
			}
		})
	}
	strict, _ := newServer(t, &Options{SecretPolicy: elicit.DefaultSecretPolicy().With(elicit.Rule{ID: "badge", Reason: "a badge code", Phrases: []string{"badge code"}})})
	if err := strict.AddTool(Tool{Name: "t", Description: "d", Inputs: []Input{FormOf[badge](RequiredCapability)}}, h); err == nil || !strings.Contains(err.Error(), "badge") {
		t.Fatalf("the server's policy did not apply at registration: %v", err)
	}
}

func TestDeclarationDescriptions(t *testing.T) {
	for in, want := range map[Input]string{
		Form(RequiredCapability):                 `required form elicitation elicitation/create {"elicitation":{"form":{}}}`,
		FormOf[orderForm](ConditionalCapability): `conditional form elicitation elicitation/create {"elicitation":{"form":{}}}`,
		URL(ConditionalCapability):               `conditional URL elicitation elicitation/create {"elicitation":{"url":{}}}`,
		Sampling(RequiredCapability):             `required sampling sampling/createMessage {"sampling":{}}`,
		Sampling(RequiredCapability).WithTools(): `required sampling with tools sampling/createMessage {"sampling":{"tools":{}}}`,
		Roots(ConditionalCapability):             `conditional roots roots/list {"roots":{}}`,
	} {
		if got := in.String() + " " + in.Method() + " " + in.Capabilities().String(); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

func TestClientSupports(t *testing.T) {
	req := &Request{ClientCapabilities: mustParse(t, `{"elicitation":{},"sampling":{}}`)}
	for in, want := range map[Input]bool{
		Form(RequiredCapability): true, FormOf[orderForm](RequiredCapability): true, URL(RequiredCapability): false,
		Sampling(RequiredCapability): true, Sampling(RequiredCapability).WithTools(): false, Roots(RequiredCapability): false,
	} {
		if got := req.ClientSupports(in); got != want {
			t.Errorf("%s: %v, want %v", in, got, want)
		}
	}
	if req.ClientSupports(nil) {
		t.Error("nil input supported")
	}
}

func TestSamplingWithTools(t *testing.T) {
	msgs := []SamplingMessage{{Role: RoleUser, Content: TextContent("Weather?")}}
	tools := []SamplingTool{{Name: "forecast", Description: "Gets a forecast.", InputSchema: mustParse(t, `{"type":"object","properties":{"city":{"type":"string"}}}`)}, {Name: "now"}}
	r := Sampling(RequiredCapability).WithTools().Ask(SamplingRequest{Messages: msgs, MaxTokens: 9, Tools: tools, ToolChoice: "auto"})
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	want := `{"messages":[{"role":"user","content":{"type":"text","text":"Weather?"}}],"maxTokens":9,` +
		`"tools":[{"name":"forecast","description":"Gets a forecast.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}},` +
		`{"name":"now","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"auto"}}`
	if got := r.Params().String(); got != want {
		t.Errorf("params\n got %s\nwant %s", got, want)
	}
	for name, req := range map[string]SamplingRequest{
		"tools without WithTools": {Messages: msgs, MaxTokens: 9, Tools: tools[1:]},
		"tool choice alone":       {Messages: msgs, MaxTokens: 9, ToolChoice: "none"},
	} {
		if r := Sampling(RequiredCapability).Ask(req); r.Err() == nil || !strings.Contains(r.Err().Error(), "WithTools") {
			t.Errorf("%s: %v", name, r.Err())
		}
	}
	for name, req := range map[string]SamplingRequest{
		"bad tool name":    {Messages: msgs, MaxTokens: 9, Tools: []SamplingTool{{Name: "a b"}}},
		"non-object input": {Messages: msgs, MaxTokens: 9, Tools: []SamplingTool{{Name: "a", InputSchema: mustParse(t, `{"type":"string"}`)}}},
		"bad tool choice":  {Messages: msgs, MaxTokens: 9, Tools: tools, ToolChoice: "always"},
	} {
		if r := Sampling(RequiredCapability).WithTools().Ask(req); r.Err() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestURLAnswer(t *testing.T) {
	req := answered(t, `{"a":{"action":"accept"},"d":{"action":"decline"},"bad":{"action":"accept","content":{"x":"y"}}}`)
	link := URL(RequiredCapability)
	if o, ok, err := link.Answer(req, "a"); o != Accepted || !ok || err != nil {
		t.Errorf("accept: %v %v %v", o, ok, err)
	}
	if o, ok, err := link.Answer(req, "d"); o != Declined || !ok || err != nil {
		t.Errorf("decline: %v %v %v", o, ok, err)
	}
	if _, ok, err := link.Answer(req, "bad"); !ok || err == nil {
		t.Errorf("content with a URL answer: %v %v", ok, err)
	}
}

func TestPlainIntegers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`1E+2`, `100`},
		{`-1.5E+1`, `-15`},
		{`1.50`, `1.50`},
		{`1.5`, `1.5`},
		{`2.0`, `2`},
		{`1.230E+2`, `123`},
		{`1E-2`, `1E-2`},
		{`0E+5`, `0`},
		{`1E+5000`, `1E+5000`},
		{`12345678901234567890123E+3`, `12345678901234567890123000`},
		{`{"a":[1E+1,"x",{"b":1E+0}],"c":true}`, `{"a":[10,"x",{"b":1}],"c":true}`},
		{`[1,2,3]`, `[1,2,3]`},
	} {
		if got := plainIntegers(mustParse(t, tc.in)).String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
}
