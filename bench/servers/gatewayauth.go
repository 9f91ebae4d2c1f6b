package servers

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The issuer and audience of the JWTs an authenticating bench gateway
// accepts (NewGateway with a JWKS file).
const (
	BenchIssuer   = "https://idp.bench.example"
	BenchAudience = "https://gateway.bench.example/mcp"
)

// BenchKey is a signing key of the bench's issuer: its public JWKS is
// written for the gateway, and Token signs a caller's access token with it.
type BenchKey struct {
	jwk jose.JSONWebKey
}

// NewBenchKey generates an ES256 key.
func NewBenchKey() (*BenchKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	jwk := jose.JSONWebKey{Key: k, Algorithm: "ES256", Use: "sig"}
	pub := jwk.Public()
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	jwk.KeyID = fmt.Sprintf("%x", tp[:8])
	return &BenchKey{jwk: jwk}, nil
}

// WriteJWKS writes the public key set to path.
func (k *BenchKey) WriteJWKS(path string) error {
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k.jwk.Public()}})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Token returns an access token for subject, valid for an hour, with the
// scope "mcp".
func (k *BenchKey) Token(subject string) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.jwk}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		return "", err
	}
	now := time.Now()
	claims := map[string]any{"iss": BenchIssuer, "aud": BenchAudience, "sub": subject, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"scope": "mcp", "jti": fmt.Sprintf("%d", now.UnixNano())}
	return jwt.Signed(sig).Claims(claims).Serialize()
}
