package elicit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

func TestParseResult(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		action  Action
		content string // "" means null content
		wantErr bool
	}{
		{"accept with content", `{"action":"accept","content":{"name":"octocat","n":3.50,"b":true,"tags":["a","b"],"empty":[]}}`, Accepted, `{"name":"octocat","n":3.50,"b":true,"tags":["a","b"],"empty":[]}`, false},
		{"accept without content", `{"action":"accept"}`, Accepted, "", false},
		{"accept null content", `{"action":"accept","content":null}`, Accepted, "", false},
		{"accept empty content", `{"action":"accept","content":{}}`, Accepted, `{}`, false},
		{"decline", `{"action":"decline"}`, Declined, "", false},
		{"cancel", `{"action":"cancel"}`, Cancelled, "", false},
		{"cancel with null content", `{"action":"cancel","content":null}`, Cancelled, "", false},
		{"extra members ignored", `{"action":"decline","_meta":{"x":1},"resultType":"complete"}`, Declined, "", false},
		{"not object", `"accept"`, 0, "", true},
		{"null", `null`, 0, "", true},
		{"missing action", `{"content":{}}`, 0, "", true},
		{"unknown action", `{"action":"ACCEPT"}`, 0, "", true},
		{"action not string", `{"action":1}`, 0, "", true},
		{"decline with content", `{"action":"decline","content":{"a":"b"}}`, 0, "", true},
		{"cancel with empty content", `{"action":"cancel","content":{}}`, 0, "", true},
		{"content array", `{"action":"accept","content":["a"]}`, 0, "", true},
		{"content string", `{"action":"accept","content":"a"}`, 0, "", true},
		{"null value", `{"action":"accept","content":{"a":null}}`, 0, "", true},
		{"nested object", `{"action":"accept","content":{"a":{"b":1}}}`, 0, "", true},
		{"array of numbers", `{"action":"accept","content":{"a":[1]}}`, 0, "", true},
		{"nested array", `{"action":"accept","content":{"a":[["x"]]}}`, 0, "", true},
		{"array with null", `{"action":"accept","content":{"a":["x",null]}}`, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseResult(mustParse(t, tt.in))
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidResult) {
					t.Fatalf("ParseResult = %+v, %v; want ErrInvalidResult", r, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseResult: %v", err)
			}
			if r.Action != tt.action {
				t.Errorf("action %v, want %v", r.Action, tt.action)
			}
			want := exactjson.Null()
			if tt.content != "" {
				want = mustParse(t, tt.content)
			}
			if !exactjson.Equal(r.Content, want) {
				t.Errorf("content %s, want %s", r.Content, want)
			}
			if r.Accepted() != (tt.action == Accepted) || r.Declined() != (tt.action == Declined) || r.Cancelled() != (tt.action == Cancelled) {
				t.Error("helpers disagree with Action")
			}
		})
	}
}

func TestParseResultDuplicates(t *testing.T) {
	dupAction := exactjson.Object(exactjson.Field("action", exactjson.String("decline")), exactjson.Field("action", exactjson.String("accept")))
	if _, err := ParseResult(dupAction); !errors.Is(err, ErrInvalidResult) {
		t.Fatalf("duplicate action: %v", err)
	}
	dupContent := exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(exactjson.Field("a", exactjson.Int(1)), exactjson.Field("a", exactjson.Int(2)))))
	if _, err := ParseResult(dupContent); !errors.Is(err, ErrInvalidResult) {
		t.Fatalf("duplicate content member: %v", err)
	}
	// Small objects are checked pairwise, larger ones through a set: a
	// duplicate is found wherever it is, and distinct names pass.
	for _, n := range []int{2, 8, 9, 40} {
		for _, dupAt := range []int{-1, 1, n - 1} {
			ms := make([]exactjson.Member, n)
			for i := range ms {
				ms[i] = exactjson.Field(fmt.Sprintf("f%d", i), exactjson.Int(int64(i)))
			}
			if dupAt >= 0 {
				ms[dupAt].Name = "f0"
			}
			_, err := ParseResult(exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", exactjson.Object(ms...))))
			if (err != nil) != (dupAt >= 0) {
				t.Errorf("%d members, duplicate at %d: %v", n, dupAt, err)
			}
		}
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Action]string{Accepted: "accept", Declined: "decline", Cancelled: "cancel", 0: "Action(0)"} {
		if o.String() != want {
			t.Errorf("%d.String() = %q", o, o.String())
		}
	}
}

func TestAnswer(t *testing.T) {
	form, err := BuildSchema(
		StringField("name").Required(),
		IntegerField("age").MinInt(18))
	if err != nil {
		t.Fatal(err)
	}
	var link *Schema // URL mode has no schema
	tests := []struct {
		name     string
		schema   *Schema
		response string
		content  string // "" means null
		outcome  Action
		errIs    error
	}{
		{"form accept", form, `{"action":"accept","content":{"name":"Ann","age":30}}`, `{"name":"Ann","age":30}`, Accepted, nil},
		{"form accept invalid", form, `{"action":"accept","content":{"name":"Ann","age":17}}`, "", Accepted, ErrInvalidContent},
		{"form accept unexpected field", form, `{"action":"accept","content":{"name":"Ann","role":"admin"}}`, "", Accepted, ErrInvalidContent},
		{"form accept without content", form, `{"action":"accept"}`, "", Accepted, ErrInvalidContent},
		{"form decline", form, `{"action":"decline"}`, "", Declined, nil},
		{"form cancel", form, `{"action":"cancel"}`, "", Cancelled, nil},
		{"form malformed", form, `{"action":"maybe"}`, "", 0, ErrInvalidResult},
		{"form missing response", form, `null`, "", 0, ErrInvalidResult},
		{"url accept", link, `{"action":"accept"}`, "", Accepted, nil},
		{"url accept with content", link, `{"action":"accept","content":{"a":"b"}}`, "", Accepted, ErrInvalidResult},
		{"url decline", link, `{"action":"decline"}`, "", Declined, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content, outcome, err := Answer(tt.schema, mustParse(t, tt.response))
			if outcome != tt.outcome {
				t.Errorf("outcome %v, want %v", outcome, tt.outcome)
			}
			if tt.errIs == nil && err != nil {
				t.Fatalf("error %v", err)
			}
			if tt.errIs != nil && !errors.Is(err, tt.errIs) {
				t.Fatalf("error %v, want %v", err, tt.errIs)
			}
			want := exactjson.Null()
			if tt.content != "" {
				want = mustParse(t, tt.content)
			}
			if !exactjson.Equal(content, want) {
				t.Errorf("content %s, want %s", content, want)
			}
		})
	}
	empty, err := BuildSchema()
	if err != nil {
		t.Fatal(err)
	}
	content, outcome, err := Answer(empty, mustParse(t, `{"action":"accept"}`))
	if err != nil || outcome != Accepted || !exactjson.Equal(content, exactjson.Object()) {
		t.Fatalf("empty form accept = %s, %v, %v", content, outcome, err)
	}
}
