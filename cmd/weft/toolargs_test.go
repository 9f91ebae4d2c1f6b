package main

import (
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

func TestKeyValueArgs(t *testing.T) {
	schema, err := exactjson.Parse([]byte(`{"type":"object","properties":{
		"name":{"type":"string"},"count":{"type":"integer"},"ok":{"type":"boolean"},
		"tags":{"type":"array","items":{"type":"string"}},"opt":{"type":["string","null"]},
		"mode":{"enum":["a","b"]},"free":{}},"required":["name"]}`), exactjson.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := exactjson.Parse([]byte(`{"name":"x","keep":1}`), exactjson.Limits{})
	for _, c := range []struct {
		words []string
		want  string // the arguments, or the error's text
	}{
		{[]string{"name=42"}, `{"name":"42","keep":1}`},
		{[]string{"count=3", "ok=true"}, `{"name":"x","keep":1,"count":3,"ok":true}`},
		{[]string{`tags=["a","b"]`}, `{"name":"x","keep":1,"tags":["a","b"]}`},
		{[]string{"opt=12"}, `{"name":"x","keep":1,"opt":"12"}`},
		{[]string{"mode=a"}, `{"name":"x","keep":1,"mode":"a"}`},
		{[]string{"free=7", "other=hello world"}, `{"name":"x","keep":1,"free":7,"other":"hello world"}`},
		{[]string{"name=a=b"}, `{"name":"a=b","keep":1}`},
		{[]string{"count=three"}, `argument count is an integer (written as JSON), not "three"`},
		{[]string{"ok=yes"}, `argument ok is a boolean`},
		{[]string{"tags=a"}, `argument tags is a string[]`},
		{[]string{"=1"}, `not an argument NAME=VALUE`},
	} {
		got, err := keyValueArgs(base, c.words, schema)
		text := ""
		if err != nil {
			text = err.Error()
		} else {
			text = got.String()
		}
		if !strings.Contains(text, c.want) {
			t.Errorf("%q: got %s, want %s", c.words, text, c.want)
		}
	}
}

func TestSchemaParams(t *testing.T) {
	schema, _ := exactjson.Parse([]byte(`{"type":"object","properties":{"b":{"type":"integer","description":"the b"},"a":{"type":"string"}},"required":["a"]}`), exactjson.Limits{})
	var out strings.Builder
	printParams(&out, schemaParams(schema))
	if want := "    b: integer  the b\n    a*: string\n"; out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
