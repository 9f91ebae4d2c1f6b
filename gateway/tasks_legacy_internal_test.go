package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/task"
)

// taskWire is a 2025 upstream holding one task: it works for polls
// tasks/get answers (reporting pollInterval), then completes; it records
// when each request came.
type taskWire struct {
	pollInterval int64 // ms; 0: none given
	polls        int

	mu     sync.Mutex
	seen   []string // "method@elapsed"
	t0     time.Time
	closed chan struct{}
}

func (w *taskWire) call(ctx context.Context, method string, params exactjson.Value, s *sink) (exactjson.Value, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, fmt.Sprintf("%s@%s", method, time.Since(w.t0)))
	status := "working"
	if method == "tasks/get" {
		w.polls--
		if w.polls < 0 {
			status = "completed"
		}
	}
	if method == "tasks/result" {
		return exactjson.Parse([]byte(`{"content":[{"type":"text","text":"done"}]}`), exactjson.Limits{})
	}
	fields := []exactjson.Member{exactjson.Field("taskId", exactjson.String("t1")), exactjson.Field("status", exactjson.String(status)),
		exactjson.Field("createdAt", exactjson.String("2026-01-01T00:00:00Z")), exactjson.Field("lastUpdatedAt", exactjson.String("2026-01-01T00:00:00Z")),
		exactjson.Field("ttl", exactjson.Null())}
	if w.pollInterval != 0 {
		fields = append(fields, exactjson.Field("pollInterval", exactjson.Int(w.pollInterval)))
	}
	return exactjson.Object(fields...), nil
}

func (w *taskWire) notify(context.Context, string, exactjson.Value) error { return nil }
func (w *taskWire) setSession(string, string)                             {}
func (w *taskWire) done() <-chan struct{}                                 { return w.closed }
func (w *taskWire) err() error                                            { return errUpstreamClosed }
func (w *taskWire) close() error                                          { return nil }

// The driver of a 2025 task honours the upstream's pollInterval, within
// minLegacyPoll..maxLegacyPoll (defaultLegacyPoll when none is given), and
// asks for the result once the task completed.
func TestLegacyTaskPollInterval(t *testing.T) {
	for _, tc := range []struct {
		name string
		ms   int64
		want time.Duration
	}{
		{"given", 250, 250 * time.Millisecond},
		{"none", 0, defaultLegacyPoll},
		{"too often", 1, minLegacyPoll},
		{"too rarely", 3_600_000, maxLegacyPoll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := &taskWire{pollInterval: tc.ms, polls: 2, t0: time.Now(), closed: make(chan struct{})}
				g := &Gateway{log: slog.New(slog.DiscardHandler), park: &parker{lim: InputConfig{}.withDefaults()}}
				u := &upstream{g: g, cfg: UpstreamConfig{Name: "up", URL: "http://127.0.0.1/mcp"}}
				c := &conn{name: "up", version: Version20251125, w: w}
				created, err := w.call(t.Context(), "tools/call", exactjson.Object(), nil)
				if err != nil {
					t.Fatal(err)
				}
				w.seen = nil
				rec, err := legacyTaskRecord(created)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				lt := &legacyTask{u: u, id: legacyTaskPrefix + "x", upID: rec.ID, c: c, rec: *rec, ctx: ctx, cancel: cancel,
					pending: map[string]*pendingInput{}, started: time.Now(), supports: func(string, exactjson.Value) bool { return false }}
				lt.run()
				d := tc.want
				want := []string{"tasks/get@" + d.String(), "tasks/get@" + (2 * d).String(), "tasks/get@" + (3 * d).String(),
					"tasks/result@" + (3 * d).String(), "tasks/get@" + (3 * d).String()}
				if got := strings.Join(w.seen, " "); got != strings.Join(want, " ") {
					t.Errorf("requests\n%s\nwant\n%s", got, strings.Join(want, " "))
				}
				v := lt.view()
				if v.Status != task.Completed || !strings.Contains(string(v.Result), `"done"`) {
					t.Errorf("task %+v", v)
				}
			})
		})
	}
}

// FuzzLegacyTaskRecord: a 2025 upstream's Task object (untrusted) is read
// or refused, never half-read: an accepted task has an id, a status of the
// extension, and the upstream's ttl and pollInterval as durations.
func FuzzLegacyTaskRecord(f *testing.F) {
	for _, s := range []string{
		`{"taskId":"t1","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00.5Z","ttl":null,"pollInterval":20}`,
		`{"taskId":"t2","status":"input_required","statusMessage":"m","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":300000}`,
		`{"taskId":"t3","status":"failed","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":1,"result":{},"error":[]}`,
		`{"taskId":"","status":"completed"}`, `{"taskId":"t","status":"unknown"}`, `[]`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := exactjson.Parse(b, parseLimits)
		if err != nil {
			return
		}
		rec, err := legacyTaskRecord(v)
		if err != nil {
			return
		}
		if rec.ID == "" {
			t.Fatal("a task without taskId was accepted")
		}
		switch rec.Status {
		case task.Working, task.InputRequired, task.Completed, task.Failed, task.Cancelled:
		default:
			t.Fatalf("status %q", rec.Status)
		}
		if rec.TTL < 0 || rec.PollInterval < 0 || rec.Result != nil || rec.Error != nil || rec.InputRequests != nil {
			t.Fatalf("record %+v", rec)
		}
		if ms, ok := intMember(v, "ttl"); ok && ms > 0 && ms < 1<<40 && rec.TTL != time.Duration(ms)*time.Millisecond {
			t.Fatalf("ttl %d read as %s", ms, rec.TTL)
		}
	})
}
