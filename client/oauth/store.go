package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Token is what the client keeps of an access grant for one MCP server.
type Token struct {
	AccessToken string `json:"access_token"`
	// TokenType is "Bearer" or "DPoP".
	TokenType    string    `json:"token_type"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Obtained is when the token was issued to the client.
	Obtained time.Time `json:"obtained,omitzero"`
	// Scopes are the scopes requested for the token (the base of a
	// step-up's union), or those granted when the server said.
	Scopes []string `json:"scopes,omitempty"`
	// Issuer is the authorization server that issued the token.
	Issuer string `json:"issuer"`
	// Resource is the resource indicator the token was requested for.
	Resource string `json:"resource"`
	// DPoPThumbprint is the thumbprint of the key a DPoP token is bound to.
	DPoPThumbprint string `json:"dpop_jkt,omitempty"`
}

// DPoP reports whether the token is DPoP-bound.
func (t *Token) DPoP() bool { return t != nil && equalFold(t.TokenType, "DPoP") }

// expired reports whether the token expires within skew of now (within
// half its lifetime for tokens that live less than twice skew).
func (t *Token) expired(now time.Time, skew time.Duration) bool {
	if t.Expiry.IsZero() {
		return false
	}
	if !t.Obtained.IsZero() {
		skew = min(skew, t.Expiry.Sub(t.Obtained)/2)
	}
	return !now.Add(skew).Before(t.Expiry)
}

// Registration is the client's identity at one authorization server:
// pre-registered, a client ID metadata document URL, or the result of
// dynamic client registration. Credentials are never reused at another
// issuer.
type Registration struct {
	Issuer       string `json:"issuer"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// AuthMethod is the token endpoint authentication method: none,
	// client_secret_basic, client_secret_post or private_key_jwt.
	AuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// ExpiresAt is when a dynamically registered client secret expires
	// (zero: never).
	ExpiresAt time.Time `json:"client_secret_expires_at,omitzero"`
}

// Store keeps tokens per MCP server (keyed by the server's endpoint URL)
// and client registrations per authorization server (keyed by issuer).
// A missing entry is (nil, nil). Implementations must be safe for
// concurrent use.
type Store interface {
	Token(ctx context.Context, server string) (*Token, error)
	SaveToken(ctx context.Context, server string, t *Token) error
	DeleteToken(ctx context.Context, server string) error
	Registration(ctx context.Context, issuer string) (*Registration, error)
	SaveRegistration(ctx context.Context, issuer string, r *Registration) error
}

// MemoryStore is a [Store] in memory. The zero value is ready to use.
type MemoryStore struct {
	mu     sync.Mutex
	tokens map[string]Token
	regs   map[string]Registration
}

// Token implements [Store].
func (m *MemoryStore) Token(_ context.Context, server string) (*Token, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[server]
	if !ok {
		return nil, nil
	}
	return &t, nil
}

// SaveToken implements [Store].
func (m *MemoryStore) SaveToken(_ context.Context, server string, t *Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = map[string]Token{}
	}
	m.tokens[server] = *t
	return nil
}

// DeleteToken implements [Store].
func (m *MemoryStore) DeleteToken(_ context.Context, server string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, server)
	return nil
}

// Registration implements [Store].
func (m *MemoryStore) Registration(_ context.Context, issuer string) (*Registration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.regs[issuer]
	if !ok {
		return nil, nil
	}
	return &r, nil
}

// SaveRegistration implements [Store].
func (m *MemoryStore) SaveRegistration(_ context.Context, issuer string, r *Registration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.regs == nil {
		m.regs = map[string]Registration{}
	}
	m.regs[issuer] = *r
	return nil
}

// FileStore is a [Store] in one JSON file, written with mode 0600 (its
// directory 0700) and replaced atomically. It suits a command-line
// client's cache of its user's tokens; several processes may share it
// (the last writer of an entry wins).
type FileStore struct {
	path string
	mu   sync.Mutex
}

// NewFileStore returns a store in the file at path (created on first
// save).
func NewFileStore(path string) *FileStore { return &FileStore{path: path} }

// Path returns the file's path.
func (f *FileStore) Path() string { return f.path }

type fileData struct {
	Tokens        map[string]Token        `json:"tokens,omitempty"`
	Registrations map[string]Registration `json:"registrations,omitempty"`
}

func (f *FileStore) load() (*fileData, error) {
	d := &fileData{}
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, d); err != nil {
		return nil, fmt.Errorf("oauth: token file %s: %w", f.path, err)
	}
	return d, nil
}

func (f *FileStore) save(d *fileData) error {
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tokens-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.path)
}

func (f *FileStore) update(fn func(d *fileData)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.load()
	if err != nil {
		return err
	}
	fn(d)
	return f.save(d)
}

// Token implements [Store].
func (f *FileStore) Token(_ context.Context, server string) (*Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.load()
	if err != nil {
		return nil, err
	}
	t, ok := d.Tokens[server]
	if !ok {
		return nil, nil
	}
	return &t, nil
}

// SaveToken implements [Store].
func (f *FileStore) SaveToken(_ context.Context, server string, t *Token) error {
	return f.update(func(d *fileData) {
		if d.Tokens == nil {
			d.Tokens = map[string]Token{}
		}
		d.Tokens[server] = *t
	})
}

// DeleteToken implements [Store].
func (f *FileStore) DeleteToken(_ context.Context, server string) error {
	return f.update(func(d *fileData) { delete(d.Tokens, server) })
}

// Registration implements [Store].
func (f *FileStore) Registration(_ context.Context, issuer string) (*Registration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.load()
	if err != nil {
		return nil, err
	}
	r, ok := d.Registrations[issuer]
	if !ok {
		return nil, nil
	}
	return &r, nil
}

// SaveRegistration implements [Store].
func (f *FileStore) SaveRegistration(_ context.Context, issuer string, r *Registration) error {
	return f.update(func(d *fileData) {
		if d.Registrations == nil {
			d.Registrations = map[string]Registration{}
		}
		d.Registrations[issuer] = *r
	})
}
