package exactjson

import (
	stdjson "encoding/json"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
)

type toolCall struct {
	ID        int64          `json:"id"`
	Big       uint64         `json:"big"`
	Name      string         `json:"name"`
	Price     Number         `json:"price"`
	Arguments Value          `json:"arguments"`
	Optional  *Number        `json:"optional,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

func TestUnmarshalTyped(t *testing.T) {
	v := mustParse(t, `{"id":9007199254740993,"big":18446744073709551615,"name":"search","NAME":"ignored","price":3.50,"arguments":{"q":"x","n":1.0},"unknown":[1,2]}`)
	got, err := Decode[toolCall](v)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != 9007199254740993 {
		t.Errorf("ID = %d, want 9007199254740993", got.ID)
	}
	if got.Big != 18446744073709551615 {
		t.Errorf("Big = %d", got.Big)
	}
	if got.Name != "search" {
		t.Errorf("Name = %q (case-sensitive binding expected)", got.Name)
	}
	if got.Price.String() != "3.50" {
		t.Errorf("Price = %s, want 3.50", got.Price)
	}
	if u, s := got.Price.Decimal(); u.Int64() != 350 || s != 2 {
		t.Errorf("Price.Decimal = %v, %d", u, s)
	}
	if got.Arguments.String() != `{"q":"x","n":1.0}` {
		t.Errorf("Arguments = %s", got.Arguments)
	}
	if got.Optional != nil {
		t.Errorf("Optional = %v", got.Optional)
	}

	// Round trip back to a Value keeps the exact literals.
	back, err := FromGo(got)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":9007199254740993,"big":18446744073709551615,"name":"search","price":3.50,"arguments":{"q":"x","n":1.0}}`
	if back.String() != want {
		t.Errorf("FromGo = %s\nwant      %s", back, want)
	}
}

func TestUnmarshalCaseSensitive(t *testing.T) {
	v := mustParse(t, `{"NAME":"upper"}`)
	got, err := Decode[toolCall](v)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "" {
		t.Errorf("NAME bound to name: %q", got.Name)
	}
}

func TestUnmarshalErrors(t *testing.T) {
	var dst struct {
		ID int64 `json:"id"`
	}
	for _, in := range []string{`{"id":1.5}`, `{"id":"7"}`, `{"id":1E+30}`, `[1]`} {
		if err := Unmarshal(mustParse(t, in), &dst); err == nil {
			t.Errorf("Unmarshal(%s) succeeded: %+v", in, dst)
		} else if !strings.Contains(err.Error(), "exactjson: unmarshal") {
			t.Errorf("error %q lacks context", err)
		}
	}
	// Constructed values with duplicates or bad UTF-8 fail before decoding.
	if err := Unmarshal(Object(Field("id", Int(1)), Field("id", Int(2))), &dst); err == nil {
		t.Error("duplicate accepted")
	}
	if err := Unmarshal(String("\xff"), new(string)); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	// Scalars.
	var s string
	if err := Unmarshal(String("hé"), &s); err != nil || s != "hé" {
		t.Errorf("Unmarshal string = %q, %v", s, err)
	}
	var n Number
	if err := Unmarshal(mustParse(t, "1.250"), &n); err != nil || n.String() != "1.250" {
		t.Errorf("Unmarshal Number = %s, %v", n, err)
	}
	var i int64
	if err := Unmarshal(mustParse(t, "2.0"), &i); err == nil {
		t.Logf("note: json v2 accepted 2.0 into int64: %d", i)
	}
}

func TestFromGo(t *testing.T) {
	type inner struct {
		B []int `json:"b"`
	}
	x := struct {
		A string            `json:"a"`
		I inner             `json:"i"`
		M map[string]string `json:"m"`
		V Value             `json:"v"`
		N Number            `json:"n"`
		F float64           `json:"f"`
	}{A: "<&>", I: inner{B: []int{1, 2}}, M: map[string]string{"z": "1", "y": "2"}, V: mustParse(t, `{"k":[true]}`), N: mustNumber(t, "1E+2"), F: 0.5}
	v, err := FromGo(x)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := v.Get("a"); s.String() != `"<&>"` {
		t.Errorf("a = %s", s)
	}
	if n, _ := v.Get("n"); n.String() != "1E+2" {
		t.Errorf("n = %s", n)
	}
	c, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"<&>","f":0.5,"i":{"b":[1,2]},"m":{"y":"2","z":"1"},"n":1E+2,"v":{"k":[true]}}`; string(c) != want {
		t.Errorf("Canonical(FromGo) = %s\nwant %s", c, want)
	}
	if _, err := FromGo(make(chan int)); err == nil {
		t.Error("FromGo(chan) succeeded")
	}
	if _, err := FromGo(String("\xff")); err == nil {
		t.Error("FromGo(invalid Value) succeeded")
	}
	if v, err := FromGo(nil); err != nil || !v.IsNull() {
		t.Errorf("FromGo(nil) = %v, %v", v, err)
	}
}

// Value and Number work as field types with both JSON packages.
func TestFieldTypesInterop(t *testing.T) {
	type msg struct {
		ID     Value   `json:"id"`
		Amount Number  `json:"amount"`
		Params Value   `json:"params"`
		List   []Value `json:"list"`
	}
	in := `{"id":"7","amount":3.50,"params":{"b":1,"a":[1.0]},"list":[1,"x",null]}`
	for name, pkg := range map[string]struct {
		unmarshal func([]byte, any) error
		marshal   func(any) ([]byte, error)
	}{
		"v2":            {func(b []byte, x any) error { return json.Unmarshal(b, x) }, func(x any) ([]byte, error) { return json.Marshal(x) }},
		"encoding/json": {stdjson.Unmarshal, stdjson.Marshal},
	} {
		t.Run(name, func(t *testing.T) {
			var m msg
			if err := pkg.unmarshal([]byte(in), &m); err != nil {
				t.Fatal(err)
			}
			if m.ID.Kind() != KindString || m.Amount.String() != "3.50" || m.Params.String() != `{"b":1,"a":[1.0]}` || len(m.List) != 3 || !m.List[2].IsNull() {
				t.Fatalf("decoded %+v", m)
			}
			out, err := pkg.marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != in {
				t.Errorf("marshal = %s\nwant      %s", out, in)
			}
			// Missing fields stay zero: Value null, Number 0.
			var z msg
			if err := pkg.unmarshal([]byte(`{}`), &z); err != nil || !z.ID.IsNull() || !z.Amount.IsZero() {
				t.Errorf("empty decode = %+v, %v", z, err)
			}
			// Explicit null for a Value field.
			var n msg
			if err := pkg.unmarshal([]byte(`{"id":null}`), &n); err != nil || !n.ID.IsNull() {
				t.Errorf("null decode = %+v, %v", n, err)
			}
			// Strictness applies inside fields.
			if err := pkg.unmarshal([]byte(`{"amount":"3.50"}`), &z); err == nil {
				t.Error("string accepted for Number")
			}
		})
	}
}
