package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
	"github.com/weftmcp/weft/seal"
)

// newMRTRServer is the Weft server with echo and echo_confirm
// (servers.AddConfirm), in memory.
func newMRTRServer() (*weft.Server, error) { return newMRTRServerWith(weft.Options{}) }

func newMRTRServerWith(opts weft.Options) (*weft.Server, error) {
	s, err := servers.NewWeftWith(opts)
	if err == nil {
		err = servers.AddConfirm(s)
	}
	return s, err
}

// multiRound measures, in memory on one Weft server: a plain call; round 1
// of the multi-round call (input_required, state sealed); the retry (state
// opened and verified, answers checked, handler completes).
func multiRound(rounds int) ([]micro, error) {
	// Two instances sharing the state key: the first issues round 1 and
	// answers the retries, as one instance does; the other answers the
	// same retries as another instance of a fleet would, without the
	// params digest the first remembered when it sealed.
	protector := seal.NewEphemeralManager(nil)
	s, err := newMRTRServerWith(weft.Options{Protector: protector})
	if err != nil {
		return nil, err
	}
	other, err := newMRTRServerWith(weft.Options{Protector: protector})
	if err != nil {
		return nil, err
	}
	plain, first := servers.PlainCall(), servers.FirstCall()

	// Round 1 once, to get the sealed state the retries echo.
	p := servers.NewInProc(s, first)
	w := p.Do(1)
	var resp servers.Response
	if err := servers.DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp); err != nil {
		return nil, err
	}
	if w.Code != http.StatusOK || resp.Result == nil || resp.Result.ResultType != "input_required" || resp.Result.RequestState == "" {
		return nil, fmt.Errorf("round 1 did not ask for input: HTTP %d %s", w.Code, w.Body.Bytes())
	}
	retry := servers.RetryCall(resp.Result.RequestState)
	for _, h := range []*weft.Server{s, other} {
		for _, c := range []*servers.Call{plain, retry} {
			w := servers.NewInProc(h, c).Do(2)
			if err := servers.CheckEcho(w.Code, w.Header().Get("Content-Type"), w.Body.Bytes(), 2); err != nil {
				return nil, fmt.Errorf("multi-round check: %w", err)
			}
		}
	}
	run := func(s *weft.Server, c *servers.Call, want string) func() error {
		p := servers.NewInProc(s, c)
		id := int64(1)
		return func() error {
			id++
			w := p.Do(id)
			if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(want)) {
				return fmt.Errorf("HTTP %d: %s", w.Code, w.Body.Bytes())
			}
			return nil
		}
	}
	return runMicro(rounds, []bench{
		{name: "plain call", op: run(s, plain, `"resultType":"complete"`)},
		{name: "round 1: input_required + seal", op: run(s, first, `"resultType":"input_required"`)},
		{name: "retry: open + verify + complete", op: run(s, retry, `"resultType":"complete"`)},
		{name: retryElsewhere, op: run(other, retry, `"resultType":"complete"`)},
	})
}

// retryElsewhere names the retry answered by an instance that did not seal
// the state.
const retryElsewhere = "retry on another instance (params digest computed)"

// mrtrCell is one round of the multi-round comparison over loopback: the
// plain call and the retry measured back to back at one concurrency.
type mrtrCell struct {
	conc         int
	plain, retry cell
}

// mrtrLoopbackConc are the concurrencies of the loopback comparison.
var mrtrLoopbackConc = []int{1, 16}

// mrtrLoopback measures the plain call and the retry over loopback against
// one Weft server process (echo and echo_confirm): server CPU per call, as
// in the main table, with the two alternating (the starting one rotates)
// for 5 rounds per concurrency. Round 1 is answered once, and every retry
// carries its sealed state (a token may be retried until it expires).
func mrtrLoopback(ctx context.Context, cfg config, rep *report) error {
	dir, err := os.MkdirTemp("", "weft-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := buildServer(ctx, dir)
	if err != nil {
		return err
	}
	s, err := startServer(bin, "weft-mrtr")
	if err != nil {
		return err
	}
	defer s.stop()
	s.impl = "weft"
	// Round 1, once, with an id no measured retry reuses.
	c := newClient(s.addr, 1)
	first := servers.FirstCall()
	var buf bytes.Buffer
	status, ct, err := c.do(ctx, first.Header, first.Body(0), &buf)
	c.close()
	if err != nil {
		return err
	}
	var resp servers.Response
	if err := servers.DecodeResponse(ct, buf.Bytes(), &resp); err != nil {
		return err
	}
	if status != http.StatusOK || resp.Result == nil || resp.Result.ResultType != "input_required" || resp.Result.RequestState == "" {
		return fmt.Errorf("round 1 over loopback did not ask for input: HTTP %d %s", status, buf.Bytes())
	}
	calls := []*servers.Call{servers.PlainCall(), servers.RetryCall(resp.Result.RequestState)}
	ids := int64(100)
	for _, conc := range mrtrLoopbackConc {
		for r := range mrtrRoundsPer {
			var got [2]cell
			for k := range calls {
				i := (k + r) % len(calls)
				if got[i], err = measure(ctx, s, calls[i], conc, cfg.n/2, cfg.warm, r+1, &ids); err != nil {
					return fmt.Errorf("multi-round over loopback: %w", err)
				}
			}
			rep.mrtrHTTP = append(rep.mrtrHTTP, mrtrCell{conc: conc, plain: got[0], retry: got[1]})
			logf("c=%-3d round %d plain %6.1f µs/req, retry %6.1f µs/req (%.2f×)", conc, r+1,
				float64(got[0].cpuPerReq)/1e3, float64(got[1].cpuPerReq)/1e3, float64(got[1].cpuPerReq)/float64(got[0].cpuPerReq))
		}
	}
	return nil
}

// mrtrHTTPSummary returns, at one concurrency, the median plain and retry
// server CPU per call and the median of the per-round ratios.
func (r *report) mrtrHTTPSummary(conc int) (plain, retry time.Duration, ratio float64, ok bool) {
	var ps, rs []time.Duration
	var qs []float64
	for _, c := range r.mrtrHTTP {
		if c.conc == conc && c.plain.cpuPerReq > 0 {
			ps, rs = append(ps, c.plain.cpuPerReq), append(rs, c.retry.cpuPerReq)
			qs = append(qs, float64(c.retry.cpuPerReq)/float64(c.plain.cpuPerReq))
		}
	}
	if len(qs) == 0 {
		return 0, 0, 0, false
	}
	return median(ps), median(rs), median(qs), true
}
