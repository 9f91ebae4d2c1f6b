package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/auth"
	"github.com/weftmcp/weft/authserver"
)

// authFlags are serve's flags that put the demo behind its own
// authorization server (docs/authorization.md).
type authFlags struct {
	upstream, clientID, secretFile, issuer, scopes string
	dev, noDynamic                                 bool
}

func (a *authFlags) enabled() bool { return a.upstream != "" }

// authKeys is the authorization server's persisted key material: the
// signing key and the 32-byte secret, created on first start (mode 0600).
type authKeys struct {
	SigningKey jose.JSONWebKey `json:"signing_key"`
	Secret     []byte          `json:"secret"`
}

func loadOrCreateAuthKeys(path string) (*authKeys, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		jwk := jose.JSONWebKey{Key: k, Algorithm: "ES256", Use: "sig"}
		pub := jwk.Public()
		tp, _ := pub.Thumbprint(crypto.SHA256)
		jwk.KeyID = fmt.Sprintf("%x", tp[:8])
		ak := &authKeys{SigningKey: jwk, Secret: make([]byte, 32)}
		_, _ = rand.Read(ak.Secret)
		out, err := json.Marshal(ak)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, out, 0o600); err != nil {
			return nil, fmt.Errorf("authorization server keys: %w", err)
		}
		return ak, nil
	}
	if err != nil {
		return nil, fmt.Errorf("authorization server keys: %w", err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("authorization server keys %s: readable by others (mode %v); chmod 600", path, st.Mode().Perm())
	}
	var ak authKeys
	if err := json.Unmarshal(b, &ak); err != nil {
		return nil, fmt.Errorf("authorization server keys %s: %w", path, err)
	}
	return &ak, nil
}

// setupAuthServer builds the authorization server of `weft serve
// --auth-upstream`: tokens for resource, the demo's admission (JWT
// validation against its keys, DPoP accepted), its protected resource
// metadata, and the handler to mount at the root of the listener.
func setupAuthServer(ctx context.Context, a authFlags, addr, dataDir, postgres, resource string, logger *slog.Logger) (weft.Admission, *auth.ResourceMetadata, http.Handler, func(), error) {
	issuer := a.issuer
	if issuer == "" {
		issuer = "http://" + addr
	}
	secret := ""
	if a.secretFile != "" {
		b, err := os.ReadFile(a.secretFile)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("--auth-client-secret-file: %w", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, nil, nil, nil, err
	}
	keys, err := loadOrCreateAuthKeys(filepath.Join(dataDir, "authserver-keys.json"))
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var store authserver.Store
	var db *sql.DB
	if postgres != "" {
		if db, err = sql.Open("pgx", postgres); err != nil {
			return nil, nil, nil, nil, err
		}
		store, err = authserver.OpenPostgres(ctx, db, "")
	} else {
		store, err = authserver.OpenSQLite(ctx, filepath.Join(dataDir, "authserver.db"))
	}
	if err != nil {
		if db != nil {
			_ = db.Close()
		}
		return nil, nil, nil, nil, err
	}
	closeAll := func() {
		_ = store.Close()
		if db != nil {
			_ = db.Close()
		}
	}
	scopes := splitList(a.scopes)
	cfg := authserver.Config{
		Issuer:              issuer,
		AllowInsecureIssuer: a.dev,
		Resources:           []string{resource},
		Scopes:              scopes,
		DefaultScopes:       scopes,
		Upstream:            authserver.Upstream{Issuer: a.upstream, ClientID: a.clientID, ClientSecret: secret},
		Identity:            authserver.IdentityMapping{Claims: []string{"email", "name"}},
		Store:               store,
		SigningKeys:         []jose.JSONWebKey{keys.SigningKey},
		SecretKey:           keys.Secret,
		Logger:              logger,
		// Native clients that can host no metadata document (the weft
		// CLI, desktop apps) register themselves: public clients only,
		// bounded in number and lifetime.
		DynamicRegistration: !a.noDynamic,
	}
	if a.dev {
		cfg.CIMD.AllowHTTP = true
		cfg.CIMD.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
	as, err := authserver.New(cfg)
	if err != nil {
		closeAll()
		return nil, nil, nil, nil, err
	}
	meta := &auth.ResourceMetadata{Resource: resource, AuthorizationServers: []string{issuer}, ScopesSupported: scopes, ResourceName: "Weft demo"}
	// Every request needs the scopes the challenge and the metadata name:
	// a token of this server without them (a refresh narrowed to
	// offline_access) gets 403 insufficient_scope.
	v := &auth.JWTValidator{Issuer: issuer, JWKS: as.PublicKeys(), StrictType: true, Logger: logger, RequiredScopes: scopes,
		DPoP: &auth.DPoPVerifier{Replay: authserver.ReplayCache(store)}}
	if err := v.CheckConfig(meta); err != nil {
		closeAll()
		return nil, nil, nil, nil, err
	}
	return v.Admission(meta), meta, as.Handler(), closeAll, nil
}
