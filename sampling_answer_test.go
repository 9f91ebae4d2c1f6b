package weft

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

func TestSamplingAnswer(t *testing.T) {
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
			r, present, err := Sampling(RequiredCapability).Answer(&Request{retry: &retryState{inputResponses: InputResponses{exactjson.Object(exactjson.Field("k", v))}}}, "k")
			if !present {
				t.Fatal("the response is not present")
			}
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Text() != tc.text || len(r.Content) != tc.blocks || r.StopReason != tc.stop || r.Model != "m" || r.Role != RoleAssistant {
				t.Errorf("got %+v (text %q)", r, r.Text())
			}
		})
	}
}

func TestRootsAnswer(t *testing.T) {
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
		roots, present, err := Roots(RequiredCapability).Answer(&Request{retry: &retryState{inputResponses: InputResponses{exactjson.Object(exactjson.Field("k", v))}}}, "k")
		if !present {
			t.Fatal("the response is not present")
		}
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

func TestAnswerOfAbsentKey(t *testing.T) {
	req := &Request{}
	if _, ok, err := Sampling(RequiredCapability).Answer(req, "k"); ok || err != nil {
		t.Errorf("sampling: %v %v", ok, err)
	}
	if _, ok, err := Roots(RequiredCapability).Answer(req, "k"); ok || err != nil {
		t.Errorf("roots: %v %v", ok, err)
	}
	if _, ok, err := URL(RequiredCapability).Answer(req, "k"); ok || err != nil {
		t.Errorf("URL: %v %v", ok, err)
	}
}
