package client

import (
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

func TestResultText(t *testing.T) {
	for _, tt := range []struct {
		name, result, want string
	}{
		{"no contents", `{"contents":[]}`, ""},
		{"text", `{"contents":[{"uri":"a","text":"one"}]}`, "one"},
		{"text and blob", `{"contents":[{"uri":"a","text":"one"},{"uri":"b","blob":"AAE="},{"uri":"c","text":""},{"uri":"d","text":"two"}]}`, "one\n\ntwo"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := exactjson.ParseString(tt.result, exactjson.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if got := parseResourceResult(v).Text(); got != tt.want {
				t.Errorf("Text() = %q, want %q", got, tt.want)
			}
		})
	}
}
