package gateway_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/gateway"
)

// logBuffer is an io.Writer for a logger, safe to read while written.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// records returns the log's records whose message contains msg.
func (l *logBuffer) records(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for r := range strings.Lines(l.b.String()) {
		if strings.Contains(r, msg) {
			out = append(out, r)
		}
	}
	return out
}

// Messages of the gateway's log about stdout noise.
const (
	noiseSkipped = "upstream wrote a line that is no MCP message on stdout; skipped"
	noiseMuted   = "upstream writes much on stdout; logging only a count from now on"
	noiseSummary = "upstream keeps writing lines that are no MCP messages on stdout"
	noiseEnded   = "upstream process ended; it wrote lines that are no MCP messages on stdout"
)

// TestUpstreamStdoutNoise runs a stdio upstream that prints a banner on
// stdout when it starts and a line before each answer: with stdoutNoise
// "log" its calls succeed and the gateway logs the lines, boundedly; a
// call the upstream answers with garbage only times out, and the error
// logged quotes the garbage; without the option the upstream cannot even
// start.
func TestUpstreamStdoutNoise(t *testing.T) {
	var fakeLog string
	noisy := func(t *testing.T, mode string) gateway.UpstreamConfig {
		up, log := fakeUpstream(t, "noisy")
		fakeLog = log
		up.MaxProcesses = 1 // one process, whose lines the test counts
		up.Env[fakeNoiseEnv] = "1"
		up.StdoutNoise = mode
		up.CallTimeout = gateway.Duration(500 * time.Millisecond)
		up.ShutdownTimeout = gateway.Duration(time.Second)
		return up
	}
	t.Run("fail", func(t *testing.T) {
		for _, mode := range []string{"", gateway.StdoutNoiseFail} {
			_, err := gateway.New(context.Background(), nil, &gateway.Config{Upstreams: []gateway.UpstreamConfig{noisy(t, mode)}}, nil)
			if err == nil || !strings.Contains(err.Error(), "not a JSON-RPC message") || !strings.Contains(err.Error(), "Fake MCP server 1.0 starting") {
				t.Fatalf("stdoutNoise %q: New = %v, want the banner breaking the upstream", mode, err)
			}
		}
	})
	t.Run("log", func(t *testing.T) {
		var logs logBuffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		up := noisy(t, gateway.StdoutNoiseLog)
		in := startGatewayLogging(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil, nil, log)
		c := fakeClient(t, in, client.Handlers{})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := range 2 {
			if res, err := c.CallTool(ctx, "echo", map[string]any{"i": i}); err != nil || !strings.Contains(res.Text(), `"i":`) {
				t.Fatalf("echo %d: %v %v", i, res, err)
			}
		}
		skipped := logs.records(noiseSkipped)
		for _, want := range []string{"Fake MCP server 1.0 starting (stdio)", `{\"level\":\"info\",\"msg\":\"ready\"}`, "handling echo"} {
			if !strings.Contains(strings.Join(skipped, ""), want) {
				t.Errorf("the log does not report %s:\n%s", want, strings.Join(skipped, ""))
			}
		}
		for _, r := range skipped {
			if !strings.Contains(r, "level=WARN") || !strings.Contains(r, "upstream=noisy") {
				t.Errorf("record %q: want level WARN and the upstream's name", r)
			}
		}

		// A chatty upstream does not flood the log.
		if res, err := c.CallTool(ctx, "chatter", nil); err != nil || res.Text() != "chattered" {
			t.Fatalf("chatter: %v %v", res, err)
		}
		if n := len(logs.records(noiseSkipped)); n != 10 {
			t.Errorf("%d lines logged one by one, want 10", n)
		}
		// 2 + 2 + 101 lines: summaries at 16, 32 and 64.
		if m, s := len(logs.records(noiseMuted)), logs.records(noiseSummary); m != 1 || len(s) != 3 || !strings.Contains(s[2], "count=64") {
			t.Errorf("%d notices of muting and summaries %q, want 1 and 3 (the last at 64)", m, s)
		}
		if res, err := c.CallTool(ctx, "echo", map[string]any{"after": "chatter"}); err != nil || !strings.Contains(res.Text(), "chatter") {
			t.Fatalf("echo after chatter: %v %v", res, err)
		}
		if r := logs.records("upstream connected"); len(r) != 1 {
			t.Errorf("the upstream was connected %d times, want once:\n%s", len(r), strings.Join(r, ""))
		}

		// An upstream that breaks: the error logged quotes the last lines.
		if _, err := c.CallTool(ctx, "crash", nil); rpcCode(err) != gateway.CodeUpstreamUnavailable || !strings.Contains(err.Error(), "the connection to it broke") {
			t.Fatalf("crash: %v", err)
		}
		failed := strings.Join(logs.records("upstream call failed"), "")
		if !strings.Contains(failed, "exit status 3") || !strings.Contains(failed, `107 lines that are no MCP messages on stdout, the last 5: \"chatter 97\", \"chatter 98\", \"chatter 99\", \"handling echo\", \"handling crash\"`) {
			t.Errorf("the failure logged does not quote the noise:\n%s", failed)
		}
		waitFor(t, "the process's summary", func() bool { return len(logs.records(noiseEnded)) > 0 })
		if e := logs.records(noiseEnded); len(e) != 1 || !strings.Contains(e[0], "count=107") {
			t.Errorf("summary at the end %q, want one with count=107", e)
		}

		// Garbage instead of an answer (on a new process): the call times
		// out, and the error logged says what the upstream wrote meanwhile;
		// the process, whose server never answered the call, is stopped.
		_, err := c.CallTool(ctx, "garbage", nil)
		if rpcCode(err) != gateway.CodeUpstreamUnavailable || !strings.Contains(err.Error(), "did not answer in time") {
			t.Fatalf("garbage: %v, want -31050 did not answer in time", err)
		}
		waitFor(t, "the upstream to see the cancellation", func() bool { return strings.Contains(readLog(t, fakeLog), "cancelled") })
		failed = strings.Join(logs.records("upstream call failed"), "")
		if !strings.Contains(failed, "deadline exceeded") || !strings.Contains(failed, `wrote 2 lines that are no MCP messages on stdout`) ||
			!strings.Contains(failed, `handling garbage`) || !strings.Contains(failed, `this is not JSON`) {
			t.Errorf("the failure logged does not quote the noise:\n%s", failed)
		}
		waitFor(t, "the timed-out call's process to stop", func() bool { return strings.Contains(readLog(t, fakeLog), "eof") })
		if err := in.gw.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
