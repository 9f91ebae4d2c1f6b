package exactjson_test

import (
	"errors"
	"fmt"

	"github.com/weftmcp/weft/exactjson"
)

func ExampleParse() {
	v, err := exactjson.Parse([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`), exactjson.Limits{})
	if err != nil {
		panic(err)
	}
	id, _ := v.Get("id")
	method, _ := v.Get("method")
	m, _ := method.AsString()
	fmt.Println(id.Kind(), id, m)
	params, _ := v.Get("params")
	for name, val := range params.All() {
		fmt.Println(name, "=", val)
	}
	// Output:
	// number 7 tools/call
	// name = "echo"
}

func ExampleParse_strict() {
	for _, in := range []string{`{"a":1,"\u0061":2}`, `[01]`, `"\ud800"`, "[1] x"} {
		_, err := exactjson.Parse([]byte(in), exactjson.Limits{})
		fmt.Println(err)
	}
	// Output:
	// json: syntax error at byte 7: duplicate object member name "a"
	// json: syntax error at byte 1: invalid number: leading zero
	// json: syntax error at byte 1: unpaired high surrogate \ud800 in string
	// json: syntax error at byte 4: invalid character 'x' after top-level value
}

func ExampleParse_limits() {
	_, err := exactjson.Parse([]byte(`[[[1]]]`), exactjson.Limits{MaxDepth: 2})
	var le *exactjson.LimitError
	fmt.Println(errors.Is(err, exactjson.ErrLimit), errors.As(err, &le), le.Limit)
	fmt.Println(err)
	// Output:
	// true true MaxDepth
	// json: input exceeds MaxDepth (2) at byte 2
}

func ExampleCanonical() {
	v, _ := exactjson.Parse([]byte(`{"b": [1.50, 100, 0.0000001], "a": "<\u00e9>"}`), exactjson.Limits{})
	c, _ := exactjson.Canonical(v)
	fmt.Println(string(c))
	// Output:
	// {"a":"<é>","b":[1.5,1E+2,1E-7]}
}

func ExampleEqual() {
	a, _ := exactjson.Parse([]byte(`{"x":1,"y":[10E-1]}`), exactjson.Limits{})
	b, _ := exactjson.Parse([]byte(`{"y":[1.0],"x":1E+0}`), exactjson.Limits{})
	fmt.Println(exactjson.Equal(a, b))
	// Output:
	// true
}

func ExampleNumber() {
	n, _ := exactjson.ParseNumber("3.50")
	u, scale := n.Decimal()
	i, ok := n.Int64()
	fmt.Println(n, n.Canonical(), u, scale, i, ok)
	// Output:
	// 3.50 3.5 350 2 0 false
}

func ExampleAppendJSON() {
	v := exactjson.Object(
		exactjson.Field("text", exactjson.String("line\n<a href=\"/x\">\x01")),
		exactjson.Field("n", exactjson.Int(42)),
	)
	b, _ := exactjson.AppendJSON(nil, v)
	fmt.Println(string(b))
	// Output:
	// {"text":"line\n<a href=\"/x\">\u0001","n":42}
}

func ExampleDecode() {
	type Args struct {
		ID    int64            `json:"id"`
		Price exactjson.Number `json:"price"`
	}
	v, _ := exactjson.Parse([]byte(`{"id":9007199254740993,"price":3.50,"other":true}`), exactjson.Limits{})
	args, err := exactjson.Decode[Args](v)
	fmt.Println(args.ID, args.Price, err)
	// Output:
	// 9007199254740993 3.50 <nil>
}

func ExampleValue_With() {
	v, _ := exactjson.Parse([]byte(`{"a":1,"secret":"x","b":2}`), exactjson.Limits{})
	fmt.Println(v.Without("secret").With("a", exactjson.Bool(true)).With("c", exactjson.Null()))
	// Output:
	// {"a":true,"b":2,"c":null}
}

// A digest of a request that ignores members a client may change between
// attempts: the top-level "attempt" and "trace" inside "meta".
func ExampleAppendCanonicalWithout() {
	v, _ := exactjson.ParseString(`{"op":"pay","amount":1.50,"attempt":3,"meta":{"trace":"a1","client":"x"}}`, exactjson.Limits{})
	volatile := func(depth int, parent, name string) bool {
		return depth == 0 && name == "attempt" || parent == "meta" && name == "trace"
	}
	b, _ := exactjson.AppendCanonicalWithout(nil, v, 1, volatile)
	fmt.Println(string(b))
	// Output: {"amount":1.5,"meta":{"client":"x"},"op":"pay"}
}
