package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weftmcp/weft/bench/servers"
)

// Gateway overhead (issue #16): the echo call sent directly to a Weft
// server process, and through a gateway process in front of it
// (benchserver -impl gateway) speaking 2026-07-28 to it or holding a
// 2025-11-25 session with it. The three alternate (the first rotates) in
// each round; a gateway's server CPU is its own plus the upstream's.

// gatewayPaths are the measured paths, in order. auth: the gateway
// validates each caller's JWT (ES256, from a JWKS file), as `weft gateway`
// with an auth.jwt section does.
var gatewayPaths = []struct {
	name, protocol string
	auth           bool
}{
	{"direct to the upstream", "", false},
	{"through the gateway, 2026-07-28 upstream", "2026-07-28", false},
	{"through the gateway, 2026-07-28 upstream, callers' JWTs validated", "2026-07-28", true},
	{"through the gateway, 2025-11-25 session upstream", "2025-11-25", false},
}

// gatewayConc are the concurrencies of the gateway rows.
var gatewayConc = []int{1, 16}

func gatewayOverhead(ctx context.Context, cfg config, rep *report) error {
	dir, err := os.MkdirTemp("", "weft-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := buildServer(ctx, dir)
	if err != nil {
		return err
	}
	up, err := startServer(bin, "weft-legacy")
	if err != nil {
		return err
	}
	defer up.stop()
	srvs := []*server{up}
	defer func() {
		for _, s := range srvs[1:] {
			s.stop()
		}
	}()
	key, err := servers.NewBenchKey()
	if err != nil {
		return err
	}
	jwks := filepath.Join(dir, "jwks.json")
	if err := key.WriteJWKS(jwks); err != nil {
		return err
	}
	token, err := key.Token("bench-caller")
	if err != nil {
		return err
	}
	calls := []*servers.Call{servers.EchoCall()}
	for _, p := range gatewayPaths[1:] {
		args := []string{"-upstream", "http://" + up.addr + servers.Path, "-protocol", p.protocol}
		call := servers.EchoCall()
		if p.auth {
			args = append(args, "-jwks", jwks)
			call.Header.Set("Authorization", "Bearer "+token)
		}
		g, err := startServer(bin, "gateway", args...)
		if err != nil {
			return err
		}
		g.behind = up
		srvs = append(srvs, g)
		calls = append(calls, call)
	}
	for i, s := range srvs {
		s.impl = gatewayPaths[i].name
		if err := verifyCall(ctx, s.addr, calls[i]); err != nil {
			return fmt.Errorf("%s does not answer the echo call correctly: %w", s.impl, err)
		}
	}
	ids := int64(100)
	for _, c := range gatewayConc {
		for r := range cfg.rounds {
			for k := range srvs {
				i := (k + r) % len(srvs)
				s := srvs[i]
				cl, err := measure(ctx, s, calls[i], c, cfg.n/2, cfg.warm, r+1, &ids)
				if err != nil {
					return fmt.Errorf("gateway overhead: %w", err)
				}
				rep.gateway = append(rep.gateway, cl)
				logf("c=%-3d round %d %-48s %8.0f req/s  p50 %8s  cpu %6.1f µs/req (own %6.1f)", c, r+1, s.impl,
					cl.throughput, fmtDur(float64(cl.p50)), float64(cl.cpuPerReq)/1e3, float64(cl.ownPerReq)/1e3)
			}
		}
	}
	return nil
}

// gatewaySummary is the median over rounds of one path at one concurrency.
func (r *report) gatewaySummary(path string, conc int) (summary, bool) {
	s := summary{impl: path, conc: conc}
	var tp []float64
	var p50, p99, cpu, own []time.Duration
	for _, c := range r.gateway {
		if c.impl == path && c.conc == conc {
			tp, p50, p99, cpu = append(tp, c.throughput), append(p50, c.p50), append(p99, c.p99), append(cpu, c.cpuPerReq)
			own = append(own, c.ownPerReq)
		}
	}
	if len(tp) == 0 {
		return s, false
	}
	s.throughput, s.p50, s.p99, s.cpuReq = median(tp), median(p50), median(p99), median(cpu)
	s.ownReq = median(own)
	return s, true
}

// gatewayMarkdown is the report's gateway section.
func (r *report) gatewayMarkdown(p func(string, ...any)) {
	if len(r.gateway) == 0 {
		return
	}
	p("## Gateway overhead (issue #16)\n\n")
	p("The echo call of the main table sent directly to a Weft server process (`benchserver -impl weft-legacy`: Weft serving 2025-11-25 sessions too), "+
		"and through a gateway process in front of it (`benchserver -impl gateway`: `gateway.New` on a Weft server, no prefix, so the request is the same) "+
		"that speaks 2026-07-28 to the upstream (also with each caller's JWT validated: ES256 against a JWKS file, issuer, audience, lifetime, as an auth.jwt section does), or holds a 2025-11-25 session with it. "+
		"The paths alternate (the first rotates), %d rounds of %d calls per concurrency, medians. "+
		"A gateway's server CPU/req is the gateway process's (the next column) plus the upstream's; \"added\" columns are the differences from the direct path. "+
		"At 1 client every process idles between calls, and each of a call's wake-ups costs the Go scheduler's spinning: that CPU grows with the processes and hops a call crosses.\n\n",
		r.cfg.rounds, r.cfg.n/2)
	p("| clients | path | req/s | p50 | p99 | server CPU/req | gateway process CPU/req | added p50 | added CPU/req |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range gatewayConc {
		d, ok := r.gatewaySummary(gatewayPaths[0].name, c)
		if !ok {
			continue
		}
		for _, gp := range gatewayPaths {
			s, ok := r.gatewaySummary(gp.name, c)
			if !ok {
				continue
			}
			added, addedCPU, own := "", "", ""
			if gp.protocol != "" {
				added, addedCPU, own = us(s.p50-d.p50), us(s.cpuReq-d.cpuReq), us(s.ownReq)
			}
			p("| %d | %s | %.0f | %s | %s | %s | %s | %s | %s |\n", c, gp.name, s.throughput, us(s.p50), us(s.p99), us(s.cpuReq), own, added, addedCPU)
		}
	}
	p("\n")
}
