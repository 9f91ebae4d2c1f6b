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
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

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

// register defines the flags on fs for `weft serve` (what: "the demo") or
// `weft gateway` ("the gateway"); issuerDefault says what --auth-issuer
// defaults to.
func (a *authFlags) register(fs *flag.FlagSet, what, issuerDefault string) {
	fs.StringVar(&a.upstream, "auth-upstream", "", "OpenID Connect issuer `URL` of the identity provider users sign in with: "+what+" gets its own authorization server (docs/authorization.md)")
	fs.StringVar(&a.clientID, "auth-client-id", "", "client `ID` of "+what+" at the --auth-upstream provider (redirect URI: <issuer>/callback)")
	fs.StringVar(&a.secretFile, "auth-client-secret-file", "", "`FILE` holding that client's secret")
	fs.StringVar(&a.issuer, "auth-issuer", "", "issuer `URL` of the authorization server (default "+issuerDefault+", served on the same listener)")
	fs.StringVar(&a.scopes, "auth-scopes", "mcp", "comma-separated `SCOPES` the authorization server grants")
	fs.BoolVar(&a.noDynamic, "auth-no-dynamic-registration", false, "refuse RFC 7591 dynamic registration: clients then register by metadata document (CIMD) only")
	fs.BoolVar(&a.dev, "auth-dev", false, "development: an http issuer on loopback, client metadata documents over http and on loopback")
}

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

// asOptions configure the authorization server of `weft serve
// --auth-upstream` and of `weft gateway` (auth.authorizationServer).
type asOptions struct {
	issuer                     string // "" means http://<addr>
	provider, clientID, secret string // the identity provider and the client there
	scopes, claims             []string
	dev, dynamic               bool
	accessTokenTTL             time.Duration
	resource, resourceName     string
	// pagesRedirect, when set, pre-registers the gateway's pages as a
	// confidential client (gatewayPagesClient, its secret derived from the
	// server's secret key so that every instance of a fleet knows it)
	// with this redirect URI.
	pagesRedirect string
	// keysFile holds the signing key and secret (default
	// <dataDir>/authserver-keys.json).
	keysFile string
	// allowedScopes, when set, narrows the scopes a user is granted
	// (authserver.IdentityMapping.AllowedScopes).
	allowedScopes func(claims map[string]any, requested []string) []string
	// required are the scopes every request needs (default scopes).
	required []string
}

// authSetup is a running authorization server: the admission of its
// tokens, the protected resource metadata naming it, the handler to mount
// at the root of the listener.
type authSetup struct {
	admission weft.Admission
	meta      *auth.ResourceMetadata
	handler   http.Handler
	issuer    string
	secret    []byte // the server's secret key (pagesSecret)
	close     func()
}

// setupAuthServer starts an authorization server issuing tokens for
// o.resource in front of o.provider, its keys and store in dataDir (or
// PostgreSQL), with an admission validating its tokens (DPoP accepted).
func setupAuthServer(ctx context.Context, o asOptions, dataDir, postgres, schema string, logger *slog.Logger) (*authSetup, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	keysFile := o.keysFile
	if keysFile == "" {
		keysFile = filepath.Join(dataDir, "authserver-keys.json")
	}
	keys, err := loadOrCreateAuthKeys(keysFile)
	if err != nil {
		return nil, err
	}
	var store authserver.Store
	var db *sql.DB
	if postgres != "" {
		if db, err = openHandleDB(ctx, postgres, schema); err != nil {
			return nil, err
		}
		store, err = authserver.OpenPostgres(ctx, db, "")
	} else {
		store, err = authserver.OpenSQLite(ctx, filepath.Join(dataDir, "authserver.db"))
	}
	if err != nil {
		if db != nil {
			_ = db.Close()
		}
		return nil, err
	}
	closeAll := func() {
		_ = store.Close()
		if db != nil {
			_ = db.Close()
		}
	}
	claims := o.claims
	if len(claims) == 0 {
		claims = []string{"email", "name"}
	}
	cfg := authserver.Config{
		Issuer:              o.issuer,
		AllowInsecureIssuer: o.dev,
		Resources:           []string{o.resource},
		Scopes:              o.scopes,
		DefaultScopes:       o.scopes,
		Upstream:            authserver.Upstream{Issuer: o.provider, ClientID: o.clientID, ClientSecret: o.secret},
		Identity:            authserver.IdentityMapping{Claims: claims, AllowedScopes: o.allowedScopes},
		Store:               store,
		SigningKeys:         []jose.JSONWebKey{keys.SigningKey},
		SecretKey:           keys.Secret,
		Logger:              logger,
		AccessTokenTTL:      o.accessTokenTTL,
		// Native clients that can host no metadata document (the weft
		// CLI, desktop apps) register themselves: public clients only,
		// bounded in number and lifetime.
		DynamicRegistration: o.dynamic,
	}
	if o.dev {
		cfg.CIMD.AllowHTTP = true
		cfg.CIMD.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
	if o.pagesRedirect != "" {
		cfg.Clients = []authserver.Client{{ID: gatewayPagesClient, Secret: pagesSecret(keys.Secret), Name: "Weft gateway", RedirectURIs: []string{o.pagesRedirect}}}
	}
	as, err := authserver.New(cfg)
	if err != nil {
		closeAll()
		return nil, err
	}
	meta := &auth.ResourceMetadata{Resource: o.resource, AuthorizationServers: []string{o.issuer}, ScopesSupported: o.scopes, ResourceName: o.resourceName}
	// Every request needs the scopes the challenge and the metadata name:
	// a token of this server without them (a refresh narrowed to
	// offline_access) gets 403 insufficient_scope.
	required := o.required
	if required == nil {
		required = o.scopes
	}
	v := &auth.JWTValidator{Issuer: o.issuer, JWKS: as.PublicKeys(), StrictType: true, Logger: logger, RequiredScopes: required,
		DPoP: &auth.DPoPVerifier{Replay: authserver.ReplayCache(store)}}
	if err := v.CheckConfig(meta); err != nil {
		closeAll()
		return nil, err
	}
	return &authSetup{admission: v.Admission(meta), meta: meta, handler: as.Handler(), issuer: o.issuer, secret: keys.Secret, close: closeAll}, nil
}

// serveAuthServer is setupAuthServer for the flags of `weft serve`.
func serveAuthServer(ctx context.Context, a authFlags, addr, dataDir, postgres, schema, resource string, logger *slog.Logger) (*authSetup, error) {
	issuer := a.issuer
	if issuer == "" {
		issuer = "http://" + addr
	}
	secret := ""
	if a.secretFile != "" {
		b, err := os.ReadFile(a.secretFile)
		if err != nil {
			return nil, fmt.Errorf("--auth-client-secret-file: %w", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	return setupAuthServer(ctx, asOptions{issuer: issuer, provider: a.upstream, clientID: a.clientID, secret: secret,
		scopes: splitList(a.scopes), dev: a.dev, dynamic: !a.noDynamic, resource: resource, resourceName: "Weft demo"}, dataDir, postgres, schema, logger)
}
