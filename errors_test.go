package weft

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestCodeOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, 0},
		{"application error", NewError(1000, "Quota exceeded"), 1000},
		{"wrapped application error", fmt.Errorf("charge: %w", NewError(-31000, "Declined")), -31000},
		{"framework error", InvalidParams("bad"), CodeInvalidParams},
		{"reserved code refused", NewError(CodeInvalidParams, "forged"), CodeInternalError},
		{"data that does not marshal", NewError(1000, "x").WithData(func() {}), CodeInternalError},
		{"rate limited", RateLimited(0), CodeRateLimited},
		{"plain Go error", errors.New("disk full"), CodeInternalError},
		{"context cancelled", context.Canceled, CodeInternalError},
		{"tool error", ToolErrorf("no such city"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CodeOf(tc.err); got != tc.want {
				t.Errorf("CodeOf = %d (%v), want %d (%v)", got, got, tc.want, tc.want)
			}
		})
	}
}

func TestCodeString(t *testing.T) {
	for c, want := range map[Code]string{
		CodeInvalidParams: "invalid params",
		CodeRateLimited:   "rate limited",
		1000:              "1000",
		-31000:            "-31000",
	} {
		if got := c.String(); got != want {
			t.Errorf("Code(%d).String() = %q, want %q", int(c), got, want)
		}
	}
}

// TestWithDataCopies: WithData leaves the error it is called on as it was,
// so a package-level error value can be decorated per call.
func TestWithDataCopies(t *testing.T) {
	base := NewError(1000, "Quota exceeded")
	withData := base.WithData(map[string]int{"retryAfter": 5})
	if !base.Data.IsNull() {
		t.Errorf("base error gained data %s", base.Data)
	}
	if got := withData.Data.String(); got != `{"retryAfter":5}` {
		t.Errorf("data = %s", got)
	}
	if cleared := withData.WithData(nil); !cleared.Data.IsNull() {
		t.Errorf("WithData(nil) kept %s", cleared.Data)
	}
}
