// Package hostcheck holds the Host and Origin checks that protect local HTTP
// listeners from DNS rebinding: a web page whose name now resolves to a
// loopback address still sends its own name in Host and its own origin in
// Origin, so a listener that accepts only loopback names (and the names an
// operator lists) in both refuses it.
package hostcheck

import (
	"net"
	"net/url"
	"strings"
)

// LoopbackHost reports whether host (without port; IPv6 with or without
// brackets) is "localhost" or a loopback address.
func LoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HostAllowed reports whether the Host header value hostport names a
// loopback host, or equals (case-insensitively, with or without its port)
// one of allowed.
func HostAllowed(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host != "" && LoopbackHost(host) {
		return true
	}
	for _, a := range allowed {
		if strings.EqualFold(a, hostport) || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// OriginAllowed reports whether an Origin header value is an http or https
// origin of a loopback host, or one of allowed (compared without a
// trailing slash, case-insensitively). An absent Origin ("") is allowed:
// only browsers send one, and requests without it are not cross-site.
func OriginAllowed(origin string, allowed []string) bool {
	if origin == "" {
		return true
	}
	for _, a := range allowed {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return LoopbackHost(u.Hostname())
}
