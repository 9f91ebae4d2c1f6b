package authserver

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// addrLimiter is a token bucket per client address: perMinute requests a
// minute, as many at once.
type addrLimiter struct {
	perSec, burst float64
	max           int

	mu      sync.Mutex
	buckets map[string]*rateBucket
}

type rateBucket struct {
	tokens float64
	at     time.Time
}

func newAddrLimiter(perMinute, maxAddresses int) *addrLimiter {
	return &addrLimiter{perSec: float64(perMinute) / 60, burst: float64(perMinute), max: maxAddresses, buckets: map[string]*rateBucket{}}
}

// allow takes a token of addr's bucket; when there is none it reports how
// long until there is.
func (l *addrLimiter) allow(addr string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[addr]
	if b == nil {
		if len(l.buckets) >= l.max {
			l.pruneLocked(now)
		}
		b = &rateBucket{tokens: l.burst, at: now}
		l.buckets[addr] = b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.burst, b.tokens+d.Seconds()*l.perSec)
		b.at = now
	}
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) / l.perSec * float64(time.Second))
	}
	b.tokens--
	return true, 0
}

// pruneLocked forgets the addresses whose buckets are full again (they
// lose nothing); when none is, half of them (they get a fresh bucket,
// which bounds what that costs: one burst each).
func (l *addrLimiter) pruneLocked(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.perSec >= l.burst {
			delete(l.buckets, k)
		}
	}
	for k := range l.buckets {
		if len(l.buckets) < l.max/2 {
			break
		}
		delete(l.buckets, k)
	}
}

// clientAddress names the browser behind r for the rate: its IP address,
// an IPv6 one by its /64 (one host usually holds a whole /64).
func (s *Server) clientAddress(r *http.Request) string {
	a := r.RemoteAddr
	if s.cfg.ClientAddress != nil {
		a = s.cfg.ClientAddress(r)
	} else if h, _, err := net.SplitHostPort(a); err == nil {
		a = h
	}
	ip, err := netip.ParseAddr(a)
	if err != nil {
		return a
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
