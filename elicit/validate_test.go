package elicit

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

const validateSchema = `{"type":"object","properties":{
	"name":{"type":"string","minLength":2,"maxLength":5},
	"email":{"type":"string","format":"email"},
	"site":{"type":"string","format":"uri"},
	"day":{"type":"string","format":"date"},
	"at":{"type":"string","format":"date-time"},
	"price":{"type":"number","minimum":0.5,"maximum":3.5},
	"qty":{"type":"integer","minimum":1,"maximum":10},
	"ok":{"type":"boolean"},
	"color":{"type":"string","enum":["red","green"]},
	"shade":{"type":"string","oneOf":[{"const":"#fff","title":"White"}]},
	"tags":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b","c"]}},
	"ttags":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"},{"const":"y","title":"Y"}]}}
},"required":["name"]}`

func TestValidate(t *testing.T) {
	s, err := ParseSchema(mustParse(t, validateSchema))
	if err != nil {
		t.Fatal(err)
	}
	type prob struct {
		field string
		code  ProblemCode
	}
	tests := []struct {
		name    string
		content string
		want    []prob // nil means valid
	}{
		{"minimal", `{"name":"Al"}`, nil},
		{"everything", `{"name":"Alice","email":"a.b+c@example.co.uk","site":"https://example.com/x?y#z","day":"2024-02-29",
			"at":"2026-07-28T09:30:00.123+02:00","price":3.50,"qty":2.0,"ok":false,"color":"green","shade":"#fff",
			"tags":["c","a"],"ttags":[]}`, nil},
		{"not an object", `["name"]`, []prob{{"", ProblemNotObject}}},
		{"null", `null`, []prob{{"", ProblemNotObject}}},
		{"missing required", `{}`, []prob{{"name", ProblemRequired}}},
		{"unexpected", `{"name":"Al","admin":true}`, []prob{{"admin", ProblemUnexpected}}},
		{"name wrong type", `{"name":12}`, []prob{{"name", ProblemType}}},
		{"name too short", `{"name":"A"}`, []prob{{"name", ProblemTooShort}}},
		{"name too long", `{"name":"Aleksandr"}`, []prob{{"name", ProblemTooLong}}},
		{"length counts code points", `{"name":"日本語🎌"}`, nil},
		{"length counts code points too long", `{"name":"日本語🎌🎌🎌"}`, []prob{{"name", ProblemTooLong}}},
		{"empty string too short", `{"name":""}`, []prob{{"name", ProblemTooShort}}},
		{"bad email", `{"name":"Al","email":"Al <al@example.com>"}`, []prob{{"email", ProblemFormat}}},
		{"bad uri", `{"name":"Al","site":"example.com/x"}`, []prob{{"site", ProblemFormat}}},
		{"bad date", `{"name":"Al","day":"2023-02-29"}`, []prob{{"day", ProblemFormat}}},
		{"bad date-time", `{"name":"Al","at":"2026-07-28 09:30:00"}`, []prob{{"at", ProblemFormat}}},
		{"price exact max", `{"name":"Al","price":3.500}`, nil},
		{"price exponent", `{"name":"Al","price":35E-1}`, nil},
		{"price above", `{"name":"Al","price":3.5000001}`, []prob{{"price", ProblemTooLarge}}},
		{"price below", `{"name":"Al","price":0.49}`, []prob{{"price", ProblemTooSmall}}},
		{"price string", `{"name":"Al","price":"3"}`, []prob{{"price", ProblemType}}},
		{"qty fractional", `{"name":"Al","qty":2.5}`, []prob{{"qty", ProblemNotInteger}}},
		{"qty exponent integer", `{"name":"Al","qty":1E+1}`, nil},
		{"qty too large", `{"name":"Al","qty":1E+1000}`, []prob{{"qty", ProblemTooLarge}}},
		{"qty bool", `{"name":"Al","qty":true}`, []prob{{"qty", ProblemType}}},
		{"ok string", `{"name":"Al","ok":"true"}`, []prob{{"ok", ProblemType}}},
		{"color not option", `{"name":"Al","color":"Red"}`, []prob{{"color", ProblemNotOption}}},
		{"color number", `{"name":"Al","color":1}`, []prob{{"color", ProblemType}}},
		{"shade title instead of const", `{"name":"Al","shade":"White"}`, []prob{{"shade", ProblemNotOption}}},
		{"tags too few", `{"name":"Al","tags":[]}`, []prob{{"tags", ProblemTooFew}}},
		{"tags too many", `{"name":"Al","tags":["a","b","c"]}`, []prob{{"tags", ProblemTooMany}}},
		{"tags repeated", `{"name":"Al","tags":["a","a"]}`, []prob{{"tags", ProblemRepeatedOption}}},
		{"tags not option", `{"name":"Al","tags":["d"]}`, []prob{{"tags", ProblemNotOption}}},
		{"tags non-string", `{"name":"Al","tags":[1]}`, []prob{{"tags", ProblemType}}},
		{"tags scalar", `{"name":"Al","tags":"a"}`, []prob{{"tags", ProblemType}}},
		{"ttags const", `{"name":"Al","ttags":["y","x"]}`, nil},
		{"ttags title", `{"name":"Al","ttags":["Y"]}`, []prob{{"ttags", ProblemNotOption}}},
		{"null value", `{"name":null}`, []prob{{"name", ProblemType}}},
		{"several, schema order then extras", `{"zz":1,"qty":0,"name":"A"}`,
			[]prob{{"name", ProblemTooShort}, {"qty", ProblemTooSmall}, {"zz", ProblemUnexpected}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate(mustParse(t, tt.content))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want *ValidationError", err)
			}
			if !errors.Is(err, ErrInvalidContent) {
				t.Error("error does not match ErrInvalidContent")
			}
			var got []prob
			for _, p := range ve.Problems {
				got = append(got, prob{p.Field, p.Code})
				if p.Reason == "" {
					t.Errorf("problem %+v has no reason", p)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("problems %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidateDoesNotEchoValues(t *testing.T) {
	s, err := ParseSchema(mustParse(t, validateSchema))
	if err != nil {
		t.Fatal(err)
	}
	secret := "hunter2-very-secret-value"
	err = s.Validate(mustParse(t, `{"name":"`+secret+`","email":"`+secret+`","color":"`+secret+`"}`))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("error %v echoes the submitted value", err)
	}
}

func TestValidateProgrammaticContent(t *testing.T) {
	s, err := ParseSchema(mustParse(t, validateSchema))
	if err != nil {
		t.Fatal(err)
	}
	dup := exactjson.Object(exactjson.Field("name", exactjson.String("Al")), exactjson.Field("name", exactjson.String("Bob")))
	var ve *ValidationError
	if err := s.Validate(dup); !errors.As(err, &ve) || ve.Problems[0].Code != ProblemRepeated {
		t.Fatalf("duplicate member: %v", err)
	}
	bad := exactjson.Object(exactjson.Field("name", exactjson.String("A\xffB")))
	if err := s.Validate(bad); !errors.As(err, &ve) || ve.Problems[0].Code != ProblemType {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}

func TestValidateBoundsProblems(t *testing.T) {
	s, err := ParseSchema(mustParse(t, wrap(``)))
	if err != nil {
		t.Fatal(err)
	}
	var members []exactjson.Member
	for i := range 100 {
		members = append(members, exactjson.Field(strings.Repeat("x", 300)+fmt.Sprint(i), exactjson.Bool(true)))
	}
	var ve *ValidationError
	if err := s.Validate(exactjson.Object(members...)); !errors.As(err, &ve) {
		t.Fatal(err)
	}
	if len(ve.Problems) != maxProblems || ve.Omitted != 100-maxProblems {
		t.Fatalf("%d problems, %d omitted", len(ve.Problems), ve.Omitted)
	}
	if len(ve.Problems[0].Field) > 140 {
		t.Fatalf("field name not truncated: %d bytes", len(ve.Problems[0].Field))
	}
	if msg := ve.Error(); !strings.Contains(msg, "and 68 more") || len(msg) > 8000 {
		t.Fatalf("message %d bytes: %.200s", len(msg), msg)
	}
}

func TestFormats(t *testing.T) {
	tests := []struct {
		format Format
		in     string
		ok     bool
	}{
		{FormatEmail, "user@example.com", true},
		{FormatEmail, "first.last+tag@sub.example.co", true},
		{FormatEmail, "o'brien@example.ie", true},
		{FormatEmail, "user@localhost", true},
		{FormatEmail, "!#$%&'*+-/=?^_`{|}~@example.com", true},
		{FormatEmail, "", false},
		{FormatEmail, "user", false},
		{FormatEmail, "@example.com", false},
		{FormatEmail, "user@", false},
		{FormatEmail, "a@b@example.com", false},
		{FormatEmail, ".user@example.com", false},
		{FormatEmail, "us..er@example.com", false},
		{FormatEmail, "user.@example.com", false},
		{FormatEmail, `"quoted"@example.com`, false},
		{FormatEmail, "User <user@example.com>", false},
		{FormatEmail, "user@example.com (comment)", false},
		{FormatEmail, "user@[192.0.2.1]", false},
		{FormatEmail, "user@-example.com", false},
		{FormatEmail, "user@example..com", false},
		{FormatEmail, "user@exa_mple.com", false},
		{FormatEmail, "üser@example.com", false},
		{FormatEmail, "user @example.com", false},
		{FormatEmail, strings.Repeat("a", 65) + "@example.com", false},
		{FormatEmail, "a@" + strings.Repeat("b", 64) + ".com", false},
		{FormatURI, "https://example.com", true},
		{FormatURI, "https://example.com/a%20b?q=1#frag", true},
		{FormatURI, "mailto:user@example.com", true},
		{FormatURI, "urn:isbn:0451450523", true},
		{FormatURI, "git+ssh://git@example.com/repo.git", true},
		{FormatURI, "", false},
		{FormatURI, "example.com", false},
		{FormatURI, "/relative/path", false},
		{FormatURI, "//example.com/x", false},
		{FormatURI, "1http://example.com", false},
		{FormatURI, "https://example.com/a b", false},
		{FormatURI, "https://example.com/ü", false},
		{FormatURI, "https://example.com/%zz", false},
		{FormatURI, "https://example.com/%2", false},
		{FormatURI, "https://example.com/#a#b", false},
		{FormatURI, `https://example.com/\x`, false},
		{FormatURI, "https://example.com/<x>", false},
		{FormatDate, "2026-07-28", true},
		{FormatDate, "2024-02-29", true},
		{FormatDate, "2000-02-29", true},
		{FormatDate, "0000-01-01", true},
		{FormatDate, "1900-02-29", false},
		{FormatDate, "2026-13-01", false},
		{FormatDate, "2026-00-10", false},
		{FormatDate, "2026-04-31", false},
		{FormatDate, "2026-7-28", false},
		{FormatDate, "26-07-28", false},
		{FormatDate, "2026/07/28", false},
		{FormatDate, "2026-07-28T00:00:00Z", false},
		{FormatDate, "２０２６-07-28", false},
		{FormatDateTime, "2026-07-28T09:30:00Z", true},
		{FormatDateTime, "2026-07-28t09:30:00z", true},
		{FormatDateTime, "2026-07-28T09:30:00.5+05:30", true},
		{FormatDateTime, "2026-07-28T09:30:00.123456789123-00:00", true},
		{FormatDateTime, "1998-12-31T23:59:60Z", true},
		{FormatDateTime, "1998-12-31T15:59:60-08:00", true},
		{FormatDateTime, "1998-12-31T23:58:60Z", false},
		{FormatDateTime, "2026-07-28T09:30:00", false},
		{FormatDateTime, "2026-07-28 09:30:00Z", false},
		{FormatDateTime, "2026-07-28T24:00:00Z", false},
		{FormatDateTime, "2026-07-28T09:60:00Z", false},
		{FormatDateTime, "2026-07-28T09:30:61Z", false},
		{FormatDateTime, "2026-07-28T09:30:00.Z", false},
		{FormatDateTime, "2026-07-28T09:30:00+2400", false},
		{FormatDateTime, "2026-07-28T09:30:00+24:00", false},
		{FormatDateTime, "2026-07-28T09:30:00+05:60", false},
		{FormatDateTime, "2026-02-30T09:30:00Z", false},
		{FormatDateTime, "2026-07-28T9:30:00Z", false},
		{FormatDateTime, "2026-07-28T09:30Z", false},
	}
	for _, tt := range tests {
		var got bool
		switch tt.format {
		case FormatEmail:
			got = validEmail(tt.in)
		case FormatURI:
			got = validURI(tt.in)
		case FormatDate:
			got = validDate(tt.in)
		case FormatDateTime:
			got = validDateTime(tt.in)
		}
		if got != tt.ok {
			t.Errorf("%s %q: got %v, want %v", tt.format, tt.in, got, tt.ok)
		}
	}
}
