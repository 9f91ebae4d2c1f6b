package elicit

import (
	"errors"
	"math/big"
	"net/url"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// FuzzParseResult checks that ParseResult never panics, that every error
// wraps ErrInvalidResult, and that accepted results only hold protocol
// content values.
func FuzzParseResult(f *testing.F) {
	for _, s := range []string{
		`{"action":"accept","content":{"name":"octocat","n":3.50,"b":true,"tags":["a"]}}`,
		`{"action":"decline"}`,
		`{"action":"cancel","content":null}`,
		`{"action":"accept","content":{"a":null}}`,
		`{"action":"accept","content":{"a":{"b":1}}}`,
		`{"action":"decline","content":{}}`,
		`{"action":"maybe"}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := exactjson.Parse(data, exactjson.Limits{})
		if err != nil {
			return
		}
		r, err := ParseResult(v)
		if err != nil {
			if !errors.Is(err, ErrInvalidResult) {
				t.Fatalf("error %v does not wrap ErrInvalidResult", err)
			}
			return
		}
		switch r.Action {
		case Accepted:
		case Declined, Cancelled:
			if !r.Content.IsNull() {
				t.Fatalf("%v result with content %s", r.Action, r.Content)
			}
		default:
			t.Fatalf("invalid action %v", r.Action)
		}
		if r.Content.IsNull() {
			return
		}
		if r.Content.Kind() != exactjson.KindObject {
			t.Fatalf("content is %s", r.Content.Kind())
		}
		for name, fv := range r.Content.All() {
			switch fv.Kind() {
			case exactjson.KindString, exactjson.KindNumber, exactjson.KindBool:
			case exactjson.KindArray:
				for e := range fv.Values() {
					if e.Kind() != exactjson.KindString {
						t.Fatalf("content %q holds a %s array element", name, e.Kind())
					}
				}
			default:
				t.Fatalf("content %q is %s", name, fv.Kind())
			}
		}
	})
}

// FuzzValidate checks that arbitrary schema and content never panic
// ParseSchema, Validate, the secret policy or Answer; that content passing
// Validate is within the protocol union; and that content generated to
// satisfy a parsed schema passes Validate.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(validateSchema), []byte(`{"name":"Alice","price":3.50,"tags":["a"]}`))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"integer","minimum":0.5,"maximum":2.5}},"required":["a"]}`), []byte(`{"a":2.0}`))
	f.Add([]byte(`{"type":"object","properties":{"e":{"type":"string","format":"email","minLength":30}}}`), []byte(`{"e":"a@b.co"}`))
	f.Add([]byte(`{"type":"object","properties":{"t":{"type":"string","format":"date-time","minLength":21,"maxLength":21}}}`), []byte(`{}`))
	f.Add([]byte(`{"type":"object","properties":{}}`), []byte(`{"x":1}`))
	f.Fuzz(func(t *testing.T, schemaJSON, contentJSON []byte) {
		sv, err := exactjson.Parse(schemaJSON, exactjson.Limits{})
		if err != nil {
			return
		}
		s, err := ParseSchema(sv)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("ParseSchema error %v does not wrap ErrInvalidSchema", err)
			}
			return
		}
		_ = DefaultSecretPolicy().CheckSchema(s)
		if cv, err := exactjson.Parse(contentJSON, exactjson.Limits{}); err == nil {
			verr := s.Validate(cv)
			_, _, _ = Answer(s, exactjson.Object(
				exactjson.Field("action", exactjson.String("accept")),
				exactjson.Field("content", cv)))
			if verr == nil {
				if _, err := ParseResult(exactjson.Object(
					exactjson.Field("action", exactjson.String("accept")),
					exactjson.Field("content", cv))); err != nil {
					t.Fatalf("valid content %s is outside the protocol union: %v", cv, err)
				}
			} else if !errors.Is(verr, ErrInvalidContent) {
				t.Fatalf("Validate error %v does not match ErrInvalidContent", verr)
			}
		}
		checkSample(t, s)
		if built, err := BuildSchema(fieldsFromBytes(schemaJSON)...); err == nil {
			checkSample(t, built)
		}
	})
}

// checkSample generates content for s and checks that it validates and that
// Answer accepts it unchanged.
func checkSample(t *testing.T, s *Schema) {
	t.Helper()
	sample, ok := sampleContent(s)
	if !ok {
		return
	}
	if err := s.Validate(sample); err != nil {
		t.Fatalf("generated content %s fails its schema %s: %v", sample, s.Value(), err)
	}
	content, outcome, err := Answer(s, exactjson.Object(
		exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", sample)))
	if err != nil || outcome != Accepted || !exactjson.Equal(content, sample) {
		t.Fatalf("Answer(%s) = %s, %v, %v", sample, content, outcome, err)
	}
}

// fieldsFromBytes maps fuzz bytes to builder fields, four bytes per field.
func fieldsFromBytes(data []byte) []Field {
	var fields []Field
	decimals := []string{"0", "-1", "0.5", "2.50", "3.5", "1E+2", "-0.001", "7"}
	formats := []Format{"", FormatEmail, FormatURI, FormatDate, FormatDateTime}
	for i := 0; i+4 <= len(data) && len(fields) < 16; i += 4 {
		k, a, b, flags := data[i], int(data[i+1]), int(data[i+2]), data[i+3]
		name := "f" + string(rune('a'+len(fields)))
		var f Field
		opts := []string{"x", "y", "z", "w"}[:1+b%4]
		switch k % 8 {
		case 0:
			f = StringField(name).MinLength(a % 40).MaxLength(a%40 + b%40)
			if fm := formats[b%len(formats)]; fm != "" {
				f = f.Format(fm)
			}
		case 1:
			f = NumberField(name).MinDecimal(decimals[a%8]).MaxDecimal(decimals[b%8])
		case 2:
			f = IntegerField(name).MinDecimal(decimals[a%8])
			if flags&8 != 0 {
				f = f.MaxDecimal(decimals[b%8])
			}
		case 3:
			f = BooleanField(name)
			if flags&4 != 0 {
				f = f.DefaultBool(a%2 == 0)
			}
		case 4:
			f = EnumField(name, opts...)
			if flags&4 != 0 {
				f = f.DefaultString(opts[a%len(opts)])
			}
		case 5:
			var to []Option
			for _, o := range opts {
				to = append(to, Option{Value: o, Title: "T" + o})
			}
			f = TitledEnumField(name, to...)
		case 6:
			f = MultiSelectField(name, opts...).MinItems(a % 3).MaxItems(a%3 + b%3)
		case 7:
			var to []Option
			for _, o := range opts {
				to = append(to, Option{Value: o, Title: o})
			}
			f = TitledMultiSelectField(name, to...).MinItems(a % 5)
		}
		if flags&1 != 0 {
			f = f.Required()
		}
		if flags&2 != 0 {
			f = f.Title("Title " + name).Description("About " + name)
		}
		fields = append(fields, f)
	}
	return fields
}

// FuzzCheckField checks that the secret policy never panics on arbitrary
// text.
func FuzzCheckField(f *testing.F) {
	f.Add("newPassword", "API key", "Your card number")
	f.Add("token_count", "Pinpoint (classic)", "2FA code 4-digit PIN")
	f.Fuzz(func(t *testing.T, name, title, description string) {
		err := DefaultSecretPolicy().CheckField(name, title, description)
		if err != nil && !errors.Is(err, ErrSecretField) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// FuzzURLPolicyCheck checks that URL checks never panic and that an accepted
// URL keeps the properties the policy promises.
func FuzzURLPolicyCheck(f *testing.F) {
	f.Add("https://app.example.com/elicit/pZ8qW3vN0xK5rT2yB7mC4hJ9gF6dS1aL0eU3iO8nQ5w")
	f.Add("https://app.example.com/x?token=a#b")
	f.Add("http://localhost:8080/x?lang=en")
	f.Add(`https://app.example.com\@evil.com/`)
	pol := URLPolicy{AllowedOrigins: []string{"https://app.example.com"}, Development: true}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := pol.Check(raw)
		if err != nil {
			if !errors.Is(err, ErrUnsafeURL) {
				t.Fatalf("error %v does not wrap ErrUnsafeURL", err)
			}
			return
		}
		u, perr := url.Parse(got)
		if perr != nil || strings.Contains(got, "#") || u.User != nil ||
			!(u.Scheme == "https" || u.Scheme == "http" && isLoopback(strings.ToLower(u.Hostname()))) {
			t.Fatalf("accepted %q → %q", raw, got)
		}
		again, err := pol.Check(got)
		if err != nil || again != got {
			t.Fatalf("normalised URL %q does not re-check: %q, %v", got, again, err)
		}
	})
}

// sampleContent builds content that satisfies s, giving up (false) when a
// required field's constraints are beyond this simple generator.
func sampleContent(s *Schema) (exactjson.Value, bool) {
	var members []exactjson.Member
	for i := range s.props {
		p := &s.props[i]
		v, ok := sampleValue(p)
		if !ok {
			if p.required {
				return exactjson.Null(), false
			}
			continue
		}
		members = append(members, exactjson.Field(p.name, v))
	}
	return exactjson.Object(members...), true
}

func sampleValue(p *property) (exactjson.Value, bool) {
	if p.hasDefault {
		return p.def, true
	}
	switch p.kind {
	case KindString:
		return sampleString(p)
	case KindNumber:
		switch {
		case p.hasMin:
			return exactjson.NumberValue(p.minimum), true
		case p.hasMax:
			return exactjson.NumberValue(p.maximum), true
		}
		return exactjson.Int(0), true
	case KindInteger:
		return sampleInteger(p)
	case KindBoolean:
		return exactjson.Bool(true), true
	case KindSingleSelect:
		return exactjson.String(p.options[0].Value), true
	case KindMultiSelect:
		n := max(p.minItems, 0)
		elems := make([]exactjson.Value, n)
		for i := range n {
			elems[i] = exactjson.String(p.options[i].Value)
		}
		return exactjson.Array(elems...), true
	}
	return exactjson.Null(), false
}

func sampleString(p *property) (exactjson.Value, bool) {
	target := max(p.minLen, 0)
	var s string
	switch p.format {
	case "":
		s = strings.Repeat("a", target)
	case FormatEmail:
		target = max(target, 6)
		if target > 69 {
			return exactjson.Null(), false
		}
		s = strings.Repeat("a", target-5) + "@b.co"
	case FormatURI:
		target = max(target, 13)
		s = "https://e.co/" + strings.Repeat("a", target-13)
	case FormatDate:
		s = "2026-07-28"
	case FormatDateTime:
		s = "2026-07-28T09:30:00Z"
		if target > 20 {
			s = "2026-07-28T09:30:00." + strings.Repeat("1", max(target-21, 1)) + "Z"
		}
	}
	n := len(s)
	if n < target || p.maxLen >= 0 && n > p.maxLen {
		return exactjson.Null(), false
	}
	return exactjson.String(s), true
}

func sampleInteger(p *property) (exactjson.Value, bool) {
	var c exactjson.Number
	switch {
	case p.hasMin && p.minimum.IsInteger():
		c = p.minimum
	case p.hasMin:
		r := p.minimum.Rat()
		q := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for positive denominators
		q.Add(q, big.NewInt(1))
		n, err := exactjson.ParseNumber(q.String())
		if err != nil {
			return exactjson.Null(), false
		}
		c = n
	case p.hasMax && p.maximum.IsInteger():
		c = p.maximum
	case p.hasMax:
		r := p.maximum.Rat()
		q := new(big.Int).Div(r.Num(), r.Denom())
		n, err := exactjson.ParseNumber(q.String())
		if err != nil {
			return exactjson.Null(), false
		}
		c = n
	default:
		return exactjson.Int(0), true
	}
	if p.hasMax && c.Cmp(p.maximum) > 0 {
		return exactjson.Null(), false
	}
	return exactjson.NumberValue(c), true
}
