package weft_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/wefttest"
)

func TestSampleParams(t *testing.T) {
	d := weft.Sampling(weft.RequiredCapability)
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
			r := d.Ask(tc.req)
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

// addHeadline registers a tool that asks for a sampled headline (REQUIRED)
// and, when the client offers roots, for its roots (CONDITIONAL), in one
// round.
func addHeadline(t testing.TB, s *weft.Server) {
	sampling, roots := weft.Sampling(weft.RequiredCapability), weft.Roots(weft.ConditionalCapability)
	type args struct {
		Text string `json:"text"`
	}
	err := weft.AddTool(s, weft.Tool{Name: "headline", Description: "Asks the client's model for a headline.",
		Inputs: []weft.Input{sampling, roots}},
		func(ctx context.Context, req *weft.Request, in args) (*weft.CallToolResult, error) {
			h, ok, err := sampling.Answer(req, "headline")
			if !ok {
				ask := weft.AskInput("headline", sampling.Ask(weft.SamplingRequest{
					SystemPrompt: "You write headlines.", MaxTokens: 30,
					Messages: []weft.SamplingMessage{{Role: weft.RoleUser, Content: weft.TextContent("Headline for: " + in.Text)}}}))
				if req.ClientSupports(roots) {
					ask.Ask("roots", roots.Ask())
				}
				return nil, ask
			}
			if err != nil {
				return nil, err
			}
			out := fmt.Sprintf("%s (by %s)", h.Text(), h.Model)
			rs, ok, err := roots.Answer(req, "roots")
			if err != nil {
				return nil, err
			}
			if ok {
				out += fmt.Sprintf("; %d roots", len(rs))
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(out)}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSamplingRoundTrip(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "t", Version: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addHeadline(t, srv)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		roots bool // whether the client answers roots too
		asked string
		want  string
	}{
		{"sampling only", false, "[sampling]", "Tides turn (by test-model)"},
		{"sampling and roots", true, "[roots sampling]", "Tides turn (by test-model); 2 roots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			ask := func(kind string) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, kind)
			}
			sample := wefttest.SampleText("test-model", "Tides turn")
			h := client.Handlers{Sample: func(ctx context.Context, p exactjson.Value) (exactjson.Value, error) {
				ask("sampling")
				return sample(ctx, p)
			}}
			if tc.roots {
				roots := wefttest.RootsOf("file:///a", "file:///b")
				h.Roots = func(ctx context.Context) (exactjson.Value, error) {
					ask("roots")
					return roots(ctx)
				}
			}
			c := wefttest.NewClient(t, srv, &wefttest.Options{Client: client.Options{Handlers: h}})
			final, err := c.CallTool(ctx, "headline", map[string]any{"text": "the sea"})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(asked)
			if fmt.Sprint(asked) != tc.asked {
				t.Fatalf("asked for %v, want %s", asked, tc.asked)
			}
			if final.Text() != tc.want {
				t.Fatalf("final %q, want %q", final.Text(), tc.want)
			}
		})
	}
	// Without the sampling capability the call is refused before the tool runs.
	c := wefttest.NewClient(t, srv, &wefttest.Options{Client: client.Options{Handlers: client.Handlers{Roots: wefttest.RootsOf()}}})
	if _, err := c.CallTool(ctx, "headline", map[string]any{"text": "x"}); err == nil || !strings.Contains(err.Error(), "-32021") {
		t.Fatalf("call without sampling: %v", err)
	}
}

// A tool asks the client's model for a reply: the sampling declaration
// builds the request and reads the answer on the retry. The client's
// Sample handler plays its model.
func ExampleSamplingInput() {
	s, err := weft.NewServer(weft.Implementation{Name: "news", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	sampling := weft.Sampling(weft.RequiredCapability)
	type args struct {
		Text string `json:"text"`
	}
	err = weft.AddTool(s, weft.Tool{Name: "headline", Description: "Asks the client's model for a headline.",
		Inputs: []weft.Input{sampling}},
		func(ctx context.Context, req *weft.Request, in args) (*weft.CallToolResult, error) {
			h, ok, err := sampling.Answer(req, "headline")
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, weft.AskInput("headline", sampling.Ask(weft.SamplingRequest{
					SystemPrompt: "You write headlines.",
					MaxTokens:    30,
					Messages:     []weft.SamplingMessage{{Role: weft.RoleUser, Content: weft.TextContent("Headline for: " + in.Text)}},
				}))
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(h.Text() + " (by " + h.Model + ")")}}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	c := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{Handlers: client.Handlers{
		Sample: func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
			fmt.Println(params)
			return exactjson.ParseString(`{"role":"assistant","content":{"type":"text","text":"Tides turn"},"model":"m1"}`, exactjson.Limits{})
		}}})

	final, err := c.CallTool(context.Background(), "headline", map[string]any{"text": "the sea"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.Text())
	// Output:
	// {"messages":[{"role":"user","content":{"type":"text","text":"Headline for: the sea"}}],"systemPrompt":"You write headlines.","maxTokens":30}
	// Tides turn (by m1)
}
