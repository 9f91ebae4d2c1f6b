package weft_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/wefttest"
)

func TestSampleParams(t *testing.T) {
	d := weft.Sampling(weft.Required)
	temp := 0.25
	for _, tc := range []struct {
		name    string
		req     weft.SamplingRequest
		want    string // params, compact in document order
		wantErr string
	}{
		{name: "minimal",
			req:  weft.SamplingRequest{Messages: []weft.SamplingMessage{{Role: weft.RoleUser, Content: weft.TextContent("Hi")}}, MaxTokens: 20},
			want: `{"messages":[{"role":"user","content":{"type":"text","text":"Hi"}}],"maxTokens":20}`},
		{name: "everything",
			req: weft.SamplingRequest{
				Messages: []weft.SamplingMessage{
					{Role: weft.RoleUser, Content: weft.TextContent("Name a colour")},
					{Role: weft.RoleAssistant, Content: weft.TextContent("Teal")},
					{Role: weft.RoleUser, Content: weft.ImageContent([]byte{1, 2}, "image/png")}},
				SystemPrompt: "Be brief.", MaxTokens: 5, Temperature: &temp, StopSequences: []string{"\n"},
				ModelHints: []string{"claude", "small"}, Metadata: exactjson.Object(exactjson.Field("k", exactjson.Int(1)))},
			want: `{"messages":[{"role":"user","content":{"type":"text","text":"Name a colour"}},` +
				`{"role":"assistant","content":{"type":"text","text":"Teal"}},{"role":"user","content":{"type":"image","data":"AQI=","mimeType":"image/png"}}],` +
				`"systemPrompt":"Be brief.","maxTokens":5,"temperature":0.25,"stopSequences":["\n"],"modelPreferences":{"hints":[{"name":"claude"},{"name":"small"}]},"metadata":{"k":1}}`},
		{name: "no messages", req: weft.SamplingRequest{MaxTokens: 5}, wantErr: "no messages"},
		{name: "no maxTokens", req: weft.SamplingRequest{Messages: []weft.SamplingMessage{{Role: weft.RoleUser, Content: weft.TextContent("x")}}},
			wantErr: "MaxTokens 0"},
		{name: "bad role", req: weft.SamplingRequest{Messages: []weft.SamplingMessage{{Role: "system", Content: weft.TextContent("x")}}, MaxTokens: 1},
			wantErr: `message 0: role "system"`},
		{name: "resource link", req: weft.SamplingRequest{Messages: []weft.SamplingMessage{{Role: weft.RoleUser,
			Content: weft.ResourceLinkContent(weft.ResourceInfo{URI: "file:///a", Name: "a"})}}, MaxTokens: 1},
			wantErr: `content type "resource_link"`},
		{name: "metadata not an object", req: weft.SamplingRequest{Messages: []weft.SamplingMessage{{Role: weft.RoleUser, Content: weft.TextContent("x")}},
			MaxTokens: 1, Metadata: exactjson.String("x")}, wantErr: "metadata must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := weft.Sample(d, tc.req)
			if tc.wantErr != "" {
				if r.Err() == nil || !strings.Contains(r.Err().Error(), tc.wantErr) {
					t.Fatalf("Err() = %v, want it to mention %q", r.Err(), tc.wantErr)
				}
				return
			}
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			if r.Method() != "sampling/createMessage" {
				t.Errorf("Method() = %q", r.Method())
			}
			got, err := exactjson.Encode(r.Params(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("params\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestParseSamplingResult(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		text      string
		blocks    int
		stop      string
		wantError string
	}{
		{name: "single block", in: `{"role":"assistant","content":{"type":"text","text":"Teal"},"model":"m","stopReason":"endTurn"}`,
			text: "Teal", blocks: 1, stop: "endTurn"},
		{name: "blocks", in: `{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image","data":"AQI=","mimeType":"image/png"},{"type":"text","text":"b"}],"model":"m"}`,
			text: "a\nb", blocks: 3},
		{name: "no text", in: `{"role":"assistant","content":[],"model":"m"}`, blocks: 0},
		{name: "no model", in: `{"role":"assistant","content":{"type":"text","text":"x"}}`, wantError: "model"},
		{name: "bad role", in: `{"role":"system","content":{"type":"text","text":"x"},"model":"m"}`, wantError: "role"},
		{name: "bad stopReason", in: `{"role":"assistant","content":{"type":"text","text":"x"},"model":"m","stopReason":1}`, wantError: "stopReason"},
		{name: "bad block", in: `{"role":"assistant","content":["x"],"model":"m"}`, wantError: "blocks must be objects"},
		{name: "an elicitation answer", in: `{"action":"accept"}`, wantError: "role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := exactjson.Parse([]byte(tc.in), exactjson.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := weft.ParseSamplingResult(v)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Text() != tc.text || len(r.Content) != tc.blocks || r.StopReason != tc.stop || r.Model != "m" || r.Role != weft.RoleAssistant {
				t.Errorf("got %+v (text %q)", r, r.Text())
			}
		})
	}
}

func TestParseRoots(t *testing.T) {
	for _, tc := range []struct {
		in, want, wantError string
	}{
		{in: `{"roots":[]}`, want: "[]"},
		{in: `{"roots":[{"uri":"file:///a","name":"A"},{"uri":"file:///b"}]}`, want: "[{file:///a A} {file:///b }]"},
		{in: `{"roots":[{"name":"A"}]}`, wantError: "uri"},
		{in: `{"roots":[{"uri":"file:///a","name":7}]}`, wantError: "name must be a string"},
		{in: `{"roots":{}}`, wantError: "array"},
	} {
		v, err := exactjson.Parse([]byte(tc.in), exactjson.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		roots, err := weft.ParseRoots(v)
		if tc.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Errorf("%s: err = %v, want it to mention %q", tc.in, err, tc.wantError)
			}
			continue
		}
		if err != nil || fmt.Sprint(roots) != tc.want {
			t.Errorf("%s: got %v, %v; want %s", tc.in, roots, err, tc.want)
		}
	}
}

// addHeadline registers a tool that asks for a sampled headline (REQUIRED)
// and, when the client offers roots, for its roots (CONDITIONAL), in one
// round.
func addHeadline(t testing.TB, s *weft.Server) {
	sampling, roots := weft.Sampling(weft.Required), weft.Roots(weft.Conditional)
	type args struct {
		Text string `json:"text"`
	}
	err := weft.AddTool(s, weft.Tool{Name: "headline", Description: "Asks the client's model for a headline.",
		Inputs: []weft.InputDeclaration{sampling, roots}},
		func(ctx context.Context, req *weft.Request, in args) (*weft.CallToolResult, error) {
			resp := req.InputResponses()
			v, ok := resp.Get("headline")
			if !ok {
				ask := weft.AskInput("headline", weft.Sample(sampling, weft.SamplingRequest{
					SystemPrompt: "You write headlines.", MaxTokens: 30,
					Messages: []weft.SamplingMessage{{Role: weft.RoleUser, Content: weft.TextContent("Headline for: " + in.Text)}}}))
				if req.ClientSupports(weft.InputRoots) {
					ask.Ask("roots", weft.ListRoots(roots))
				}
				return nil, ask
			}
			h, err := weft.ParseSamplingResult(v)
			if err != nil {
				return nil, err
			}
			out := fmt.Sprintf("%s (by %s)", h.Text(), h.Model)
			if rv, ok := resp.Get("roots"); ok {
				rs, err := weft.ParseRoots(rv)
				if err != nil {
					return nil, err
				}
				out += fmt.Sprintf("; %d roots", len(rs))
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(out)}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSamplingRoundTrip(t *testing.T) {
	srv := weft.NewServer(weft.Implementation{Name: "t", Version: "1"}, nil)
	addHeadline(t, srv)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		kinds []weft.InputKind
		keys  string
		want  string
	}{
		{"sampling only", []weft.InputKind{weft.InputSampling}, "[headline]", "Tides turn (by test-model)"},
		{"sampling and roots", []weft.InputKind{weft.InputSampling, weft.InputRoots}, "[headline roots]", "Tides turn (by test-model); 2 roots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := wefttest.NewClient(srv, wefttest.WithCapabilities(wefttest.Capabilities(tc.kinds...)))
			final, rounds, err := c.CallToolWithInput(ctx, "headline", map[string]any{"text": "the sea"},
				wefttest.Chain(wefttest.SampleText("test-model", "Tides turn"), wefttest.RootsOf("file:///a", "file:///b")), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(rounds) != 2 || fmt.Sprint(rounds[0].InputKeys()) != tc.keys {
				t.Fatalf("rounds: %d, first asked for %v", len(rounds), rounds[0].InputKeys())
			}
			if final.Text() != tc.want {
				t.Fatalf("final %q, want %q", final.Text(), tc.want)
			}
		})
	}
	// Without the sampling capability the call is refused before the tool runs.
	c := wefttest.NewClient(srv, wefttest.WithCapabilities(wefttest.Capabilities(weft.InputRoots)))
	if _, err := c.CallTool(ctx, "headline", map[string]any{"text": "x"}); err == nil || !strings.Contains(err.Error(), "-32021") {
		t.Fatalf("call without sampling: %v", err)
	}
}

// A tool asks the client's model for a reply with Sample, and reads the
// answer with ParseSamplingResult on the retry.
func ExampleSample() {
	sampling := weft.Sampling(weft.Required)
	r := weft.Sample(sampling, weft.SamplingRequest{
		SystemPrompt: "You write headlines.",
		MaxTokens:    30,
		Messages:     []weft.SamplingMessage{{Role: weft.RoleUser, Content: weft.TextContent("Headline for: the sea")}},
	})
	params, _ := exactjson.Encode(r.Params(), 0)
	fmt.Println(r.Method(), string(params))

	// What a client answers (the input response under the request's key).
	answer, _ := exactjson.Parse([]byte(`{"role":"assistant","content":{"type":"text","text":"Tides turn"},"model":"m1","stopReason":"endTurn"}`), exactjson.Limits{})
	res, err := weft.ParseSamplingResult(answer)
	fmt.Println(res.Text(), res.Model, res.StopReason, err)
	// Output:
	// sampling/createMessage {"messages":[{"role":"user","content":{"type":"text","text":"Headline for: the sea"}}],"systemPrompt":"You write headlines.","maxTokens":30}
	// Tides turn m1 endTurn <nil>
}
