package gateway

// UpstreamStatus is what Gateway.Status reports of one upstream.
type UpstreamStatus struct {
	// Name is the upstream's configured name; Transport "stdio" or "http".
	Name      string `json:"name"`
	Transport string `json:"transport"`
	// State is "connected", "connecting" (a connection is being made),
	// or "disconnected" (the last connection ended; the next call
	// reconnects).
	State string `json:"state"`
	// Protocol is the revision spoken on the current connection ("" when
	// there is none).
	Protocol string `json:"protocol,omitempty"`
	// The items the upstream has registered on the server.
	Tools     int `json:"tools"`
	Prompts   int `json:"prompts"`
	Resources int `json:"resources"`
	Templates int `json:"resourceTemplates"`
}

// Status reports the state of every upstream, in configuration order,
// without waiting for a connection being made.
func (g *Gateway) Status() []UpstreamStatus {
	out := make([]UpstreamStatus, 0, len(g.ups))
	for _, u := range g.ups {
		s := UpstreamStatus{Name: u.cfg.Name, Transport: "http", State: "connecting"}
		if u.cfg.Command != "" {
			s.Transport = "stdio"
		}
		if u.mu.TryLock() {
			s.State = "disconnected"
			if c := u.c; c != nil && !c.retired.Load() {
				select {
				case <-c.done():
				default:
					s.State, s.Protocol = "connected", c.version
				}
			}
			u.mu.Unlock()
		}
		u.regMu.Lock()
		s.Tools, s.Prompts, s.Resources, s.Templates = len(u.reg.tools), len(u.reg.prompts), len(u.reg.resources), len(u.reg.templates)
		u.regMu.Unlock()
		out = append(out, s)
	}
	return out
}
