package weft

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestArgumentsAsAndParamsAs: an untyped handler reads its arguments and
// params as Go values; a value of the wrong shape is an error naming what
// did not decode.
func TestArgumentsAsAndParamsAs(t *testing.T) {
	type args struct {
		N    int    `json:"n"`
		Name string `json:"name"`
	}
	s, _ := newServer(t, nil)
	must(t, s.AddTool(Tool{Name: "as", Description: "Reads its arguments as Go values."},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			a, err := ArgumentsAs[args](req)
			if err != nil {
				return TextResult("arguments error: " + err.Error()), nil
			}
			p, err := ParamsAs[struct {
				Name string `json:"name"`
			}](req)
			if err != nil {
				return TextResult("params error: " + err.Error()), nil
			}
			return TextResult(fmt.Sprintf("%s n=%d name=%q", p.Name, a.N, a.Name)), nil
		}))
	ts := startHTTP(t, s)
	for i, c := range []struct {
		name string
		args M
		want string
	}{
		{"values", M{"n": 7, "name": "tea"}, `as n=7 name="tea"`},
		{"absent", nil, `as n=0 name=""`},
		{"wrong type", M{"n": "seven"}, "arguments error: weft: arguments:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rpc(t, ts.URL, i+1, "tools/call", toolCall(nil, "as", c.args))
			if got := r.text(t); !strings.HasPrefix(got, c.want) {
				t.Errorf("got %q, want prefix %q", got, c.want)
			}
		})
	}
}
