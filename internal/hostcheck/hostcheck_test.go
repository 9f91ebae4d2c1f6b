package hostcheck

import "testing"

func TestHostAllowed(t *testing.T) {
	for _, c := range []struct {
		host    string
		allowed []string
		want    bool
	}{
		{"127.0.0.1:8080", nil, true},
		{"127.9.9.9", nil, true},
		{"localhost:1", nil, true},
		{"LOCALHOST", nil, true},
		{"[::1]:8080", nil, true},
		{"::1", nil, true},
		{"", nil, false},
		{"evil.example:8080", nil, false},
		{"127.0.0.1.evil.example", nil, false},
		{"localhost.evil.example:80", nil, false},
		{"admin.internal:9", []string{"admin.internal"}, true},
		{"admin.internal:9", []string{"admin.internal:9"}, true},
		{"admin.internal:10", []string{"admin.internal:9"}, false},
	} {
		if got := HostAllowed(c.host, c.allowed); got != c.want {
			t.Errorf("HostAllowed(%q, %q) = %v, want %v", c.host, c.allowed, got, c.want)
		}
	}
}

func TestOriginAllowed(t *testing.T) {
	for _, c := range []struct {
		origin  string
		allowed []string
		want    bool
	}{
		{"", nil, true},
		{"http://localhost:3000", nil, true},
		{"https://127.0.0.1", nil, true},
		{"http://[::1]:9", nil, true},
		{"null", nil, false},
		{"file://", nil, false},
		{"https://evil.example", nil, false},
		{"http://localhost.evil.example", nil, false},
		{"https://console.example", []string{"https://console.example/"}, true},
	} {
		if got := OriginAllowed(c.origin, c.allowed); got != c.want {
			t.Errorf("OriginAllowed(%q, %q) = %v, want %v", c.origin, c.allowed, got, c.want)
		}
	}
}
