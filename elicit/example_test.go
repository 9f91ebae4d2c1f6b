package elicit_test

import (
	"errors"
	"fmt"

	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
)

func ExampleBuildSchema() {
	schema, err := elicit.BuildSchema(
		elicit.StringField("name").Title("Full name").Required().MinLength(1).MaxLength(100),
		elicit.StringField("email").Format(elicit.FormatEmail),
		elicit.IntegerField("copies").MinInt(1).MaxInt(10).Default(exactjson.Int(1)),
		elicit.TitledEnumField("speed",
			elicit.Option{Value: "std", Title: "Standard"},
			elicit.Option{Value: "exp", Title: "Express"}).Required(),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(schema.Value())
	// Output:
	// {"type":"object","properties":{"name":{"type":"string","title":"Full name","minLength":1,"maxLength":100},"email":{"type":"string","format":"email"},"copies":{"type":"integer","minimum":1,"maximum":10,"default":1},"speed":{"type":"string","oneOf":[{"const":"std","title":"Standard"},{"const":"exp","title":"Express"}]}},"required":["name","speed"]}
}

func ExampleSecretPolicy_CheckSchema() {
	schema, err := elicit.BuildSchema(
		elicit.StringField("username"),
		elicit.StringField("apiToken").Title("API token"))
	if err != nil {
		fmt.Println(err)
		return
	}
	err = elicit.DefaultSecretPolicy().CheckSchema(schema)
	var se *elicit.SecretFieldError
	if errors.As(err, &se) {
		fmt.Println(se.Field, "refused by rule", se.Rule)
	}
	// Output:
	// apiToken refused by rule api-key
}

func ExampleAnswer() {
	schema, err := elicit.BuildSchema(
		elicit.NumberField("amount").MinDecimal("0.01").MaxDecimal("3.50").Required())
	if err != nil {
		fmt.Println(err)
		return
	}
	// The client's retry carries inputResponses["refund"]; a missing key
	// means the question must be asked again.
	for _, raw := range []string{
		`{"action":"accept","content":{"amount":3.50}}`,
		`{"action":"accept","content":{"amount":3.51}}`,
		`{"action":"decline"}`,
		`{"action":"cancel"}`,
	} {
		response, _ := exactjson.ParseString(raw, exactjson.Limits{})
		content, outcome, err := elicit.Answer(schema, response)
		switch {
		case err != nil:
			fmt.Println("invalid:", err)
		case outcome == elicit.Accepted:
			amount, _ := content.Get("amount")
			fmt.Println("refund", amount)
		case outcome == elicit.Declined:
			fmt.Println("declined: offer store credit instead")
		case outcome == elicit.Cancelled:
			fmt.Println("cancelled: ask again later")
		}
	}
	// Output:
	// refund 3.50
	// invalid: elicit: content does not match the requested schema: "amount" must be at most 3.50
	// declined: offer store credit instead
	// cancelled: ask again later
}

func ExampleParseSchema() {
	authored, _ := exactjson.ParseString(`{
		"type": "object",
		"properties": {
			"colors": {
				"type": "array", "minItems": 1, "maxItems": 2,
				"items": {"type": "string", "enum": ["Red", "Green", "Blue"]}
			}
		},
		"required": ["colors"]
	}`, exactjson.Limits{})
	schema, err := elicit.ParseSchema(authored)
	if err != nil {
		fmt.Println(err)
		return
	}
	content, _ := exactjson.ParseString(`{"colors":["Red","Red","Pink"]}`, exactjson.Limits{})
	var ve *elicit.ValidationError
	if errors.As(schema.Validate(content), &ve) {
		for _, p := range ve.Problems {
			fmt.Println(p.Field, p.Code, p.Reason)
		}
	}
	// Output:
	// colors repeated-option must not choose the same option twice
}

func ExampleSecretPolicy_With() {
	policy := elicit.DefaultSecretPolicy().With(elicit.Rule{
		ID:      "badge",
		Reason:  "a door badge code",
		Phrases: []string{"badge code"},
	})
	schema, err := elicit.BuildSchema(elicit.StringField("badgeCode"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(errors.Is(policy.CheckSchema(schema), elicit.ErrSecretField))
	// Output:
	// true
}

func ExampleURLPolicy_Check() {
	// In a handler: handle, err := elicit.NewHandle(), stored server-side
	// and bound to the verified user; a fixed value keeps the output stable.
	handle := "pZ8qW3vN0xK5rT2yB7mC4hJ9gF6dS1aL0eU3iO8nQ5w"
	link, err := elicit.HandleURL("https://app.example.com/connect", handle)
	if err != nil {
		fmt.Println(err)
		return
	}
	policy := elicit.URLPolicy{AllowedOrigins: []string{"https://app.example.com"}}
	checked, err := policy.Check(link)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(checked)

	_, err = policy.Check("https://app.example.com/connect?access_token=abc")
	fmt.Println(err)
	// Output:
	// https://app.example.com/connect/pZ8qW3vN0xK5rT2yB7mC4hJ9gF6dS1aL0eU3iO8nQ5w
	// elicit: unsafe elicitation URL: query parameter "access_token" names a credential; put an opaque handle in the path instead
}

func ExampleNewHandle() {
	handle, err := elicit.NewHandle()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(handle))
	// Output:
	// 43
}
