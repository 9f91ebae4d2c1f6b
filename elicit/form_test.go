package elicit

import (
	"errors"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

func num(t testing.TB, s string) exactjson.Number {
	t.Helper()
	n, err := exactjson.ParseNumber(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// form is what a server does with fields: build the schema, then apply the
// secret policy.
func form(policy SecretPolicy, fields ...Field) (*Schema, error) {
	s, err := BuildSchema(fields...)
	if err != nil {
		return nil, err
	}
	if err := policy.CheckSchema(s); err != nil {
		return nil, err
	}
	return s, nil
}

func TestFormBuildsSchema(t *testing.T) {
	tests := []struct {
		name   string
		fields []Field
		want   string // requestedSchema JSON
	}{
		{"no fields", nil, `{"type":"object","properties":{}}`},
		{"string", []Field{StringField("name").Title("Name").Description("Your name").Required().MinLength(1).MaxLength(50).DefaultString("Ann")},
			`{"type":"object","properties":{"name":{"type":"string","title":"Name","description":"Your name","minLength":1,"maxLength":50,"default":"Ann"}},"required":["name"]}`},
		{"email", []Field{StringField("email").Format(FormatEmail)},
			`{"type":"object","properties":{"email":{"type":"string","format":"email"}}}`},
		{"number exact bounds", []Field{NumberField("price").Min(num(t, "0.50")).MaxDecimal("3.50").Default(exactjson.NumberValue(num(t, "1.25")))},
			`{"type":"object","properties":{"price":{"type":"number","minimum":0.50,"maximum":3.50,"default":1.25}}}`},
		{"integer", []Field{IntegerField("qty").MinInt(1).MaxInt(9).DefaultInt(2)},
			`{"type":"object","properties":{"qty":{"type":"integer","minimum":1,"maximum":9,"default":2}}}`},
		{"decimal default", []Field{NumberField("x").DefaultDecimal("1.50")},
			`{"type":"object","properties":{"x":{"type":"number","default":1.50}}}`},
		{"integer generic default", []Field{IntegerField("qty").MinInt(1).MaxInt(9).Default(exactjson.Int(2))},
			`{"type":"object","properties":{"qty":{"type":"integer","minimum":1,"maximum":9,"default":2}}}`},
		{"boolean", []Field{BooleanField("ok").DefaultBool(true)},
			`{"type":"object","properties":{"ok":{"type":"boolean","default":true}}}`},
		{"enum", []Field{EnumField("c", "Red", "Green").DefaultString("Red")},
			`{"type":"object","properties":{"c":{"type":"string","enum":["Red","Green"],"default":"Red"}}}`},
		{"titled enum", []Field{TitledEnumField("c", Option{"#f00", "Red"}, Option{"#0f0", "Green"})},
			`{"type":"object","properties":{"c":{"type":"string","oneOf":[{"const":"#f00","title":"Red"},{"const":"#0f0","title":"Green"}]}}}`},
		{"multi", []Field{MultiSelectField("m", "a", "b").MinItems(1).MaxItems(2).DefaultStrings("a")},
			`{"type":"object","properties":{"m":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b"]},"default":["a"]}}}`},
		{"titled multi", []Field{TitledMultiSelectField("m", Option{"a", "A"})},
			`{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}`},
		{"two required in order", []Field{StringField("b").Required(), StringField("a").Required()},
			`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"}},"required":["b","a"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := form(DefaultSecretPolicy(), tt.fields...)
			if err != nil {
				t.Fatalf("form: %v", err)
			}
			got, _ := exactjson.Encode(s.Value(), 0)
			if string(got) != tt.want {
				t.Fatalf("schema\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestFormErrors(t *testing.T) {
	tests := []struct {
		name   string
		fields []Field
		want   string
		is     error
	}{
		{"zero field", []Field{{}}, "zero Field", ErrInvalidSchema},
		{"empty name", []Field{StringField("")}, "empty name", ErrInvalidSchema},
		{"duplicate", []Field{StringField("a"), BooleanField("a")}, "declared twice", ErrInvalidSchema},
		{"MinLength on number", []Field{NumberField("a").MinLength(1)}, "MinLength does not apply to a number field", ErrInvalidSchema},
		{"Min on string", []Field{StringField("a").MinInt(1)}, "Min does not apply to a string field", ErrInvalidSchema},
		{"Format on enum", []Field{EnumField("a", "x").Format(FormatDate)}, "Format does not apply", ErrInvalidSchema},
		{"MinItems on enum", []Field{EnumField("a", "x").MinItems(1)}, "MinItems does not apply", ErrInvalidSchema},
		{"bad format", []Field{StringField("a").Format("phone")}, "unsupported format", ErrInvalidSchema},
		{"negative length", []Field{StringField("a").MinLength(-1)}, "out of range", ErrInvalidSchema},
		{"bad decimal", []Field{NumberField("a").MinDecimal("1,5")}, "MinDecimal", ErrInvalidSchema},
		{"bad default decimal", []Field{NumberField("a").DefaultDecimal("NaN")}, "DefaultDecimal", ErrInvalidSchema},
		{"integer default fraction", []Field{IntegerField("a").DefaultDecimal("2.5")}, "default value is invalid", ErrInvalidSchema},
		{"min above max", []Field{NumberField("a").MinDecimal("3.51").MaxDecimal("3.5")}, "greater than maximum", ErrInvalidSchema},
		{"empty enum", []Field{EnumField("a")}, "no options", ErrInvalidSchema},
		{"duplicate option", []Field{MultiSelectField("a", "x", "x")}, "listed twice", ErrInvalidSchema},
		{"bad default", []Field{IntegerField("a").DefaultString("1")}, "default value is invalid", ErrInvalidSchema},
		{"default outside options", []Field{MultiSelectField("a", "x").DefaultStrings("y")}, "default value is invalid", ErrInvalidSchema},
		{"secret", []Field{StringField("name"), StringField("apiKey")}, `"apiKey"`, ErrSecretField},
		{"secret in title", []Field{StringField("value").Title("Password")}, "password", ErrSecretField},
		{"secret number", []Field{IntegerField("pin")}, "PIN", ErrSecretField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := form(DefaultSecretPolicy(), tt.fields...)
			if err == nil {
				t.Fatal("form succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not match %v", err, tt.is)
			}
		})
	}
}

func TestFormSelectionFieldsNotInspected(t *testing.T) {
	_, err := form(DefaultSecretPolicy(),
		BooleanField("resetPassword").Title("Reset password?"),
		EnumField("twoFactor", "sms", "totp").Title("2FA method"),
		MultiSelectField("tokens", "read", "write").Title("Token scopes"))
	if err != nil {
		t.Fatalf("selection fields refused: %v", err)
	}
}

func TestFormPolicies(t *testing.T) {
	field := StringField("badgeCode").Title("Badge code")
	if _, err := form(DefaultSecretPolicy(), field); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	strict := DefaultSecretPolicy().With(Rule{ID: "badge", Reason: "a badge code", Phrases: []string{"badge code"}})
	_, err := form(strict, field)
	var se *SecretFieldError
	if !errors.As(err, &se) || se.Rule != "badge" || se.Field != "badgeCode" {
		t.Fatalf("strict policy: %v", err)
	}
	lax := DefaultSecretPolicy().Without("card-expiry")
	if _, err := form(lax, StringField("cardExpiry")); err != nil {
		t.Fatalf("Without: %v", err)
	}
	broken := DefaultSecretPolicy().Without("typo")
	if _, err := form(broken, StringField("name")); err == nil {
		t.Fatal("invalid policy accepted a form")
	}
}

func TestFormReportsEverySecretField(t *testing.T) {
	_, err := form(DefaultSecretPolicy(), StringField("password"), StringField("name"), StringField("cvv"))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, `"password"`) || !strings.Contains(msg, `"cvv"`) || strings.Contains(msg, `"name"`) {
		t.Fatalf("error %q", msg)
	}
}

func TestFieldImmutable(t *testing.T) {
	base := StringField("a").Title("A")
	_ = base.Required().MinLength(3).Description("d")
	_ = base.MinInt(1) // records an error on the copy only
	s, err := BuildSchema(base)
	if err != nil {
		t.Fatalf("base was modified: %v", err)
	}
	f, _ := s.Field("a")
	if f.Required || f.Description != "" || f.Title != "A" {
		t.Fatalf("base was modified: %+v", f)
	}
	values := []string{"x", "y"}
	e := EnumField("e", values...)
	values[0] = "z"
	s, err = BuildSchema(e)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := s.Field("e"); f.Options[0].Value != "x" {
		t.Fatal("EnumField aliases its argument")
	}
	if e.Name() != "e" || e.Err() != nil || StringField("s").MinInt(1).Err() == nil {
		t.Fatal("Name/Err")
	}
}

func TestPolicyOnParsedSchema(t *testing.T) {
	s, err := ParseSchema(mustParse(t, wrap(`"token":{"type":"string"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if err := (SecretPolicy{}).CheckSchema(s); !errors.Is(err, ErrSecretField) {
		t.Fatalf("CheckSchema = %v, want secret refusal", err)
	}
	if err := DefaultSecretPolicy().CheckSchema(nil); err == nil {
		t.Fatal("nil schema accepted")
	}
	ok, err := ParseSchema(mustParse(t, wrap(`"n":{"type":"string"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if err := DefaultSecretPolicy().CheckSchema(ok); err != nil {
		t.Fatalf("CheckSchema = %v", err)
	}
}
