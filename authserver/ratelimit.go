package authserver

import (
	"net/http"

	"github.com/weftmcp/weft/internal/addrkey"
)

// clientAddress names the browser behind r for the authorization rate:
// its IP address, an IPv6 one by its /64 (addrkey); what
// Config.ClientAddress returns when it is not an IP address.
func (s *Server) clientAddress(r *http.Request) string {
	a := r.RemoteAddr
	if s.cfg.ClientAddress != nil {
		a = s.cfg.ClientAddress(r)
	}
	if k := addrkey.Of(a); k != "" {
		return k
	}
	return a
}
