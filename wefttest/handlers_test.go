package wefttest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/wefttest"
)

func TestHandlers(t *testing.T) {
	form := exactjson.Object(exactjson.Field("message", exactjson.String("OK?")))
	url := exactjson.Object(exactjson.Field("mode", exactjson.String("url")), exactjson.Field("url", exactjson.String("https://example.com/x")))
	for _, tt := range []struct {
		name    string
		elicit  wefttest.ElicitFunc
		params  exactjson.Value
		want    string // the answer, or the start of the error
		wantErr bool
	}{
		{"accept a form", wefttest.AcceptForm(map[string]any{"ok": true}), form, `{"action":"accept","content":{"ok":true}}`, false},
		{"accept a form with nothing", wefttest.AcceptForm(nil), form, `{"action":"accept","content":{}}`, false},
		{"accept a form with a struct", wefttest.AcceptForm(struct {
			N int `json:"n"`
		}{3}), form, `{"action":"accept","content":{"n":3}}`, false},
		{"form content not an object", wefttest.AcceptForm([]int{1}), form, "wefttest: form content is array", true},
		{"a form answer to a URL", wefttest.AcceptForm(nil), url, "wefttest: AcceptForm got a url elicitation", true},
		{"accept a URL", wefttest.AcceptURL(), url, `{"action":"accept"}`, false},
		{"a URL answer to a form", wefttest.AcceptURL(), form, "wefttest: AcceptURL got a form elicitation", true},
		{"decline", wefttest.Decline(), form, `{"action":"decline"}`, false},
		{"cancel", wefttest.Cancel(), url, `{"action":"cancel"}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.elicit(context.Background(), tt.params)
			switch {
			case tt.wantErr && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			case !tt.wantErr && (err != nil || got.String() != tt.want):
				t.Errorf("got %s, %v, want %s", got, err, tt.want)
			}
		})
	}
	s, err := wefttest.SampleText("m", "hi")(context.Background(), exactjson.Object())
	if want := `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m","stopReason":"endTurn"}`; err != nil || s.String() != want {
		t.Errorf("SampleText: %s, %v", s, err)
	}
	r, err := wefttest.RootsOf("file:///a", "file:///b")(context.Background())
	if want := `{"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}`; err != nil || r.String() != want {
		t.Errorf("RootsOf: %s, %v", r, err)
	}
	if r, _ := wefttest.RootsOf()(context.Background()); r.String() != `{"roots":[]}` {
		t.Errorf("RootsOf(): %s", r)
	}
}
