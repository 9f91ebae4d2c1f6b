package weft

import (
	"bytes"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// The notification a listen stream sends, assembled from the encoding
// shared by every stream and the stream's own tail, is byte for byte the
// frame appendFrame encodes from the event and the stream's _meta.
func TestListenFrameMatchesAppendFrame(t *testing.T) {
	metas := map[string]exactjson.Value{
		"integer id": exactjson.Object(exactjson.Field(metaSubscriptionID, exactjson.Int(42))),
		"string id":  exactjson.Object(exactjson.Field(metaSubscriptionID, exactjson.String("a\"b\\c\u2028</script>"))),
	}
	events := []struct {
		name string
		ev   event
	}{
		{"tools", event{kind: evToolsListChanged}},
		{"prompts", event{kind: evPromptsListChanged}},
		{"resources", event{kind: evResourcesListChanged}},
		{"updated", event{kind: evResourceUpdated, uri: "file:///a/b.txt"}},
		{"updated, escapes", event{kind: evResourceUpdated, uri: "x:/\"quoted\"\n\u00e9\U0001F600\x7f"}},
	}
	for mname, meta := range metas {
		tail, err := listenTail(meta)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range events {
			t.Run(tc.name+", "+mname, func(t *testing.T) {
				want, err := appendFrame(nil, tc.ev.frame(exactjson.Field("_meta", meta)))
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range []event{tc.ev, {kind: tc.ev.kind, uri: tc.ev.uri, open: tc.ev.openFrame()}} {
					f := ev.listenFrame(tail)
					got, err := appendFrame([]byte("data: "), f)
					if err != nil {
						t.Fatal(err)
					}
					if got = got[len("data: "):]; !bytes.Equal(got, want) {
						t.Fatalf("listen frame\n%s\nwant\n%s", got, want)
					}
					if f.method != tc.ev.method() {
						t.Fatalf("method %q, want %q", f.method, tc.ev.method())
					}
					if _, err := exactjson.Parse(got, exactjson.Limits{}); err != nil {
						t.Fatalf("not JSON: %v: %s", err, got)
					}
				}
			})
		}
	}
}
