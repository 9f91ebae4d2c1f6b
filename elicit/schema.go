package elicit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/weftmcp/weft/exactjson"
)

// ErrInvalidSchema is wrapped by every error that reports a requestedSchema
// outside the restricted form-schema shape.
var ErrInvalidSchema = errors.New("elicit: invalid form schema")

// FieldKind is the kind of a form field.
type FieldKind uint8

// The form field kinds of the restricted requestedSchema.
const (
	KindString       FieldKind = iota + 1 // free text ("type":"string"), optionally with a format
	KindNumber                            // any number ("type":"number")
	KindInteger                           // an integral number ("type":"integer")
	KindBoolean                           // true or false ("type":"boolean")
	KindSingleSelect                      // one string from "enum" or titled "oneOf"
	KindMultiSelect                       // several strings from "items" ("type":"array")
)

// String returns a short lower-case name for the kind.
func (k FieldKind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindNumber:
		return "number"
	case KindInteger:
		return "integer"
	case KindBoolean:
		return "boolean"
	case KindSingleSelect:
		return "single-select"
	case KindMultiSelect:
		return "multi-select"
	}
	return fmt.Sprintf("FieldKind(%d)", uint8(k))
}

// freeEntry reports whether the user types the value (as opposed to picking
// one the server listed).
func (k FieldKind) freeEntry() bool {
	return k == KindString || k == KindNumber || k == KindInteger
}

// Format is a string field format supported by form mode.
type Format string

// The formats form mode supports.
const (
	FormatEmail    Format = "email"     // an RFC 5322 addr-spec such as user@example.com
	FormatURI      Format = "uri"       // an absolute RFC 3986 URI with a scheme
	FormatDate     Format = "date"      // an RFC 3339 full-date such as 2026-07-28
	FormatDateTime Format = "date-time" // an RFC 3339 date-time such as 2026-07-28T09:30:00Z
)

func (f Format) valid() bool {
	switch f {
	case FormatEmail, FormatURI, FormatDate, FormatDateTime:
		return true
	}
	return false
}

// Option is one choice of a single- or multi-select field. Title is the
// label shown to the user; it is empty for untitled ("enum") options.
type Option struct {
	// Value is the string returned when the option is chosen.
	Value string
	// Title is the display label ("title" of a oneOf/anyOf entry, or the
	// legacy "enumNames" entry); empty when the schema gives none.
	Title string
}

// maxCount bounds minLength, maxLength, minItems and maxItems.
const maxCount = math.MaxInt32

// property is one parsed field of a Schema.
type property struct {
	name        string
	kind        FieldKind
	title       string
	description string
	required    bool

	minLen, maxLen     int // -1 when absent
	format             Format
	hasMin, hasMax     bool
	minimum, maximum   exactjson.Number
	options            []Option
	optionSet          map[string]struct{}
	minItems, maxItems int // -1 when absent
	hasDefault         bool
	def                exactjson.Value
}

// Schema is a parsed, verified form-mode requestedSchema. It is immutable
// and safe for concurrent use. Build one with [BuildSchema] or
// [ParseSchema].
type Schema struct {
	props []property
	index map[string]int
	value exactjson.Value
}

// FieldInfo describes one field of a Schema.
type FieldInfo struct {
	// Name is the property name (the key in accepted content).
	Name string
	// Kind is the field kind.
	Kind FieldKind
	// Title and Description are the display texts, possibly empty.
	Title, Description string
	// Required reports whether the field is listed in "required".
	Required bool
	// Format is the string format, or "".
	Format Format
	// Options lists the choices of a select field, in schema order.
	Options []Option
	// Default is the default value, or null when there is none.
	Default exactjson.Value
}

// Value returns the requestedSchema JSON object.
func (s *Schema) Value() exactjson.Value {
	if s == nil {
		return exactjson.Null()
	}
	return s.value
}

// Fields describes the schema's fields in schema order.
func (s *Schema) Fields() []FieldInfo {
	if s == nil {
		return nil
	}
	out := make([]FieldInfo, len(s.props))
	for i := range s.props {
		out[i] = s.props[i].info()
	}
	return out
}

// Field describes the field with the given name.
func (s *Schema) Field(name string) (FieldInfo, bool) {
	if s == nil {
		return FieldInfo{}, false
	}
	i, ok := s.index[name]
	if !ok {
		return FieldInfo{}, false
	}
	return s.props[i].info(), true
}

func (p *property) info() FieldInfo {
	return FieldInfo{
		Name: p.name, Kind: p.kind, Title: p.title, Description: p.description,
		Required: p.required, Format: p.format, Options: slices.Clone(p.options), Default: p.def,
	}
}

func schemaErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidSchema}, args...)...)
}

func propErr(name, format string, args ...any) error {
	return fmt.Errorf("%w: property %s: "+format, append([]any{ErrInvalidSchema, quoteTrunc(name)}, args...)...)
}

// ParseSchema verifies that v is a requestedSchema of the restricted
// form-mode shape and returns it parsed. The shape is: an object with
// "type":"object", "properties" (an object of field schemas), optional
// "required" (unique names of declared properties) and optional "$schema"
// (a string). Each field schema is one of the primitive shapes of the
// specification (see the package documentation); unknown keywords, nested
// objects, arrays other than string multi-selects, duplicate member names,
// inconsistent bounds (minimum above maximum, minItems above the number of
// options, …) and defaults that violate their own field are errors wrapping
// [ErrInvalidSchema].
//
// Secret hints — "writeOnly": true, "x-secret": true, "x-sensitive": true
// or "format": "password" — are reported as a *SecretFieldError (matching
// both [ErrSecretField] and ErrInvalidSchema). ParseSchema does not apply
// the name-based [SecretPolicy]; [SecretPolicy.CheckSchema] does.
func ParseSchema(v exactjson.Value) (*Schema, error) {
	if v.Kind() != exactjson.KindObject {
		return nil, schemaErr("requestedSchema must be a JSON object, not %s", v.Kind())
	}
	if err := checkNames(v); err != nil {
		return nil, schemaErr("requestedSchema: %w", err)
	}
	var props, req exactjson.Value
	var haveType, haveProps, haveReq bool
	for name, mv := range v.All() {
		switch name {
		case "$schema":
			if s, ok := mv.AsString(); !ok || !utf8.ValidString(s) {
				return nil, schemaErr(`"$schema" must be a string`)
			}
		case "type":
			if s, ok := mv.AsString(); !ok || s != "object" {
				return nil, schemaErr(`"type" must be "object"`)
			}
			haveType = true
		case "properties":
			if mv.Kind() != exactjson.KindObject {
				return nil, schemaErr(`"properties" must be an object, not %s`, mv.Kind())
			}
			props, haveProps = mv, true
		case "required":
			if mv.Kind() != exactjson.KindArray {
				return nil, schemaErr(`"required" must be an array of property names, not %s`, mv.Kind())
			}
			req, haveReq = mv, true
		default:
			return nil, schemaErr("unsupported top-level keyword %s (form schemas are flat objects)", quoteTrunc(name))
		}
	}
	if !haveType {
		return nil, schemaErr(`missing "type": "object"`)
	}
	if !haveProps {
		return nil, schemaErr(`missing "properties"`)
	}
	if err := checkNames(props); err != nil {
		return nil, schemaErr("properties: %w", err)
	}
	s := &Schema{value: v, index: make(map[string]int, props.Len())}
	for name, pv := range props.All() {
		if name == "" {
			return nil, schemaErr("a property has an empty name")
		}
		p, err := parseProperty(name, pv)
		if err != nil {
			return nil, err
		}
		s.index[name] = len(s.props)
		s.props = append(s.props, p)
	}
	if haveReq {
		seen := make(map[string]bool, req.Len())
		for e := range req.Values() {
			name, ok := e.AsString()
			if !ok {
				return nil, schemaErr(`"required" must contain only strings, found %s`, e.Kind())
			}
			i, declared := s.index[name]
			if !declared {
				return nil, schemaErr(`"required" names undeclared property %s`, quoteTrunc(name))
			}
			if seen[name] {
				return nil, schemaErr(`"required" lists property %s twice`, quoteTrunc(name))
			}
			seen[name] = true
			s.props[i].required = true
		}
	}
	if _, err := exactjson.Encode(v, 0); err != nil {
		return nil, schemaErr("requestedSchema cannot be encoded: %w", err)
	}
	return s, nil
}

// checkNames rejects objects with duplicate or non-UTF-8 member names (which
// only programmatically built values can have).
func checkNames(obj exactjson.Value) error {
	n := obj.Len()
	var seen map[string]bool
	if n > 8 {
		seen = make(map[string]bool, n)
	}
	for i := range n {
		name := obj.Member(i).Name
		if !utf8.ValidString(name) {
			return fmt.Errorf("member name %s is not valid UTF-8", quoteTrunc(name))
		}
		dup := seen[name]
		for j := 0; seen == nil && j < i && !dup; j++ {
			dup = obj.Member(j).Name == name
		}
		if dup {
			return fmt.Errorf("member %s appears twice", quoteTrunc(name))
		}
		if seen != nil {
			seen[name] = true
		}
	}
	return nil
}

// secretHint reports whether keyword k with value v marks a field secret.
func secretHint(k string, v exactjson.Value) bool {
	switch k {
	case "writeOnly", "x-secret", "x-sensitive", "x-password":
		b, ok := v.AsBool()
		return ok && b
	case "format":
		s, ok := v.AsString()
		return ok && s == "password"
	}
	return false
}

func parseProperty(name string, pv exactjson.Value) (property, error) {
	p := property{name: name, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	if pv.Kind() != exactjson.KindObject {
		return p, propErr(name, "schema must be an object, not %s", pv.Kind())
	}
	if err := checkNames(pv); err != nil {
		return p, propErr(name, "%w", err)
	}
	for k, kv := range pv.All() {
		if secretHint(k, kv) {
			se := &SecretFieldError{Field: name, Rule: "schema-hint", Reason: "a value the schema marks as secret", Source: k, Term: k}
			if k == "format" {
				se.Term = `format "password"`
			}
			return p, fmt.Errorf("%w: %w", ErrInvalidSchema, se)
		}
	}
	tv, ok := pv.Get("type")
	if !ok {
		return p, propErr(name, `missing "type"`)
	}
	typ, ok := tv.AsString()
	if !ok {
		return p, propErr(name, `"type" must be a single string, not %s`, tv.Kind())
	}
	var allowed []string
	switch typ {
	case "string":
		switch {
		case pv.Has("enum") && pv.Has("oneOf"):
			return p, propErr(name, `has both "enum" and "oneOf"`)
		case pv.Has("enum"):
			p.kind = KindSingleSelect
			allowed = []string{"enum", "enumNames"}
		case pv.Has("oneOf"):
			p.kind = KindSingleSelect
			allowed = []string{"oneOf"}
		default:
			p.kind = KindString
			allowed = []string{"minLength", "maxLength", "format"}
		}
	case "number":
		p.kind = KindNumber
		allowed = []string{"minimum", "maximum"}
	case "integer":
		p.kind = KindInteger
		allowed = []string{"minimum", "maximum"}
	case "boolean":
		p.kind = KindBoolean
	case "array":
		p.kind = KindMultiSelect
		allowed = []string{"items", "minItems", "maxItems"}
	default:
		return p, propErr(name, `unsupported type %s (form fields are string, number, integer, boolean or a string multi-select array)`, quoteTrunc(typ))
	}
	for k, kv := range pv.All() {
		switch k {
		case "type":
		case "title", "description":
			s, ok := kv.AsString()
			if !ok || !utf8.ValidString(s) {
				return p, propErr(name, "%q must be a string", k)
			}
			if k == "title" {
				p.title = s
			} else {
				p.description = s
			}
		case "default":
			p.hasDefault, p.def = true, kv
		default:
			if !slices.Contains(allowed, k) {
				return p, propErr(name, "keyword %s is not allowed in a %s field", quoteTrunc(k), p.kind)
			}
		}
	}
	var err error
	switch p.kind {
	case KindString:
		err = p.parseString(pv)
	case KindNumber, KindInteger:
		err = p.parseNumber(pv)
	case KindSingleSelect:
		err = p.parseSingle(pv)
	case KindMultiSelect:
		err = p.parseMulti(pv)
	}
	if err != nil {
		return p, err
	}
	if p.hasDefault {
		if prob, bad := p.check(p.def); bad {
			return p, propErr(name, "default value is invalid: %s", prob.Reason)
		}
	}
	return p, nil
}

// count parses a non-negative integer keyword.
func count(name, k string, v exactjson.Value) (int, error) {
	n, ok := v.AsNumber()
	if !ok {
		return 0, propErr(name, "%q must be a number, not %s", k, v.Kind())
	}
	i, ok := n.Int64()
	if !ok || i < 0 || i > maxCount {
		return 0, propErr(name, "%q must be an integer from 0 to %d", k, maxCount)
	}
	return int(i), nil
}

func (p *property) parseString(pv exactjson.Value) error {
	var err error
	if v, ok := pv.Get("minLength"); ok {
		if p.minLen, err = count(p.name, "minLength", v); err != nil {
			return err
		}
	}
	if v, ok := pv.Get("maxLength"); ok {
		if p.maxLen, err = count(p.name, "maxLength", v); err != nil {
			return err
		}
	}
	if p.minLen >= 0 && p.maxLen >= 0 && p.minLen > p.maxLen {
		return propErr(p.name, "minLength %d is greater than maxLength %d", p.minLen, p.maxLen)
	}
	if v, ok := pv.Get("format"); ok {
		f, ok := v.AsString()
		if !ok || !Format(f).valid() {
			return propErr(p.name, `"format" must be "email", "uri", "date" or "date-time"`)
		}
		p.format = Format(f)
	}
	return nil
}

func (p *property) parseNumber(pv exactjson.Value) error {
	if v, ok := pv.Get("minimum"); ok {
		n, isNum := v.AsNumber()
		if !isNum {
			return propErr(p.name, `"minimum" must be a number, not %s`, v.Kind())
		}
		p.hasMin, p.minimum = true, n
	}
	if v, ok := pv.Get("maximum"); ok {
		n, isNum := v.AsNumber()
		if !isNum {
			return propErr(p.name, `"maximum" must be a number, not %s`, v.Kind())
		}
		p.hasMax, p.maximum = true, n
	}
	if p.hasMin && p.hasMax && p.minimum.Cmp(p.maximum) > 0 {
		return propErr(p.name, "minimum %s is greater than maximum %s", p.minimum, p.maximum)
	}
	return nil
}

// stringList parses a non-empty array of unique strings.
func stringList(name, k string, v exactjson.Value) ([]string, error) {
	if v.Kind() != exactjson.KindArray {
		return nil, propErr(name, "%q must be an array of strings, not %s", k, v.Kind())
	}
	out := make([]string, 0, v.Len())
	for e := range v.Values() {
		s, ok := e.AsString()
		if !ok || !utf8.ValidString(s) {
			return nil, propErr(name, "%q must contain only strings", k)
		}
		out = append(out, s)
	}
	return out, nil
}

// titledOptions parses a oneOf/anyOf list of {"const","title"} objects.
func titledOptions(name, k string, v exactjson.Value) ([]Option, error) {
	if v.Kind() != exactjson.KindArray {
		return nil, propErr(name, "%q must be an array of {const, title} objects, not %s", k, v.Kind())
	}
	out := make([]Option, 0, v.Len())
	for e := range v.Values() {
		if e.Kind() != exactjson.KindObject {
			return nil, propErr(name, "%q entries must be {const, title} objects", k)
		}
		if err := checkNames(e); err != nil {
			return nil, propErr(name, "%q entry: %w", k, err)
		}
		var o Option
		var haveConst, haveTitle bool
		for mk, mv := range e.All() {
			s, ok := mv.AsString()
			if !ok || !utf8.ValidString(s) {
				return nil, propErr(name, "%q entry member %s must be a string", k, quoteTrunc(mk))
			}
			switch mk {
			case "const":
				o.Value, haveConst = s, true
			case "title":
				o.Title, haveTitle = s, true
			default:
				return nil, propErr(name, "%q entry has unsupported keyword %s", k, quoteTrunc(mk))
			}
		}
		if !haveConst || !haveTitle {
			return nil, propErr(name, `%q entries need both "const" and "title"`, k)
		}
		out = append(out, o)
	}
	return out, nil
}

// setOptions checks that opts is non-empty and free of repeated values and
// installs it.
func (p *property) setOptions(opts []Option) error {
	if len(opts) == 0 {
		return propErr(p.name, "has no options")
	}
	set := make(map[string]struct{}, len(opts))
	for _, o := range opts {
		if _, dup := set[o.Value]; dup {
			return propErr(p.name, "option %s is listed twice", quoteTrunc(o.Value))
		}
		set[o.Value] = struct{}{}
	}
	p.options, p.optionSet = opts, set
	return nil
}

func (p *property) parseSingle(pv exactjson.Value) error {
	if v, ok := pv.Get("oneOf"); ok {
		opts, err := titledOptions(p.name, "oneOf", v)
		if err != nil {
			return err
		}
		return p.setOptions(opts)
	}
	v, _ := pv.Get("enum")
	vals, err := stringList(p.name, "enum", v)
	if err != nil {
		return err
	}
	opts := make([]Option, len(vals))
	for i, s := range vals {
		opts[i].Value = s
	}
	if nv, ok := pv.Get("enumNames"); ok {
		names, err := stringList(p.name, "enumNames", nv)
		if err != nil {
			return err
		}
		if len(names) != len(vals) {
			return propErr(p.name, `"enumNames" has %d entries but "enum" has %d`, len(names), len(vals))
		}
		for i, s := range names {
			opts[i].Title = s
		}
	}
	return p.setOptions(opts)
}

func (p *property) parseMulti(pv exactjson.Value) error {
	items, ok := pv.Get("items")
	if !ok {
		return propErr(p.name, `an array field needs "items"`)
	}
	if items.Kind() != exactjson.KindObject {
		return propErr(p.name, `"items" must be an object, not %s`, items.Kind())
	}
	if err := checkNames(items); err != nil {
		return propErr(p.name, "items: %w", err)
	}
	var (
		opts []Option
		err  error
	)
	switch {
	case items.Has("anyOf") && items.Has("enum"):
		return propErr(p.name, `"items" has both "enum" and "anyOf"`)
	case items.Has("anyOf"):
		for k, kv := range items.All() {
			switch k {
			case "anyOf":
			case "type":
				if s, ok := kv.AsString(); !ok || s != "string" {
					return propErr(p.name, `"items.type" must be "string"`)
				}
			default:
				return propErr(p.name, "items keyword %s is not allowed", quoteTrunc(k))
			}
		}
		v, _ := items.Get("anyOf")
		if opts, err = titledOptions(p.name, "items.anyOf", v); err != nil {
			return err
		}
	case items.Has("enum"):
		for k, kv := range items.All() {
			switch k {
			case "enum":
			case "type":
				if s, ok := kv.AsString(); !ok || s != "string" {
					return propErr(p.name, `"items.type" must be "string"`)
				}
			default:
				return propErr(p.name, "items keyword %s is not allowed", quoteTrunc(k))
			}
		}
		if t, ok := items.Get("type"); !ok || t.Kind() != exactjson.KindString {
			return propErr(p.name, `"items" with "enum" needs "type": "string"`)
		}
		v, _ := items.Get("enum")
		vals, err := stringList(p.name, "items.enum", v)
		if err != nil {
			return err
		}
		opts = make([]Option, len(vals))
		for i, s := range vals {
			opts[i].Value = s
		}
	default:
		return propErr(p.name, `"items" must be {"type":"string","enum":[...]} or {"anyOf":[{const,title},...]} (arrays of free values or objects are not supported)`)
	}
	if err := p.setOptions(opts); err != nil {
		return err
	}
	if v, ok := pv.Get("minItems"); ok {
		if p.minItems, err = count(p.name, "minItems", v); err != nil {
			return err
		}
	}
	if v, ok := pv.Get("maxItems"); ok {
		if p.maxItems, err = count(p.name, "maxItems", v); err != nil {
			return err
		}
	}
	if p.minItems >= 0 && p.maxItems >= 0 && p.minItems > p.maxItems {
		return propErr(p.name, "minItems %d is greater than maxItems %d", p.minItems, p.maxItems)
	}
	if p.minItems > len(p.options) {
		return propErr(p.name, "minItems %d is more than the %d options", p.minItems, len(p.options))
	}
	return nil
}

func (p *property) hasOption(v string) bool {
	_, ok := p.optionSet[v]
	return ok
}
