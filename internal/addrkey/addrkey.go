// Package addrkey names a client by its network address, for bounds and
// shares counted per client: the IP address, and for IPv6 its /64 prefix
// (one host usually holds a whole /64, so counting by address would give
// it billions of shares).
package addrkey

import (
	"net"
	"net/netip"
)

// Of returns the key of remoteAddr (host:port, or a bare host): "" when it
// is empty or not an IP address.
func Of(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return ""
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.WithZone("").Prefix(64)
		return p.String()
	}
	return ip.String()
}
