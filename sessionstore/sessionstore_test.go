package sessionstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/weftmcp/weft/sessionstore"
)

func TestForCreate(t *testing.T) {
	now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	earlier := now.Add(-time.Hour)
	valid := sessionstore.Session{ID: "s1", IdleTimeout: time.Minute, ExpiresAt: now.Add(time.Hour)}
	tests := []struct {
		name    string
		in      sessionstore.Session
		wantErr bool
		created time.Time
	}{
		{"defaults filled", valid, false, now},
		{"times kept", func() sessionstore.Session {
			s := valid
			s.CreatedAt, s.LastSeen = earlier, earlier
			s.Subscriptions, s.ClientInfo = []string{"a"}, []byte(`{"name":"c"}`)
			return s
		}(), false, earlier},
		{"invalid id", func() sessionstore.Session { s := valid; s.ID = ""; return s }(), true, time.Time{}},
		{"no expiry", func() sessionstore.Session { s := valid; s.ExpiresAt = time.Time{}; return s }(), true, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			got, err := in.ForCreate(now)
			if tt.wantErr {
				if !errors.Is(err, sessionstore.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.CreatedAt.Equal(tt.created) || got.LastSeen.IsZero() {
				t.Fatalf("CreatedAt %v LastSeen %v, want CreatedAt %v", got.CreatedAt, got.LastSeen, tt.created)
			}
			if got.Subscriptions == nil || got.ClientCapabilities == nil || got.ClientInfo == nil {
				t.Fatalf("nil fields left: %+v", got)
			}
			if len(in.Subscriptions) > 0 {
				got.Subscriptions[0] = "changed"
				if in.Subscriptions[0] != "a" {
					t.Fatal("the copy shares the caller's subscriptions")
				}
			}
		})
	}
}
