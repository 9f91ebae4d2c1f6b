package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"

	"github.com/weftmcp/weft"
)

// Limits of a static token file.
const (
	// MaxStaticTokensFileBytes bounds the size of a token file.
	MaxStaticTokensFileBytes = 1 << 20
	// MinStaticTokenLength is the shortest token accepted, in bytes. Short
	// tokens can be guessed.
	MinStaticTokenLength = 16
	// maxPartitionBytes mirrors weft's limit on Identity.Partition.
	maxPartitionBytes = 256
)

// StaticTokens is a fixed set of bearer tokens, each bound to a principal,
// a partition and scopes, loaded by [LoadStaticTokens]. Only the SHA-256
// digest of each token is kept, and presented tokens are compared in
// constant time against every entry. It is safe for concurrent use.
//
// Static tokens suit demos, tests and small private deployments. They are
// not OAuth access tokens: they have no audience or expiry, and revoking
// one means editing the file and restarting.
type StaticTokens struct {
	entries []staticEntry
}

type staticEntry struct {
	digest    [sha256.Size]byte
	principal string
	partition string
	scopes    []string
}

// staticFile is the JSON form of a token file.
type staticFile struct {
	Tokens []struct {
		Token     string   `json:"token"`
		Principal string   `json:"principal"`
		Partition string   `json:"partition"`
		Scopes    []string `json:"scopes"`
	} `json:"tokens"`
}

// LoadStaticTokens reads a token file of the form
//
//	{"tokens": [
//	  {"token": "…", "principal": "alice", "partition": "tenant-a", "scopes": ["files:read"]}
//	]}
//
// It refuses a file that its group or other users may read or write (the
// file holds secrets: chmod 600 it), a file that is not a regular file or
// is larger than [MaxStaticTokensFileBytes], unknown fields, an empty token
// list, and any invalid entry: a token shorter than [MinStaticTokenLength]
// or with characters outside RFC 6750's b64token syntax, a token listed
// twice, an empty principal, a partition over 256 bytes, or an invalid
// scope. Errors name the entry by index and never quote a token. An entry
// without partition gets its principal as partition, so that principals
// never share state by accident.
func LoadStaticTokens(path string) (*StaticTokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth: open token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("auth: token file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("auth: token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("auth: token file %s has mode %04o, which lets its group or other users read or write it; run chmod 600 on it", path, perm)
	}
	if fi.Size() > MaxStaticTokensFileBytes {
		return nil, fmt.Errorf("auth: token file %s is %d bytes, more than the limit of %d", path, fi.Size(), MaxStaticTokensFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxStaticTokensFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("auth: read token file %s: %w", path, err)
	}
	if len(data) > MaxStaticTokensFileBytes {
		return nil, fmt.Errorf("auth: token file %s is more than %d bytes", path, MaxStaticTokensFileBytes)
	}
	st, err := parseStaticTokens(data)
	if err != nil {
		return nil, fmt.Errorf("auth: token file %s: %w", path, err)
	}
	return st, nil
}

func parseStaticTokens(data []byte) (*StaticTokens, error) {
	var sf staticFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sf); err != nil {
		// JSON syntax errors may quote a fragment of the input, which can
		// be part of a token: report only the position.
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("invalid JSON at byte offset %d", se.Offset)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("field %q has the wrong JSON type (want %s)", te.Field, te.Type)
		}
		return nil, fmt.Errorf("invalid token file: %v", redactJSONError(err))
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON object")
	}
	if len(sf.Tokens) == 0 {
		return nil, errors.New(`no tokens: the file needs {"tokens": [{"token": ..., "principal": ...}]}`)
	}
	st := &StaticTokens{entries: make([]staticEntry, 0, len(sf.Tokens))}
	for i, t := range sf.Tokens {
		if len(t.Token) < MinStaticTokenLength {
			return nil, fmt.Errorf("tokens[%d]: token is %d bytes; at least %d are required", i, len(t.Token), MinStaticTokenLength)
		}
		if !isB64Token(t.Token) {
			return nil, fmt.Errorf("tokens[%d]: token has characters a bearer token cannot carry (RFC 6750 b64token: letters, digits, -._~+/ and trailing =)", i)
		}
		if t.Principal == "" {
			return nil, fmt.Errorf("tokens[%d]: principal is required", i)
		}
		part := t.Partition
		if part == "" {
			part = t.Principal
		}
		if len(part) > maxPartitionBytes {
			return nil, fmt.Errorf("tokens[%d]: partition is %d bytes; at most %d are allowed", i, len(part), maxPartitionBytes)
		}
		if err := checkScopes(fmt.Sprintf("tokens[%d].scopes", i), t.Scopes); err != nil {
			return nil, err
		}
		e := staticEntry{
			digest:    sha256.Sum256([]byte(t.Token)),
			principal: t.Principal,
			partition: part,
			scopes:    append([]string(nil), t.Scopes...),
		}
		for j, prev := range st.entries {
			if prev.digest == e.digest {
				return nil, fmt.Errorf("tokens[%d]: same token as tokens[%d]; every token must be unique", i, j)
			}
		}
		st.entries = append(st.entries, e)
	}
	return st, nil
}

// redactJSONError keeps only the type of a decoding error whose text might
// quote input.
func redactJSONError(err error) string {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return "wrong JSON type"
	}
	msg := err.Error()
	// "json: unknown field \"x\"" names a field, not a value: keep it.
	if len(msg) < 200 && bytes.HasPrefix([]byte(msg), []byte("json: unknown field")) {
		return msg
	}
	return "malformed JSON"
}

// isB64Token reports whether s matches RFC 6750's b64token:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// Len returns the number of tokens.
func (s *StaticTokens) Len() int { return len(s.entries) }

// Lookup returns the identity bound to token, or an error wrapping
// [ErrNoToken] or [ErrUnknownToken]. It hashes the token and compares the
// digest with every entry in constant time, so the time taken does not tell
// which entry, if any, matched.
func (s *StaticTokens) Lookup(token string) (weft.Identity, error) {
	if token == "" {
		return weft.Identity{}, ErrNoToken
	}
	d := sha256.Sum256([]byte(token))
	match := -1
	for i := range s.entries {
		if subtle.ConstantTimeCompare(d[:], s.entries[i].digest[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return weft.Identity{}, fmt.Errorf("%w: the token matches no entry of the token file", ErrUnknownToken)
	}
	e := &s.entries[match]
	return weft.Identity{
		Principal: e.principal,
		Partition: e.partition,
		Scopes:    append([]string(nil), e.scopes...),
	}, nil
}

// Admission returns a [weft.Admission] that admits requests carrying one of
// the tokens as "Authorization: Bearer <token>", with the identity of its
// entry (Principal, Partition, Scopes). A request without a token gets a
// 401 with a challenge naming meta's resource_metadata and
// ScopesSupported; one with an unknown token gets a 401 with
// error="invalid_token". meta may be nil, which leaves resource_metadata
// out of challenges (MCP clients then probe the well-known URIs), as does
// an invalid meta (check it with [ResourceMetadata.Validate]). A token
// lacking a scope the operation's registration declares (weft.Tool.Scopes
// and the like) gets a 403 insufficient_scope naming them; give each token
// only the scopes it should have.
func (s *StaticTokens) Admission(meta *ResourceMetadata) weft.Admission {
	meta = meta.snapshot()
	return func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
		if r.BearerToken == "" {
			return weft.Identity{}, meta.MissingToken(nil)
		}
		id, err := s.Lookup(r.BearerToken)
		if err != nil {
			return weft.Identity{}, meta.InvalidToken(nil, describe(err))
		}
		for _, sc := range r.Scopes {
			if !slices.Contains(id.Scopes, sc) {
				return weft.Identity{}, meta.InsufficientScope(r.Scopes, "The token lacks scopes this operation requires")
			}
		}
		return id, nil
	}
}
