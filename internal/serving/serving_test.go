package serving

import "testing"

func TestCheckExposure(t *testing.T) {
	tests := []struct {
		addr          string
		authenticated bool
		allowed       bool
		ok            bool
	}{
		{"127.0.0.1:8080", false, false, true},
		{"127.0.0.5:8080", false, false, true},
		{"[::1]:8080", false, false, true},
		{"localhost:8080", false, false, true},
		{"0.0.0.0:8080", false, false, false},
		{":8080", false, false, false},
		{"[::]:8080", false, false, false},
		{"10.0.0.7:8080", false, false, false},
		{"example.com:8080", false, false, false},
		{"0.0.0.0:8080", true, false, true},
		{"0.0.0.0:8080", false, true, true},
		{"no-port", false, false, false},
	}
	for _, tt := range tests {
		err := CheckExposure(tt.addr, tt.authenticated, tt.allowed, "--tokens FILE")
		if tt.ok != (err == nil) {
			t.Errorf("CheckExposure(%q, authenticated %v, allowed %v) = %v", tt.addr, tt.authenticated, tt.allowed, err)
		}
	}
}
