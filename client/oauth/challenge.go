package oauth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// MaxChallengeBytes bounds the WWW-Authenticate header values parsed from
// one response (all values together). A server past it gets its
// challenges refused rather than parsed.
const MaxChallengeBytes = 16 << 10

// Challenge is one authentication challenge of a WWW-Authenticate header
// (RFC 9110 section 11.6.1): a scheme and its parameters, or a token68.
type Challenge struct {
	// Scheme is the authentication scheme as sent ("Bearer", "DPoP").
	Scheme string
	// Params are the auth-params, names lower-cased, values unquoted.
	Params map[string]string
	// Token68 is the token68 form of the credentials, if used instead of
	// parameters.
	Token68 string
}

// Param returns the value of parameter name (case-insensitive).
func (c Challenge) Param(name string) string { return c.Params[strings.ToLower(name)] }

// Is reports whether the challenge's scheme is scheme (case-insensitive).
func (c Challenge) Is(scheme string) bool { return strings.EqualFold(c.Scheme, scheme) }

// ErrChallenge reports a WWW-Authenticate header that does not parse.
var ErrChallenge = errors.New("oauth: malformed WWW-Authenticate header")

// ParseChallenges parses every WWW-Authenticate value of h into its
// challenges, in order.
func ParseChallenges(h http.Header) ([]Challenge, error) {
	vals := h.Values("WWW-Authenticate")
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	if n > MaxChallengeBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrChallenge, MaxChallengeBytes)
	}
	var out []Challenge
	for _, v := range vals {
		cs, err := ParseWWWAuthenticate(v)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// ParseWWWAuthenticate parses one WWW-Authenticate header value, which may
// hold several comma-separated challenges:
//
//	challenge   = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
//	auth-param  = token BWS "=" BWS ( token / quoted-string )
func ParseWWWAuthenticate(v string) ([]Challenge, error) {
	if len(v) > MaxChallengeBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrChallenge, MaxChallengeBytes)
	}
	p := &chParser{s: v}
	var out []Challenge
	var cur *Challenge
	for {
		p.skipOWSAndCommas()
		if p.done() {
			break
		}
		start := p.i
		tok := p.token()
		if tok == "" {
			return nil, fmt.Errorf("%w: unexpected %q at offset %d", ErrChallenge, p.s[p.i], p.i)
		}
		// A token followed by "=" (after optional whitespace) is an
		// auth-param of the current challenge, unless it is a token68
		// ending in "=" padding (handled below when a scheme just started).
		save := p.i
		p.skipWS()
		if !p.done() && p.s[p.i] == '=' && cur != nil && !p.isToken68Padding() {
			p.i++
			p.skipWS()
			val, err := p.value()
			if err != nil {
				return nil, err
			}
			name := strings.ToLower(tok)
			if _, dup := cur.Params[name]; dup {
				return nil, fmt.Errorf("%w: parameter %q repeated", ErrChallenge, name)
			}
			cur.Params[name] = val
			p.skipWS()
			if !p.done() && p.s[p.i] != ',' {
				return nil, fmt.Errorf("%w: expected a comma at offset %d", ErrChallenge, p.i)
			}
			continue
		}
		p.i = save
		// A new challenge: scheme [SP token68 / params].
		if !isToken(tok) {
			return nil, fmt.Errorf("%w: bad scheme %q", ErrChallenge, p.s[start:p.i])
		}
		out = append(out, Challenge{Scheme: tok, Params: map[string]string{}})
		cur = &out[len(out)-1]
		if p.done() || p.s[p.i] == ',' {
			continue
		}
		if p.s[p.i] != ' ' && p.s[p.i] != '\t' {
			return nil, fmt.Errorf("%w: unexpected %q after scheme", ErrChallenge, p.s[p.i])
		}
		p.skipWS()
		// token68: token68 chars followed by "=" padding, then end or comma,
		// and no "=" value after it.
		if t68, ok := p.token68(); ok {
			cur.Token68 = t68
		}
	}
	return out, nil
}

type chParser struct {
	s string
	i int
}

func (p *chParser) done() bool { return p.i >= len(p.s) }

func (p *chParser) skipWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *chParser) skipOWSAndCommas() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}

func (p *chParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// isToken68Padding reports whether the "=" at p.i starts the padding of a
// token68 rather than a parameter's value: "=" runs followed by the end, a
// comma or whitespace then a comma/end.
func (p *chParser) isToken68Padding() bool {
	j := p.i
	for j < len(p.s) && p.s[j] == '=' {
		j++
	}
	for j < len(p.s) && (p.s[j] == ' ' || p.s[j] == '\t') {
		j++
	}
	return j >= len(p.s) || p.s[j] == ','
}

func isT68char(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}

// token68 reads a token68 if one is at p.i (and not an auth-param).
func (p *chParser) token68() (string, bool) {
	j := p.i
	for j < len(p.s) && isT68char(p.s[j]) {
		j++
	}
	if j == p.i {
		return "", false
	}
	k := j
	for k < len(p.s) && p.s[k] == '=' {
		k++
	}
	e := k
	for e < len(p.s) && (p.s[e] == ' ' || p.s[e] == '\t') {
		e++
	}
	if e < len(p.s) && p.s[e] != ',' {
		return "", false // an auth-param ("name=value") or garbage
	}
	t := p.s[p.i:k]
	p.i = e
	return t, true
}

func (p *chParser) value() (string, error) {
	if p.done() {
		return "", fmt.Errorf("%w: missing parameter value", ErrChallenge)
	}
	if p.s[p.i] != '"' {
		t := p.token()
		if t == "" {
			return "", fmt.Errorf("%w: bad parameter value at offset %d", ErrChallenge, p.i)
		}
		return t, nil
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", fmt.Errorf("%w: unterminated quoted string", ErrChallenge)
			}
			b.WriteByte(p.s[p.i+1])
			p.i += 2
		case c < 0x20 && c != '\t' || c == 0x7f:
			return "", fmt.Errorf("%w: control character in quoted string", ErrChallenge)
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", fmt.Errorf("%w: unterminated quoted string", ErrChallenge)
}

// FindChallenge returns the first challenge with one of the schemes
// (case-insensitive), preferring earlier schemes in the list.
func FindChallenge(cs []Challenge, schemes ...string) (Challenge, bool) {
	for _, s := range schemes {
		for _, c := range cs {
			if c.Is(s) {
				return c, true
			}
		}
	}
	return Challenge{}, false
}
