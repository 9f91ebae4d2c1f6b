package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/weftmcp/weft/client/oauth"
)

// MaxTokenFileBytes bounds the token file of an upstream's OAuth.
const MaxTokenFileBytes = 64 << 10

// UpstreamOAuth is the gateway's own authorization at an HTTP upstream
// that requires OAuth (service credentials): a token file, or the client
// credentials grant with a client secret or a private key
// (private_key_jwt). With client credentials the gateway discovers the
// upstream's authorization server from its 401 (protected resource
// metadata, then the server's metadata), requests a token for the
// upstream (the resource indicator) and refreshes it. Callers' own tokens
// are never sent: oauth excludes authorization "passthrough".
type UpstreamOAuth struct {
	// TokenFile holds a bearer token, read on every request (so that a
	// rotated file, e.g. a projected service-account token, is followed).
	TokenFile string `json:"tokenFile,omitempty"`

	// ClientID is the gateway's client at the upstream's authorization
	// server (the client credentials grant).
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret authenticates it (client_secret_basic, or
	// client_secret_post where the server offers only that); values may
	// refer to the gateway's environment as ${VAR}.
	ClientSecret string `json:"clientSecret,omitempty"`
	// PrivateKeyFile holds a PEM private key for private_key_jwt instead
	// of a secret; SigningAlg (default from the key) and KeyID (the kid)
	// describe its assertions.
	PrivateKeyFile string `json:"privateKeyFile,omitempty"`
	SigningAlg     string `json:"signingAlg,omitempty"`
	KeyID          string `json:"keyId,omitempty"`
	// AuthMethod forces the token endpoint authentication method
	// (client_secret_basic, client_secret_post, private_key_jwt).
	AuthMethod string `json:"authMethod,omitempty"`
	// Scopes are requested in addition to those the upstream asks for.
	Scopes []string `json:"scopes,omitempty"`

	// PerUser makes the upstream's calls carry each caller's own
	// authorization instead (peruser.go): the gateway's credentials above,
	// when set, read only the upstream's lists.
	PerUser *PerUserOAuth `json:"perUser,omitempty"`
}

func (o *UpstreamOAuth) validate(u *UpstreamConfig) error {
	if o == nil {
		return nil
	}
	switch {
	case u.URL == "":
		return errors.New("oauth applies to url upstreams only")
	case u.Authorization == "passthrough":
		return errors.New(`oauth and authorization "passthrough" exclude each other (a caller's token is never sent where the gateway authorizes itself)`)
	case hasHeader(u.Headers, "Authorization"):
		return errors.New("oauth and an Authorization header exclude each other")
	case o.TokenFile != "" && (o.ClientID != "" || o.ClientSecret != "" || o.PrivateKeyFile != ""):
		return errors.New("oauth: set tokenFile or client credentials, not both")
	case o.TokenFile == "" && o.ClientID == "" && o.PerUser == nil:
		return errors.New("oauth: set tokenFile, or clientId with clientSecret or privateKeyFile, or perUser")
	case o.ClientID != "" && o.ClientSecret == "" && o.PrivateKeyFile == "":
		return errors.New("oauth: clientId needs clientSecret or privateKeyFile")
	case o.ClientSecret != "" && o.PrivateKeyFile != "":
		return errors.New("oauth: set clientSecret or privateKeyFile, not both")
	}
	if err := o.PerUser.validate(u); err != nil {
		return fmt.Errorf("oauth.perUser: %w", err)
	}
	switch o.AuthMethod {
	case "", oauth.AuthClientSecretBasic, oauth.AuthClientSecretPost, oauth.AuthPrivateKeyJWT:
	default:
		return fmt.Errorf("oauth: authMethod %q: want %s, %s or %s", o.AuthMethod, oauth.AuthClientSecretBasic, oauth.AuthClientSecretPost, oauth.AuthPrivateKeyJWT)
	}
	return nil
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// upstreamHTTPClient returns the HTTP client of an upstream: base, or for
// an upstream with oauth base authorizing as the gateway.
func upstreamHTTPClient(u *UpstreamConfig, base *http.Client) (*http.Client, error) {
	o := u.OAuth
	if o == nil || (o.TokenFile == "" && o.ClientID == "") {
		return base, nil
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	out := &http.Client{CheckRedirect: base.CheckRedirect, Jar: base.Jar, Timeout: base.Timeout}
	if o.TokenFile != "" {
		out.Transport = tokenFileTransport{base: rt, path: o.TokenFile}
		return out, nil
	}
	cfg := oauth.Config{
		HTTPClient: base, Grant: oauth.GrantClientCredentials,
		ClientID: o.ClientID, ClientSecret: expand(o.ClientSecret), AuthMethod: o.AuthMethod,
		SigningAlg: o.SigningAlg, KeyID: o.KeyID, Scopes: o.Scopes,
	}
	if o.PrivateKeyFile != "" {
		pem, err := os.ReadFile(o.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("gateway: upstream %q: oauth privateKeyFile: %w", u.Name, err)
		}
		if cfg.PrivateKey, err = oauth.ParsePrivateKeyPEM(pem); err != nil {
			return nil, fmt.Errorf("gateway: upstream %q: oauth privateKeyFile: %w", u.Name, err)
		}
		if cfg.AuthMethod == "" {
			cfg.AuthMethod = oauth.AuthPrivateKeyJWT
		}
	}
	out.Transport = oauth.NewTransport(rt, cfg)
	return out, nil
}

// tokenFileTransport sends the bearer token of a file.
type tokenFileTransport struct {
	base http.RoundTripper
	path string
}

func (t tokenFileTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := readTokenFile(r.Context(), t.path)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}

func readTokenFile(_ context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("gateway: oauth tokenFile: %w", err)
	}
	defer f.Close()
	buf := make([]byte, MaxTokenFileBytes+1)
	n, _ := f.Read(buf)
	if n > MaxTokenFileBytes {
		return "", fmt.Errorf("gateway: oauth tokenFile %s exceeds %d bytes", path, MaxTokenFileBytes)
	}
	tok := strings.TrimSpace(string(buf[:n]))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("gateway: oauth tokenFile %s does not hold one token", path)
	}
	return tok, nil
}
