package elicit

import (
	"fmt"

	"github.com/weftmcp/weft/exactjson"
)

// fieldShape is the JSON shape a Field builds.
type fieldShape uint8

const (
	shapeString fieldShape = iota + 1
	shapeNumber
	shapeInteger
	shapeBoolean
	shapeEnum
	shapeTitledEnum
	shapeMulti
	shapeTitledMulti
)

// String names the shape's field kind for error messages.
func (s fieldShape) String() string {
	switch s {
	case shapeString:
		return "string"
	case shapeNumber:
		return "number"
	case shapeInteger:
		return "integer"
	case shapeBoolean:
		return "boolean"
	case shapeEnum, shapeTitledEnum:
		return "single-select"
	case shapeMulti, shapeTitledMulti:
		return "multi-select"
	}
	return "invalid"
}

// Field describes one form field for [BuildSchema] (or a refinement of a
// typed form, weft.FormOf). Create it with a constructor
// such as [StringField] and refine it with the chainable setters; each setter
// returns a modified copy and leaves its receiver unchanged, so a Field can
// be shared and reused. A setter that does not apply to the field's kind (say
// MinLength on a number) or gets an invalid argument records an error that
// [BuildSchema] reports; the zero Field is invalid.
type Field struct {
	name               string
	shape              fieldShape
	title, description string
	hasTitle, hasDesc  bool
	required           bool
	minLen, maxLen     int
	hasMinLen          bool
	hasMaxLen          bool
	hasMin, hasMax     bool
	format             Format
	minimum, maximum   exactjson.Number
	minItems, maxItems int
	hasMinIt, hasMaxIt bool
	values             []string
	options            []Option
	def                exactjson.Value
	hasDef             bool
	err                error
}

// StringField returns a free-text field.
func StringField(name string) Field { return Field{name: name, shape: shapeString} }

// NumberField returns a number field; any JSON number is accepted, compared
// exactly against the bounds.
func NumberField(name string) Field { return Field{name: name, shape: shapeNumber} }

// IntegerField returns an integer field: a JSON number whose value is
// integral (2 and 2.0 both qualify).
func IntegerField(name string) Field { return Field{name: name, shape: shapeInteger} }

// BooleanField returns a true/false field.
func BooleanField(name string) Field { return Field{name: name, shape: shapeBoolean} }

// EnumField returns a single-select field offering the given values
// ("enum"). The values slice is copied.
func EnumField(name string, values ...string) Field {
	return Field{name: name, shape: shapeEnum, values: append([]string(nil), values...)}
}

// TitledEnumField returns a single-select field whose options have display
// titles ("oneOf" of {const, title}). The options slice is copied.
func TitledEnumField(name string, options ...Option) Field {
	return Field{name: name, shape: shapeTitledEnum, options: append([]Option(nil), options...)}
}

// MultiSelectField returns a multi-select field offering the given values
// ("type":"array" with "items":{"type":"string","enum":[...]}). The values
// slice is copied.
func MultiSelectField(name string, values ...string) Field {
	return Field{name: name, shape: shapeMulti, values: append([]string(nil), values...)}
}

// TitledMultiSelectField returns a multi-select field whose options have
// display titles ("items":{"anyOf":[{const, title}...]}). The options slice
// is copied.
func TitledMultiSelectField(name string, options ...Option) Field {
	return Field{name: name, shape: shapeTitledMulti, options: append([]Option(nil), options...)}
}

// Name returns the field's property name.
func (f Field) Name() string { return f.name }

// Err returns the first error recorded by a setter, or nil.
func (f Field) Err() error { return f.err }

// fail records the first error.
func (f Field) fail(format string, args ...any) Field {
	if f.err == nil {
		f.err = fmt.Errorf(format, args...)
	}
	return f
}

func (f Field) only(setter string, shapes ...fieldShape) (Field, bool) {
	for _, s := range shapes {
		if f.shape == s {
			return f, true
		}
	}
	return f.fail("%s does not apply to a %s field", setter, f.shape), false
}

// Title sets the field's display title.
func (f Field) Title(title string) Field {
	f.title, f.hasTitle = title, true
	return f
}

// Description sets the field's help text.
func (f Field) Description(description string) Field {
	f.description, f.hasDesc = description, true
	return f
}

// Required marks the field as required.
func (f Field) Required() Field {
	f.required = true
	return f
}

// MinLength sets the minimum length of a string field, in Unicode code
// points.
func (f Field) MinLength(n int) Field {
	f, ok := f.only("MinLength", shapeString)
	if ok {
		if n < 0 || n > maxCount {
			return f.fail("MinLength %d is out of range", n)
		}
		f.minLen, f.hasMinLen = n, true
	}
	return f
}

// MaxLength sets the maximum length of a string field, in Unicode code
// points.
func (f Field) MaxLength(n int) Field {
	f, ok := f.only("MaxLength", shapeString)
	if ok {
		if n < 0 || n > maxCount {
			return f.fail("MaxLength %d is out of range", n)
		}
		f.maxLen, f.hasMaxLen = n, true
	}
	return f
}

// Format sets the format of a string field: [FormatEmail], [FormatURI],
// [FormatDate] or [FormatDateTime].
func (f Field) Format(format Format) Field {
	f, ok := f.only("Format", shapeString)
	if ok {
		if !format.valid() {
			return f.fail("unsupported format %s", quoteTrunc(string(format)))
		}
		f.format = format
	}
	return f
}

// Min sets the inclusive minimum of a number or integer field, exactly.
func (f Field) Min(n exactjson.Number) Field {
	f, ok := f.only("Min", shapeNumber, shapeInteger)
	if ok {
		f.minimum, f.hasMin = n, true
	}
	return f
}

// Max sets the inclusive maximum of a number or integer field, exactly.
func (f Field) Max(n exactjson.Number) Field {
	f, ok := f.only("Max", shapeNumber, shapeInteger)
	if ok {
		f.maximum, f.hasMax = n, true
	}
	return f
}

// MinInt sets the inclusive minimum of a number or integer field.
func (f Field) MinInt(i int64) Field {
	n, _ := exactjson.Int(i).AsNumber()
	return f.Min(n)
}

// MaxInt sets the inclusive maximum of a number or integer field.
func (f Field) MaxInt(i int64) Field {
	n, _ := exactjson.Int(i).AsNumber()
	return f.Max(n)
}

// MinDecimal sets the inclusive minimum of a number or integer field from a
// JSON number literal such as "3.50" or "1E-3", kept exactly as written.
func (f Field) MinDecimal(literal string) Field {
	n, err := exactjson.ParseNumber(literal)
	if err != nil {
		return f.fail("MinDecimal %s: %w", quoteTrunc(literal), err)
	}
	return f.Min(n)
}

// MaxDecimal sets the inclusive maximum of a number or integer field from a
// JSON number literal such as "99.99", kept exactly as written.
func (f Field) MaxDecimal(literal string) Field {
	n, err := exactjson.ParseNumber(literal)
	if err != nil {
		return f.fail("MaxDecimal %s: %w", quoteTrunc(literal), err)
	}
	return f.Max(n)
}

// MinItems sets the minimum number of choices of a multi-select field.
func (f Field) MinItems(n int) Field {
	f, ok := f.only("MinItems", shapeMulti, shapeTitledMulti)
	if ok {
		if n < 0 || n > maxCount {
			return f.fail("MinItems %d is out of range", n)
		}
		f.minItems, f.hasMinIt = n, true
	}
	return f
}

// MaxItems sets the maximum number of choices of a multi-select field.
func (f Field) MaxItems(n int) Field {
	f, ok := f.only("MaxItems", shapeMulti, shapeTitledMulti)
	if ok {
		if n < 0 || n > maxCount {
			return f.fail("MaxItems %d is out of range", n)
		}
		f.maxItems, f.hasMaxIt = n, true
	}
	return f
}

// Default sets the value clients pre-fill: a string for string and
// single-select fields, a number for number and integer fields, a boolean
// for boolean fields, and an array of strings for multi-select fields.
// [BuildSchema] rejects a default that does not satisfy the field's own constraints.
func (f Field) Default(v exactjson.Value) Field {
	f.def, f.hasDef = v, true
	return f
}

// DefaultString is Default(exactjson.String(s)).
func (f Field) DefaultString(s string) Field { return f.Default(exactjson.String(s)) }

// DefaultBool is Default(exactjson.Bool(b)).
func (f Field) DefaultBool(b bool) Field { return f.Default(exactjson.Bool(b)) }

// DefaultInt is Default(exactjson.Int(i)), for number and integer fields.
func (f Field) DefaultInt(i int64) Field { return f.Default(exactjson.Int(i)) }

// DefaultDecimal sets a number or integer default from a JSON number literal
// such as "1.50", kept exactly as written.
func (f Field) DefaultDecimal(literal string) Field {
	n, err := exactjson.ParseNumber(literal)
	if err != nil {
		return f.fail("DefaultDecimal %s: %w", quoteTrunc(literal), err)
	}
	return f.Default(exactjson.NumberValue(n))
}

// DefaultStrings sets a multi-select default from the given values.
func (f Field) DefaultStrings(values ...string) Field {
	elems := make([]exactjson.Value, len(values))
	for i, s := range values {
		elems[i] = exactjson.String(s)
	}
	return f.Default(exactjson.Array(elems...))
}

// json builds the field's schema object.
func (f Field) json() exactjson.Value {
	var m []exactjson.Member
	add := func(k string, v exactjson.Value) { m = append(m, exactjson.Field(k, v)) }
	switch f.shape {
	case shapeString, shapeEnum, shapeTitledEnum:
		add("type", exactjson.String("string"))
	case shapeNumber:
		add("type", exactjson.String("number"))
	case shapeInteger:
		add("type", exactjson.String("integer"))
	case shapeBoolean:
		add("type", exactjson.String("boolean"))
	case shapeMulti, shapeTitledMulti:
		add("type", exactjson.String("array"))
	}
	if f.hasTitle {
		add("title", exactjson.String(f.title))
	}
	if f.hasDesc {
		add("description", exactjson.String(f.description))
	}
	if f.hasMinLen {
		add("minLength", exactjson.Int(int64(f.minLen)))
	}
	if f.hasMaxLen {
		add("maxLength", exactjson.Int(int64(f.maxLen)))
	}
	if f.format != "" {
		add("format", exactjson.String(string(f.format)))
	}
	if f.hasMin {
		add("minimum", exactjson.NumberValue(f.minimum))
	}
	if f.hasMax {
		add("maximum", exactjson.NumberValue(f.maximum))
	}
	switch f.shape {
	case shapeEnum:
		add("enum", stringArray(f.values))
	case shapeTitledEnum:
		add("oneOf", optionArray(f.options))
	case shapeMulti, shapeTitledMulti:
		if f.hasMinIt {
			add("minItems", exactjson.Int(int64(f.minItems)))
		}
		if f.hasMaxIt {
			add("maxItems", exactjson.Int(int64(f.maxItems)))
		}
		if f.shape == shapeMulti {
			add("items", exactjson.Object(
				exactjson.Field("type", exactjson.String("string")),
				exactjson.Field("enum", stringArray(f.values))))
		} else {
			add("items", exactjson.Object(exactjson.Field("anyOf", optionArray(f.options))))
		}
	}
	if f.hasDef {
		add("default", f.def)
	}
	return exactjson.Object(m...)
}

func stringArray(ss []string) exactjson.Value {
	elems := make([]exactjson.Value, len(ss))
	for i, s := range ss {
		elems[i] = exactjson.String(s)
	}
	return exactjson.Array(elems...)
}

func optionArray(opts []Option) exactjson.Value {
	elems := make([]exactjson.Value, len(opts))
	for i, o := range opts {
		elems[i] = exactjson.Object(
			exactjson.Field("const", exactjson.String(o.Value)),
			exactjson.Field("title", exactjson.String(o.Title)))
	}
	return exactjson.Array(elems...)
}

// BuildSchema assembles the fields into a verified requestedSchema. It does
// not apply a secret policy: the server does, with [SecretPolicy.CheckSchema],
// before a form reaches the client.
func BuildSchema(fields ...Field) (*Schema, error) {
	seen := make(map[string]bool, len(fields))
	props := make([]exactjson.Member, 0, len(fields))
	var req []exactjson.Value
	for i, f := range fields {
		if f.shape == 0 {
			return nil, fmt.Errorf("%w: field %d is a zero Field (use a constructor such as StringField)", ErrInvalidSchema, i)
		}
		if f.err != nil {
			return nil, fmt.Errorf("%w: field %s: %w", ErrInvalidSchema, quoteTrunc(f.name), f.err)
		}
		if f.name == "" {
			return nil, fmt.Errorf("%w: field %d has an empty name", ErrInvalidSchema, i)
		}
		if seen[f.name] {
			return nil, fmt.Errorf("%w: field %s is declared twice", ErrInvalidSchema, quoteTrunc(f.name))
		}
		seen[f.name] = true
		props = append(props, exactjson.Field(f.name, f.json()))
		if f.required {
			req = append(req, exactjson.String(f.name))
		}
	}
	members := []exactjson.Member{
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(props...)),
	}
	if len(req) > 0 {
		members = append(members, exactjson.Field("required", exactjson.Array(req...)))
	}
	return ParseSchema(exactjson.Object(members...))
}
