package weft

import (
	"bytes"
	"runtime/pprof"
	"strings"
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

// weftGoroutines counts the goroutines, other than the caller, with a
// frame of this package on their stack.
func weftGoroutines(t *testing.T) int {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for g := range strings.SplitSeq(buf.String(), "\n\n") {
		if strings.Contains(g, "github.com/weftmcp/weft.") && !strings.Contains(g, "weft.weftGoroutines") {
			n++
		}
	}
	return n
}

// An idle listen stream costs the server one goroutine of Weft's (over
// HTTP/1.1 the detached stream's reader; net/http keeps none): keep-alive
// comments come from a timer, not a goroutine of their own.
func TestListenIdleStreamIsOneGoroutine(t *testing.T) {
	s := listenServer(t, nil)
	ts := startHTTP(t, s)
	_, first, _ := listen(t, ts.URL, "warm", M{"toolsListChanged": true}) // whatever starts lazily has started
	before := weftGoroutines(t)
	const streams = 3
	var open []*sseStream
	for i := range streams {
		_, st, _ := listen(t, ts.URL, i, M{"toolsListChanged": true})
		open = append(open, st)
	}
	if got := weftGoroutines(t) - before; got != streams {
		t.Fatalf("%d idle listen streams added %d goroutines with Weft frames, want %d", streams, got, streams)
	}
	// They are live: one catalog change reaches every one.
	addText(t, s, "t2", "two")
	for _, st := range append(open, first) {
		if m, f := st.nextMsg(); m.Method != "notifications/tools/list_changed" {
			t.Fatalf("got %s, want the tools list_changed", f)
		}
	}
}
