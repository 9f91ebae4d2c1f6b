// Package admin is the operator's control surface of a running Weft server:
// live keyring management (status, stage, activate, rotate, remove) over a
// small JSON HTTP API, so that the rotation runbook (docs/key-rotation.md)
// can be followed with commands alone.
//
// The listener is off unless the operator starts it. Handler refuses
// requests that do not come from a loopback address, that name another
// host than a loopback one in Host or come from a web origin other than a
// loopback one (DNS rebinding), or that lack the admin bearer token
// (compared in constant time). Key bytes never cross this API:
// staging reads the key from the server's own keyring file, which the
// operator distributes beforehand (for example with `weft keys generate`).
package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/weftmcp/weft/internal/hostcheck"
	"github.com/weftmcp/weft/seal"
)

// Status is the secret-free keyring snapshot returned by every key call.
type Status struct {
	ActiveID        string      `json:"activeId"`
	VerificationIDs []string    `json:"verificationIds"`
	Fingerprint     Fingerprint `json:"fingerprint"`
	// Removed reports the result of a remove call.
	Removed *bool `json:"removed,omitempty"`
}

// Fingerprint is the keyring fingerprint: compare all three fields.
type Fingerprint struct {
	Version string `json:"version"`
	Profile string `json:"profile"`
	Value   string `json:"value"`
}

// String renders the fingerprint as version:profile:value.
func (f Fingerprint) String() string { return f.Version + ":" + f.Profile + ":" + f.Value }

func statusOf(s seal.Snapshot) Status {
	ids := s.VerificationIDs
	if ids == nil {
		ids = []string{}
	}
	return Status{ActiveID: s.ActiveID, VerificationIDs: ids,
		Fingerprint: Fingerprint{Version: s.Fingerprint.Version, Profile: s.Fingerprint.Profile, Value: s.Fingerprint.Value}}
}

// Config configures Handler.
type Config struct {
	// Manager is the running server's keyring manager.
	Manager *seal.Manager
	// KeyringPath is the keyring file stage and rotate read keys from.
	KeyringPath string
	// Token is the admin bearer token (at least 16 characters).
	Token string
	// Logger receives an audit line per change (never key bytes).
	Logger *slog.Logger
	// AllowedHosts are Host header values accepted besides loopback names
	// and addresses ("localhost", 127.0.0.0/8, ::1), with or without port:
	// the names an operator reaches the listener by through a tunnel or
	// proxy. Any other Host is refused (403), so that a web page whose
	// name was rebound to 127.0.0.1 (DNS rebinding) cannot reach the API.
	AllowedHosts []string
	// AllowedOrigins are Origin header values accepted besides http and
	// https origins of loopback hosts; a request with any other Origin is
	// refused (403). Requests without Origin (non-browser clients) pass.
	AllowedOrigins []string
	// Extra handlers mounted beside the key API (for example /metrics),
	// keyed by [http.ServeMux] pattern, behind the same loopback and token
	// checks. A pattern that is invalid or conflicts with the key API makes
	// Handler fail.
	Extra map[string]http.Handler
}

type handler struct {
	cfg   Config
	token [32]byte
	mux   *http.ServeMux
}

// MinTokenLength is the shortest accepted admin token.
const MinTokenLength = 16

// Handler returns the admin API:
//
//	GET  /admin/keys                       status
//	POST /admin/keys/stage    {"id": ID}   stage key ID from the keyring file as a verification key
//	POST /admin/keys/activate {"id": ID}   make a staged key active
//	POST /admin/keys/rotate   {"id": ID}   stage and activate (retry-safe)
//	POST /admin/keys/remove   {"id": ID}   remove a verification key (409 while in use, 400 for the active key)
//
// Stage and rotate answer 404 for a key that is not in the keyring file and
// 500 when the file cannot be read. Every error is a JSON object
// {"error": "..."}; a request body other than exactly one such object is
// refused with 400.
func Handler(cfg Config) (http.Handler, error) {
	if cfg.Manager == nil {
		return nil, errors.New("admin: Config.Manager is required")
	}
	if len(cfg.Token) < MinTokenLength {
		return nil, fmt.Errorf("admin: the admin token must have at least %d characters", MinTokenLength)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &handler{cfg: cfg, token: sha256.Sum256([]byte(cfg.Token)), mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /admin/keys", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, statusOf(cfg.Manager.Snapshot()))
	})
	h.mux.HandleFunc("POST /admin/keys/{op}", h.keyOp)
	for pattern, eh := range cfg.Extra {
		if err := handle(h.mux, pattern, eh); err != nil {
			return nil, fmt.Errorf("admin: Config.Extra[%q]: %w", pattern, err)
		}
	}
	return h, nil
}

// handle registers eh on mux, returning as an error what ServeMux.Handle
// reports by panicking (a nil handler, an invalid or conflicting pattern).
func handle(mux *http.ServeMux, pattern string, eh http.Handler) (err error) {
	if eh == nil {
		return errors.New("nil handler")
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	mux.Handle(pattern, eh)
	return nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		writeError(w, http.StatusForbidden, "the admin API accepts loopback connections only")
		return
	}
	// DNS rebinding: the page's own name and origin arrive with the request.
	if !hostcheck.HostAllowed(r.Host, h.cfg.AllowedHosts) {
		writeError(w, http.StatusForbidden, "the admin API accepts loopback host names only (Config.AllowedHosts)")
		return
	}
	if !hostcheck.OriginAllowed(r.Header.Get("Origin"), h.cfg.AllowedOrigins) {
		writeError(w, http.StatusForbidden, "the admin API refuses requests from this origin (Config.AllowedOrigins)")
		return
	}
	auth := r.Header.Get("Authorization")
	if len(auth) < 7 || !strings.EqualFold(auth[:7], "bearer ") {
		w.Header().Set("WWW-Authenticate", `Bearer realm="weft-admin"`)
		writeError(w, http.StatusUnauthorized, "missing admin token")
		return
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(auth[7:])))
	if subtle.ConstantTimeCompare(got[:], h.token[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="weft-admin", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "invalid admin token")
		return
	}
	h.mux.ServeHTTP(w, r)
}

type keyRequest struct {
	ID string `json:"id"`
}

func (h *handler) keyOp(w http.ResponseWriter, r *http.Request) {
	op := r.PathValue("op")
	switch op {
	case "stage", "rotate", "activate", "remove":
	default:
		writeError(w, http.StatusNotFound, "unknown operation "+strconv.Quote(op))
		return
	}
	var kr keyRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
	dec.DisallowUnknownFields()
	err := dec.Decode(&kr)
	if err == nil {
		if _, tail := dec.Token(); tail != io.EOF {
			err = errors.New("trailing data")
		}
	}
	if err != nil || kr.ID == "" {
		writeError(w, http.StatusBadRequest, `the body must be {"id": "<key id>"}`)
		return
	}
	m := h.cfg.Manager
	var removed *bool
	switch op {
	case "stage", "rotate":
		var k seal.Key
		if k, err = h.keyFromFile(kr.ID); err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, seal.ErrUnknownKey) {
				status = http.StatusNotFound
			}
			h.cfg.Logger.Warn("admin: key operation refused", "op", op, "id", kr.ID, "err", err)
			writeError(w, status, err.Error())
			return
		}
		if op == "stage" {
			err = m.Stage(k)
		} else {
			err = m.Rotate(k)
		}
	case "activate":
		err = m.Activate(kr.ID)
	case "remove":
		var ok bool
		ok, err = m.Remove(kr.ID)
		removed = &ok
	}
	if err != nil {
		status := http.StatusBadRequest
		switch {
		case errors.Is(err, seal.ErrKeyInUse), errors.Is(err, seal.ErrKeyConflict):
			status = http.StatusConflict
		case errors.Is(err, seal.ErrUnknownKey):
			status = http.StatusNotFound
		}
		h.cfg.Logger.Warn("admin: key operation refused", "op", op, "id", kr.ID, "err", err)
		writeError(w, status, err.Error())
		return
	}
	st := statusOf(m.Snapshot())
	st.Removed = removed
	h.cfg.Logger.Info("admin: key operation", "op", op, "id", kr.ID, "active", st.ActiveID, "fingerprint", st.Fingerprint.String())
	writeJSON(w, http.StatusOK, st)
}

// keyFromFile reads key id from the keyring file (any role). A key the file
// does not hold is an [seal.ErrUnknownKey].
func (h *handler) keyFromFile(id string) (seal.Key, error) {
	if h.cfg.KeyringPath == "" {
		return seal.Key{}, errors.New("this server has no keyring file to stage keys from")
	}
	kr, err := seal.LoadKeyringFile(h.cfg.KeyringPath)
	if err != nil {
		return seal.Key{}, fmt.Errorf("reading the keyring file: %w", err)
	}
	for _, k := range append([]seal.Key{kr.Active()}, kr.Verification()...) {
		if k.ID() == id {
			return k, nil
		}
	}
	return seal.Key{}, fmt.Errorf("%w: key %q is not in the keyring file", seal.ErrUnknownKey, id)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
