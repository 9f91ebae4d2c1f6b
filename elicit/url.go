package elicit

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// ErrUnsafeURL is wrapped by every error that refuses a URL-mode URL.
var ErrUnsafeURL = errors.New("elicit: unsafe elicitation URL")

// maxURLBytes bounds the length of a URL-mode URL.
const maxURLBytes = 8192

// URLPolicy says which URLs a server may send in URL-mode elicitations. The
// zero URLPolicy allows nothing.
type URLPolicy struct {
	// AllowedOrigins lists the server-owned origins URLs may point at, as
	// "https://host" or "https://host:port" (no path, query or userinfo; a
	// trailing "/" is tolerated). Matching is exact on scheme, host (case-
	// insensitive) and port, with the default port made explicit: a
	// subdomain or another port of a listed origin is not allowed.
	AllowedOrigins []string
	// Development additionally allows loopback origins — localhost,
	// 127.0.0.0/8 and [::1], on any port — over http or https without
	// listing them. Leave it false in production.
	Development bool
	// Secrets is the policy that query parameter names are checked against
	// (besides the URL-specific credential words); the zero value is the
	// default policy.
	Secrets SecretPolicy
}

func urlErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsafeURL}, args...)...)
}

// origin is a normalised scheme://host:port.
type origin struct{ scheme, host, port string }

// String returns the origin as scheme://host:port.
func (o origin) String() string {
	h := o.host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return o.scheme + "://" + h + ":" + o.port
}

func defaultPort(scheme string) string {
	if scheme == "http" {
		return "80"
	}
	return "443"
}

// originOf normalises the origin of a parsed absolute http(s) URL.
func originOf(u *url.URL) (origin, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return origin{}, fmt.Errorf("scheme must be https, not %s", quoteTrunc(scheme))
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return origin{}, errors.New("URL has no host")
	}
	port := u.Port()
	if port == "" {
		if strings.HasSuffix(u.Host, ":") {
			return origin{}, errors.New("URL has an empty port")
		}
		port = defaultPort(scheme)
	} else {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > math.MaxUint16 {
			return origin{}, fmt.Errorf("port %s is out of range", quoteTrunc(port))
		}
		port = strconv.Itoa(n)
	}
	return origin{scheme, host, port}, nil
}

// isLoopback reports whether host (lower-case, without brackets) is
// localhost or a loopback IP address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkChars rejects anything but printable ASCII without spaces and
// backslashes, so the URL the client displays is the URL that was checked.
func checkChars(s string) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f {
			return errors.New("URL must be printable ASCII without spaces (percent-encode other characters)")
		}
		if c == '\\' {
			return errors.New("URL must not contain a backslash")
		}
	}
	return nil
}

// allowedOrigins parses the policy's origin list.
func (p URLPolicy) allowedOrigins() ([]origin, error) {
	out := make([]origin, 0, len(p.AllowedOrigins))
	for _, raw := range p.AllowedOrigins {
		if err := checkChars(raw); err != nil {
			return nil, fmt.Errorf("allowed origin %s: %w", quoteTrunc(raw), err)
		}
		u, err := url.Parse(raw)
		if err != nil || !u.IsAbs() || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery ||
			strings.Contains(raw, "#") || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("allowed origin %s must look like https://host[:port]", quoteTrunc(raw))
		}
		o, err := originOf(u)
		if err != nil {
			return nil, fmt.Errorf("allowed origin %s: %w", quoteTrunc(raw), err)
		}
		if o.scheme != "https" && !(p.Development && isLoopback(o.host)) {
			return nil, fmt.Errorf("allowed origin %s must use https", quoteTrunc(raw))
		}
		out = append(out, o)
	}
	return out, nil
}

// Check verifies that rawURL is safe to send in a URL-mode elicitation and
// returns it in normalised form. The rule is: a server-owned HTTPS origin,
// and no secrets or end-user data anywhere in the URL except an opaque
// handle in the path. Concretely, the URL must
//
//   - be at most 8 KiB of printable ASCII without spaces or backslashes;
//   - be absolute and hierarchical with scheme https (http only for a
//     loopback host when Development is set) and a non-empty host;
//   - have an origin in AllowedOrigins (exact scheme, host and port), or be
//     a loopback origin when Development is set;
//   - carry no userinfo ("user:pass@") and no fragment at all: the server
//     never receives a fragment, so it cannot hold server-checked state,
//     and it is where implicit-flow tokens travel;
//   - have no query parameter whose name denotes a credential: any word of
//     the name is token, secret, password, passwd, pwd, pass, passphrase,
//     passcode, apikey, key, code, jwt, otp, totp, pin, sig, signature,
//     hmac, credential, cred, session, sid, sess, auth, authorization,
//     bearer, cookie, assertion, saml or ticket, or the name is flagged by
//     the Secrets policy ("api_key", "access_token", "country_code" and
//     "sort_key" are all refused: put such values in the path or rename
//     them);
//   - have no query value that looks like a credential — a JWT (three or
//     more base64url segments starting "eyJ"), or a random-looking token of
//     32 or more base64/hex characters with a long unbroken run and mixed
//     character classes — or like an email address;
//   - have no path segment that is a JWT or an email address.
//
// The recommended shape is https://app.example.com/elicit/<handle>, with a
// handle from [NewHandle] that the server stores, binds to the initiating
// user and expires (see [HandleURL]). Check cannot tell that a handle is
// single-purpose, unguessable, or bound to a user; those stay the server's
// job, as does verifying the user who opens the page.
func (p URLPolicy) Check(rawURL string) (string, error) {
	if rawURL == "" {
		return "", urlErr("URL is empty")
	}
	if len(rawURL) > maxURLBytes {
		return "", urlErr("URL is longer than %d bytes", maxURLBytes)
	}
	if err := checkChars(rawURL); err != nil {
		return "", urlErr("%w", err)
	}
	allowed, err := p.allowedOrigins()
	if err != nil {
		return "", urlErr("invalid policy: %w", err)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", urlErr("URL does not parse")
	}
	if !u.IsAbs() || u.Opaque != "" {
		return "", urlErr("URL must be absolute, like https://host/path")
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return "", urlErr("URL must not contain userinfo")
	}
	o, err := originOf(u)
	if err != nil {
		return "", urlErr("%w", err)
	}
	loopback := isLoopback(o.host)
	if o.scheme == "http" && !(p.Development && loopback) {
		return "", urlErr("scheme must be https (http is allowed only for loopback hosts in development)")
	}
	if !(p.Development && loopback) {
		if len(allowed) == 0 {
			return "", urlErr("no allowed origins are configured")
		}
		ok := false
		for _, a := range allowed {
			if a == o {
				ok = true
				break
			}
		}
		if !ok {
			return "", urlErr("origin %s is not an allowed origin", o)
		}
	}
	if strings.Contains(rawURL, "#") {
		return "", urlErr("URL must not have a fragment")
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return "", urlErr("path has an invalid escape")
		}
		if looksLikeJWT(dec) {
			return "", urlErr("path segment looks like a JWT; use an opaque server-side handle")
		}
		if looksLikeEmail(dec) {
			return "", urlErr("path segment looks like an email address; keep user data out of URLs")
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return "", urlErr("query does not parse")
		}
		secrets := p.Secrets.resolved()
		if secrets.err != nil {
			return "", urlErr("invalid secret policy: %w", secrets.err)
		}
		for _, name := range slices.Sorted(maps.Keys(q)) {
			vals := q[name]
			if credentialParam(name, secrets) {
				return "", urlErr("query parameter %s names a credential; put an opaque handle in the path instead", quoteTrunc(name))
			}
			for _, v := range vals {
				switch {
				case looksLikeJWT(v):
					return "", urlErr("query parameter %s holds a JWT", quoteTrunc(name))
				case looksLikeCredential(v):
					return "", urlErr("query parameter %s holds a credential-like random value; put opaque handles in the path", quoteTrunc(name))
				case looksLikeEmail(v):
					return "", urlErr("query parameter %s holds an email address; keep user data out of URLs", quoteTrunc(name))
				}
			}
		}
	}
	return u.String(), nil
}

// isURLCredentialWord reports whether a query parameter name word denotes a
// credential.
func isURLCredentialWord(w string) bool {
	switch w {
	case "token", "secret", "password", "passwd", "pwd", "pass", "passphrase",
		"passcode", "apikey", "key", "code", "jwt", "otp", "totp", "pin", "sig",
		"signature", "hmac", "credential", "cred", "session", "sid", "sess",
		"auth", "authorization", "bearer", "cookie", "assertion", "saml", "ticket":
		return true
	}
	return false
}

// credentialParam reports whether a query parameter name denotes a
// credential.
func credentialParam(name string, secrets SecretPolicy) bool {
	toks := words(name)
	for _, t := range toks {
		if isURLCredentialWord(t) || (len(t) > 1 && t[len(t)-1] == 's' && isURLCredentialWord(t[:len(t)-1])) {
			return true
		}
	}
	return secrets.CheckField(name, "", "") != nil
}

func isB64URL(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }

// looksLikeJWT reports whether s has the compact JWS/JWE shape: three or
// more dot-separated base64url segments, the first starting "eyJ" (a
// base64url-encoded '{"').
func looksLikeJWT(s string) bool {
	if len(s) < 16 || !strings.HasPrefix(s, "eyJ") || strings.Count(s, ".") < 2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isB64URL(s[i]) && s[i] != '.' && s[i] != '=' {
			return false
		}
	}
	return true
}

// looksLikeCredential reports whether s looks like a random bearer value: at
// least 32 characters, all from the base64, base64url and hex alphabets (plus
// '.' and '~'), an unbroken alphanumeric run of at least 16, and at least two
// of lower-case letters, upper-case letters and digits. Slugs, UUIDs and
// words do not qualify.
func looksLikeCredential(s string) bool {
	if len(s) < 32 {
		return false
	}
	run, longest := 0, 0
	var lower, upper, digit bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case isDigit(c):
			digit = true
		case strings.IndexByte("-_.~+/=", c) >= 0:
			run = 0
			continue
		default:
			return false
		}
		run++
		longest = max(longest, run)
	}
	classes := 0
	for _, b := range []bool{lower, upper, digit} {
		if b {
			classes++
		}
	}
	return longest >= 16 && classes >= 2
}

// looksLikeEmail reports whether s is an email address.
func looksLikeEmail(s string) bool {
	return strings.Contains(s, "@") && strings.Contains(s, ".") && validEmail(s)
}

// handleBytes is the entropy of a NewHandle handle.
const handleBytes = 32

// NewHandle returns a fresh opaque handle for a URL-mode elicitation: 256
// bits from crypto/rand, base64url-encoded without padding (43 characters).
// Store it server-side bound to the initiating user, the operation and an
// expiry; use it for one purpose only; and consume it when the flow
// completes. The handle carries no meaning of its own.
func NewHandle() (string, error) {
	var b [handleBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("elicit: new handle: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// HandleURL appends handle as a final path segment to base, giving
// "https://app.example.com/elicit/<handle>" for base
// "https://app.example.com/elicit". base must be an absolute http(s) URL
// without userinfo, query or fragment; handle must be 22 to 512 base64url
// characters (at least 128 bits when random). HandleURL does not apply a
// URLPolicy: the server checks the URL it is given with [URLPolicy.Check].
func HandleURL(base, handle string) (string, error) {
	if len(handle) < 22 || len(handle) > 512 {
		return "", fmt.Errorf("elicit: handle URL: handle must be 22 to 512 characters, got %d", len(handle))
	}
	for i := 0; i < len(handle); i++ {
		if !isB64URL(handle[i]) {
			return "", errors.New("elicit: handle URL: handle must contain only base64url characters")
		}
	}
	if err := checkChars(base); err != nil {
		return "", fmt.Errorf("elicit: handle URL: base: %w", err)
	}
	u, err := url.Parse(base)
	if err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "" {
		return "", errors.New("elicit: handle URL: base must be an absolute URL like https://host/path")
	}
	if s := strings.ToLower(u.Scheme); s != "https" && s != "http" {
		return "", fmt.Errorf("elicit: handle URL: base scheme must be https, not %s", quoteTrunc(s))
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || strings.Contains(base, "#") {
		return "", errors.New("elicit: handle URL: base must not have userinfo, a query or a fragment")
	}
	return u.JoinPath(handle).String(), nil
}
