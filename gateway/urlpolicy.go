package gateway

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
)

// URL elicitation through the gateway. An upstream's URL-mode elicitation
// (elicitation/create with mode "url", or the -32042 error's
// interactions) sends the gateway's client to a web page the upstream
// chose. Which pages an upstream may send clients to is the operator's
// call, per upstream (UpstreamConfig.URLElicitation). Without one, the
// gateway's Options.URLElicitation applies (weft gateway sets an empty
// one: nothing is allowed), with the upstream's own origin added for an
// https URL upstream; when neither is set (gateway.New or Mount without the
// option, a stdio upstream or an http URL), the server's own
// weft.Options.URLElicitation decides when the request is emitted, as for
// its own tools. Every URL is checked as elicit.URLPolicy.Check does
// (https, no credentials in it...). A URL the gateway refuses never
// reaches a client: the upstream's request is answered with -32602, a
// -32042 is relayed as -31051, and the gateway logs the setting to change.

// URLElicitationConfig is an upstream's policy for the URLs of its URL
// elicitations.
type URLElicitationConfig struct {
	// AllowedOrigins lists the origins its URLs may point at
	// ("https://host" or "https://host:port").
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
	// AnyHTTPS allows every https origin (the other checks still apply):
	// for an upstream trusted to send users anywhere.
	AnyHTTPS bool `json:"anyHTTPS,omitempty"`
	// Development also allows http and https URLs of loopback hosts.
	Development bool `json:"development,omitempty"`
}

// validate checks the origins.
func (c *URLElicitationConfig) validate() error {
	for i, o := range c.AllowedOrigins {
		p := elicit.URLPolicy{AllowedOrigins: []string{o}}
		if _, err := p.Check(strings.TrimSuffix(o, "/") + "/"); err != nil && strings.Contains(err.Error(), "invalid policy") {
			return fmt.Errorf("urlElicitation.allowedOrigins[%d] = %q: %w", i, o, err)
		}
	}
	return nil
}

// urlPolicy returns the policy rawURL is checked against, for the
// upstream's URL elicitation; false: the server's own.
func (u *upstream) urlPolicy(rawURL string) (elicit.URLPolicy, bool) {
	c := u.cfg.URLElicitation
	if c == nil {
		var p elicit.URLPolicy
		set := u.g.urlDefault != nil
		if set {
			p = *u.g.urlDefault
		}
		if own, err := url.Parse(u.cfg.URL); err == nil && own.Scheme == "https" && own.Host != "" {
			p.AllowedOrigins = append(p.AllowedOrigins[:len(p.AllowedOrigins):len(p.AllowedOrigins)], "https://"+own.Host)
			set = true
		}
		return p, set
	}
	p := elicit.URLPolicy{AllowedOrigins: c.AllowedOrigins, Development: c.Development}
	if c.AnyHTTPS {
		if v, err := url.Parse(rawURL); err == nil && v.Scheme == "https" && v.Host != "" && !strings.Contains(v.Host, "@") {
			p.AllowedOrigins = append(p.AllowedOrigins[:len(p.AllowedOrigins):len(p.AllowedOrigins)], "https://"+v.Host)
		}
	}
	return p, true
}

// checkURL checks the URL of an upstream's URL elicitation (params of
// elicitation/create, or one interaction of a -32042); nil for any other
// request. The error names the setting to change.
func (u *upstream) checkURL(method string, params exactjson.Value) error {
	if method != "elicitation/create" || !isStr(mustGet(params, "mode"), "url") {
		return nil
	}
	raw := str(params, "url")
	pol, ok := u.urlPolicy(raw)
	if !ok {
		return nil // the server's policy decides
	}
	if _, err := pol.Check(raw); err != nil {
		err = fmt.Errorf("upstream %q asked the client to open %q: %w; allow its origin in urlElicitation.allowedOrigins of the upstream (or urlElicitation.anyHTTPS)", u.cfg.Name, truncateLine([]byte(raw)), err)
		u.g.log.Warn("gateway: refused an upstream's URL elicitation", "upstream", u.cfg.Name, "err", err)
		return err
	}
	return nil
}
