package weft

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/weftmcp/weft/task"
)

// Health: liveness and readiness for load balancers and orchestrators, and
// the drain that takes an instance out of rotation before it stops.

// readinessTimeout bounds one readiness check of the configured stores.
const readinessTimeout = 2 * time.Second

// LivenessHandler answers GET and HEAD with 200 {"status":"alive"} while the
// server has not been shut down, and 503 {"status":"stopped"} after. It
// checks nothing else: a process that answers is alive. It applies no Host
// or Origin check (a load balancer's probe often sends neither), so mount it
// on a path of its own, next to the MCP endpoint or on an admin listener.
func (s *Server) LivenessHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isClosed(s.done) {
			writeHealth(w, r, http.StatusServiceUnavailable, "stopped")
			return
		}
		writeHealth(w, r, http.StatusOK, "alive")
	})
}

// ReadinessHandler answers GET and HEAD with 200 {"status":"ready"} when the
// server should get new requests, and 503 otherwise: while it drains
// ({"status":"draining"}: after [Server.Drain] or [Server.Shutdown]), or
// while a configured store does not answer within 2 seconds or
// [Options.ReadinessCheck] fails ({"status":"unavailable","check":NAME};
// the error is logged, not sent). Like LivenessHandler it applies no Host
// or Origin check.
func (s *Server) ReadinessHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Draining() {
			writeHealth(w, r, http.StatusServiceUnavailable, "draining")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), readinessTimeout)
		defer cancel()
		if name, err := s.checkReady(ctx); err != nil {
			s.log.Warn("weft: not ready", "check", name, "err", err)
			writeHealth(w, r, http.StatusServiceUnavailable, "unavailable", name)
			return
		}
		writeHealth(w, r, http.StatusOK, "ready")
	})
}

// Drain takes the server out of rotation: from now on ReadinessHandler
// answers 503, while every request is still served as before. Call it on
// SIGTERM, wait until the load balancer has seen the failing probe (its
// check interval times its fall count), then call Shutdown. Drain cannot be
// undone; a drained server is shut down and replaced.
func (s *Server) Drain() { s.draining.Store(true) }

// Draining reports whether Drain or Shutdown was called.
func (s *Server) Draining() bool { return s.draining.Load() || s.closing.Load() }

// checkReady probes each configured store with a read of an id that does
// not exist (ErrNotFound is the healthy answer) and runs
// Options.ReadinessCheck; it returns the name of the first failing check.
func (s *Server) checkReady(ctx context.Context) (string, error) {
	if e := s.taskEngine(); e != nil {
		if _, err := e.store.Get(ctx, readinessProbeID); err != nil && !errors.Is(err, task.ErrNotFound) {
			return "tasks", err
		}
	}
	for _, a := range s.adapters {
		if name, err := a.ready(ctx); err != nil {
			return name, err
		}
	}
	if check := s.opts.ReadinessCheck; check != nil {
		if err := check(ctx); err != nil {
			return "application", err
		}
	}
	return "", nil
}

// readinessProbeID is a well-formed id no task or session ever has (theirs
// are random and longer).
const readinessProbeID = "weft-readiness-probe"

func writeHealth(w http.ResponseWriter, r *http.Request, status int, state string, check ...string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	b := append([]byte(`{"status":`), appendQuoted(nil, state)...)
	if len(check) > 0 {
		b = append(append(b, `,"check":`...), appendQuoted(nil, check[0])...)
	}
	_, _ = w.Write(append(b, "}\n"...))
}
