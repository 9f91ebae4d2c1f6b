package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// ParsePrivateKeyPEM parses a PEM private key (PKCS #8, SEC 1 EC or
// PKCS #1 RSA) for private_key_jwt client authentication.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("oauth: no PEM block in the private key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("oauth: unsupported private key type %T", k)
		}
		return s, nil
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("oauth: the private key is neither PKCS #8, SEC 1 nor PKCS #1")
}

// defaultAlg picks the JWS algorithm for key.
func defaultAlg(key crypto.Signer) (jose.SignatureAlgorithm, error) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
	case *rsa.PrivateKey:
		return jose.RS256, nil
	case ed25519.PrivateKey:
		return jose.EdDSA, nil
	}
	return "", fmt.Errorf("oauth: unsupported signing key %T", key)
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// clientAssertion signs an RFC 7523 client authentication JWT for
// private_key_jwt: iss = sub = clientID, aud = the authorization server's
// issuer.
func clientAssertion(key crypto.Signer, alg, keyID, clientID, audience string, now time.Time) (string, error) {
	a := jose.SignatureAlgorithm(alg)
	if a == "" {
		var err error
		if a, err = defaultAlg(key); err != nil {
			return "", err
		}
	}
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if keyID != "" {
		opts = opts.WithHeader("kid", keyID)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: a, Key: key}, opts)
	if err != nil {
		return "", fmt.Errorf("oauth: client assertion signer: %w", err)
	}
	claims := jwt.Claims{
		Issuer:   clientID,
		Subject:  clientID,
		Audience: jwt.Audience{audience},
		ID:       randomString(16),
		IssuedAt: jwt.NewNumericDate(now),
		Expiry:   jwt.NewNumericDate(now.Add(2 * time.Minute)),
	}
	return jwt.Signed(signer).Claims(claims).Serialize()
}

// DPoPKey is the key that proves possession of DPoP-bound tokens (RFC
// 9449). One key is used for the lifetime of the tokens it bound; it is
// safe for concurrent use.
type DPoPKey struct {
	key    crypto.Signer
	alg    jose.SignatureAlgorithm
	jwk    jose.JSONWebKey
	jkt    string
	mu     sync.Mutex
	nonces map[string]string // origin -> last DPoP-Nonce
}

// NewDPoPKey returns a DPoP key over key (nil: a fresh P-256 key).
func NewDPoPKey(key crypto.Signer) (*DPoPKey, error) {
	if key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		key = k
	}
	alg, err := defaultAlg(key)
	if err != nil {
		return nil, err
	}
	jwk := jose.JSONWebKey{Key: key.Public(), Algorithm: string(alg)}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	return &DPoPKey{key: key, alg: alg, jwk: jwk, jkt: base64.RawURLEncoding.EncodeToString(tp), nonces: map[string]string{}}, nil
}

// Algorithm returns the JWS algorithm of the key's proofs.
func (k *DPoPKey) Algorithm() string { return string(k.alg) }

// Thumbprint returns the key's RFC 7638 SHA-256 thumbprint (the jkt).
func (k *DPoPKey) Thumbprint() string { return k.jkt }

// nonceFor returns the nonce last given by the server at u's origin.
func (k *DPoPKey) nonceFor(u string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.nonces[originOf(u)]
}

// setNonce records a DPoP-Nonce from the server at u's origin; it
// reports whether it changed.
func (k *DPoPKey) setNonce(u, nonce string) bool {
	if nonce == "" {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	o := originOf(u)
	changed := k.nonces[o] != nonce
	k.nonces[o] = nonce
	return changed
}

func originOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Scheme + "://" + p.Host
}

// Proof returns a DPoP proof JWT for an HTTP request: htm method, htu the
// URL without query and fragment, a fresh jti, the server's last nonce,
// and ath when accessToken is not empty.
func (k *DPoPKey) Proof(method, target, accessToken string) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", err
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt")
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.key}, opts)
	if err != nil {
		return "", fmt.Errorf("oauth: DPoP signer: %w", err)
	}
	claims := map[string]any{
		"jti": randomString(16),
		"htm": method,
		"htu": u.String(),
		"iat": time.Now().Unix(),
	}
	if n := k.nonceFor(target); n != "" {
		claims["nonce"] = n
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	return jwt.Signed(signer).Claims(claims).Serialize()
}
