package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestNewKeyringValidation(t *testing.T) {
	a := mustKey(t, "a", testSecret(1, 32))
	aOther := mustKey(t, "a", testSecret(9, 32))
	aAgain := mustKey(t, "a", testSecret(1, 32)) // identical to a, separate value
	bSameBytes := mustKey(t, "b", testSecret(1, 32))
	b := mustKey(t, "b", testSecret(2, 32))
	c := mustKey(t, "c", testSecret(3, 32))
	cases := []struct {
		name   string
		active Key
		ver    []Key
		err    error
		msg    string
	}{
		{"active only", a, nil, nil, ""},
		{"with verification", a, []Key{c, b}, nil, ""},
		{"zero active", Key{}, nil, ErrInvalidKey, "zero Key"},
		{"zero verification", a, []Key{{}}, ErrInvalidKey, "zero Key"},
		{"same id other bytes", a, []Key{aOther}, ErrKeyConflict, "two different secrets"},
		{"identical duplicate", a, []Key{aAgain}, ErrKeyConflict, "listed twice"},
		{"same value twice", a, []Key{a}, ErrKeyConflict, "listed twice"},
		{"duplicate verification", a, []Key{b, b}, ErrKeyConflict, "listed twice"},
		{"same bytes other id", a, []Key{bSameBytes}, ErrKeyConflict, "same secret bytes"},
		{"same bytes among verification", c, []Key{a, bSameBytes}, ErrKeyConflict, "same secret bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewKeyring(tc.active, tc.ver...)
			if tc.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) || r != nil {
				t.Fatalf("NewKeyring = %v, %v; want %v containing %q", r, err, tc.err, tc.msg)
			}
		})
	}
}

func TestKeyringAccessors(t *testing.T) {
	a, b, c := mustKey(t, "a", testSecret(1, 32)), mustKey(t, "b", testSecret(2, 32)), mustKey(t, "c", testSecret(3, 32))
	ver := []Key{c, b}
	r := mustKeyring(t, a, ver...)
	ver[0] = a // NewKeyring copied the slice
	if r.ActiveID() != "a" || !slices.Equal(r.VerificationIDs(), []string{"b", "c"}) {
		t.Fatal(r.ActiveID(), r.VerificationIDs())
	}
	if r.Active().ID() != "a" || len(r.Verification()) != 2 || r.Verification()[0].ID() != "b" {
		t.Fatal("Active/Verification")
	}
	r.Verification()[0] = a // a copy
	r.VerificationIDs()[0] = "x"
	if r.VerificationIDs()[0] != "b" {
		t.Fatal("accessors returned internal slices")
	}
}

func TestFingerprint(t *testing.T) {
	a := mustKey(t, "a", testSecret(1, 32))
	a2 := mustKey(t, "a", testSecret(1, 32)) // same id and bytes, separate value
	aOther := mustKey(t, "a", testSecret(9, 32))
	aLonger := mustKey(t, "a", append(testSecret(1, 32), 0)) // one extra zero byte
	b := mustKey(t, "b", testSecret(2, 32))
	c := mustKey(t, "c", testSecret(3, 32))
	bRenamed := mustKey(t, "b2", testSecret(2, 32))
	fp := func(active Key, ver ...Key) Fingerprint { return mustKeyring(t, active, ver...).Fingerprint() }

	base := fp(a, b, c)
	if base.Version != "v1" || base.Profile != "weft-request-state-v1" || len(base.Value) != 43 {
		t.Fatalf("fingerprint = %+v", base)
	}
	if got := base.String(); got != "v1:weft-request-state-v1:"+base.Value {
		t.Fatalf("String = %q", got)
	}
	equal := []struct {
		name string
		f    Fingerprint
	}{
		{"same keys", fp(a, b, c)},
		{"separately constructed identical key", fp(a2, b, c)},
		{"verification order", fp(a, c, b)},
		{"round trip through file", func() Fingerprint {
			data, _ := mustKeyring(t, a, b, c).MarshalFile()
			r, err := ParseKeyringFile(data)
			if err != nil {
				t.Fatal(err)
			}
			return r.Fingerprint()
		}()},
	}
	for _, tc := range equal {
		if !base.Equal(tc.f) || base != tc.f {
			t.Errorf("%s: %v != %v", tc.name, tc.f, base)
		}
	}
	different := []struct {
		name string
		f    Fingerprint
	}{
		{"same id other bytes", fp(aOther, b, c)},
		{"bytes with an extra zero", fp(aLonger, b, c)},
		{"roles swapped", fp(b, a, c)},
		{"key missing", fp(a, b)},
		{"extra key", fp(a, b, c, mustKey(t, "d", testSecret(4, 32)))},
		{"renamed key", fp(a, bRenamed, c)},
		{"active only", fp(a)},
	}
	seen := map[string]string{base.Value: "base"}
	for _, tc := range different {
		if base.Equal(tc.f) {
			t.Errorf("%s: fingerprint equals the base", tc.name)
		}
		if prev, dup := seen[tc.f.Value]; dup {
			t.Errorf("%s: same value as %s", tc.name, prev)
		}
		seen[tc.f.Value] = tc.name
	}
	// Version and profile take part in Equal.
	for _, g := range []Fingerprint{{"v2", base.Profile, base.Value}, {base.Version, "other", base.Value}} {
		if base.Equal(g) {
			t.Errorf("Equal ignores %+v", g)
		}
	}
	// The fingerprint reveals no key bytes (trivially: it is a digest).
	for _, k := range []Key{a, b, c} {
		for _, form := range secretForms(k.Secret()) {
			if strings.Contains(base.String(), form) {
				t.Errorf("fingerprint contains %q", form)
			}
		}
		if strings.Contains(base.Value, base64.RawURLEncoding.EncodeToString(k.Secret())[:8]) {
			t.Error("fingerprint contains a secret prefix")
		}
	}
}

func TestKeyringAndManagerRedaction(t *testing.T) {
	sa, sb := printableSecret(1), printableSecret(7)
	r := mustKeyring(t, mustKey(t, "a", sa), mustKey(t, "b", sb))
	m := NewManager(r, nil)
	res, err := m.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	type holder struct {
		ring *Keyring
		mgr  *Manager
		res  *Reservation
		R    *Keyring
		M    *Manager
	}
	h := holder{r, m, res, r, m}
	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		for name, v := range map[string]any{"ring": r, "mgr": m, "res": res, "holder": h, "*holder": &h, "snapshot": m.Snapshot()} {
			outputs[name+" "+verb] = fmt.Sprintf(verb, v)
		}
	}
	for _, mk := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var buf bytes.Buffer
		slog.New(mk(&buf)).Info("keys", "ring", r, "mgr", m, "res", res, "holder", h, "snapshot", m.Snapshot())
		outputs["slog "+buf.String()[:12]] = buf.String()
	}
	for what, out := range outputs {
		checkNoSecret(t, what, out, sa, sb)
	}
	wantRing := `seal.Keyring{active:"a", verification:["b"], fingerprint:"` + r.Fingerprint().String() + `"}`
	if got := fmt.Sprintf("%#v", r); got != wantRing {
		t.Errorf("Keyring = %s", got)
	}
	wantMgr := `seal.Manager{active:"a", verification:["b"], fingerprint:"` + r.Fingerprint().String() + `", ephemeral:false}`
	if got := fmt.Sprintf("%+v", m); got != wantMgr {
		t.Errorf("Manager = %s", got)
	}
	if got := fmt.Sprint(res); got != `seal.Reservation{key:"a", released:false}` {
		t.Errorf("Reservation = %s", got)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("m", "mgr", m)
	want := `"mgr":{"active":"a","verification":["b"],"fingerprint":"` + r.Fingerprint().String() + `","ephemeral":false}`
	if !strings.Contains(buf.String(), want) {
		t.Errorf("slog JSON = %s\nwant %s", buf.String(), want)
	}
}
