package exactjson

import (
	"fmt"

	json "github.com/go-json-experiment/json"
)

// Unmarshal decodes v into dst (a non-nil pointer) with
// github.com/go-json-experiment/json default (v2) semantics: member names
// match case-sensitively, unknown members are ignored, integers bind
// exactly to int64/uint64 fields and Number fields keep their literal.
// Parsed arrays and objects are decoded from their raw input span without
// re-encoding.
func Unmarshal(v Value, dst any) error {
	var data []byte
	if (v.kind == KindArray || v.kind == KindObject) && v.s != "" {
		data = []byte(v.s)
	} else {
		var err error
		if data, err = AppendJSON(nil, v); err != nil {
			return fmt.Errorf("exactjson: unmarshal into %T: %w", dst, err)
		}
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return fmt.Errorf("exactjson: unmarshal %s into %T: %w", v.kind, dst, err)
	}
	return nil
}

// Decode decodes v into a new T (see Unmarshal).
func Decode[T any](v Value) (T, error) {
	var t T
	err := Unmarshal(v, &t)
	return t, err
}

// FromGo converts x to a Value by marshaling it with
// github.com/go-json-experiment/json (v2 defaults) and parsing the result
// with DefaultLimits.
func FromGo(x any) (Value, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return Value{}, fmt.Errorf("exactjson: marshal %T: %w", x, err)
	}
	v, err := Parse(b, Limits{})
	if err != nil {
		return Value{}, fmt.Errorf("exactjson: parse marshaled %T: %w", x, err)
	}
	return v, nil
}
