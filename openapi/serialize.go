package openapi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// escape percent-encodes everything but RFC 3986 unreserved characters;
// with reserved set it also keeps the reserved characters that cannot
// change how the query is split (allowReserved).
func escape(s string, reserved bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' ||
			reserved && strings.IndexByte(":/?@!$'()*,;[]", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// text renders a scalar argument as parameter text: strings as they are,
// numbers exactly as sent, booleans as true/false; compound values (inside
// arrays and objects, where OpenAPI defines no form) as JSON.
func text(v exactjson.Value) string {
	switch v.Kind() {
	case exactjson.KindString:
		s, _ := v.AsString()
		return s
	case exactjson.KindNumber:
		n, _ := v.AsNumber()
		return n.String()
	case exactjson.KindBool:
		b, _ := v.AsBool()
		if b {
			return "true"
		}
		return "false"
	case exactjson.KindNull:
		return ""
	}
	return v.String()
}

func jsonText(v exactjson.Value) (string, error) {
	b, err := exactjson.AppendJSON(nil, v)
	return string(b), err
}

// pathValue serializes a path parameter (styles simple, label, matrix).
func pathValue(p param, v exactjson.Value) (string, error) {
	if p.json {
		s, err := jsonText(v)
		return escapeSegment(s), err
	}
	esc := func(s string) string { return escapeSegment(s) }
	name := escape(p.name, false)
	switch v.Kind() {
	case exactjson.KindArray:
		items := make([]string, 0, v.Len())
		for e := range v.Values() {
			items = append(items, esc(text(e)))
		}
		switch p.style {
		case "label":
			if p.explode {
				return "." + strings.Join(items, "."), nil
			}
			return "." + strings.Join(items, ","), nil
		case "matrix":
			if p.explode {
				var b strings.Builder
				for _, it := range items {
					b.WriteString(";" + name + "=" + it)
				}
				return b.String(), nil
			}
			return ";" + name + "=" + strings.Join(items, ","), nil
		}
		return strings.Join(items, ","), nil
	case exactjson.KindObject:
		var pairs []string // k,v,k,v or k=v,k=v
		for k, e := range v.All() {
			if p.explode {
				pairs = append(pairs, esc(k)+"="+esc(text(e)))
			} else {
				pairs = append(pairs, esc(k), esc(text(e)))
			}
		}
		switch p.style {
		case "label":
			if p.explode {
				return "." + strings.Join(pairs, "."), nil
			}
			return "." + strings.Join(pairs, ","), nil
		case "matrix":
			if p.explode {
				return ";" + strings.Join(pairs, ";"), nil
			}
			return ";" + name + "=" + strings.Join(pairs, ","), nil
		}
		return strings.Join(pairs, ","), nil
	}
	s := esc(text(v))
	switch p.style {
	case "label":
		return "." + s, nil
	case "matrix":
		return ";" + name + "=" + s, nil
	}
	return s, nil
}

// escapeSegment escapes a path value; "." and ".." are escaped too, so a
// value can never climb out of the API's base path.
func escapeSegment(s string) string {
	e := escape(s, false)
	switch e {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return e
}

// queryPairs serializes a query parameter into name=value pairs (already
// escaped), per style and explode.
func queryPairs(p param, v exactjson.Value) ([]string, error) {
	esc := func(s string) string { return escape(s, p.reserved) }
	name := escape(p.name, false)
	if p.json {
		s, err := jsonText(v)
		return []string{name + "=" + esc(s)}, err
	}
	if p.style == "deepObject" {
		// OpenAPI defines deepObject for objects only; Stripe and its SDKs
		// also send arrays (expand[0]=a&expand[1]=b) and nested values this
		// way, and a scalar of an anyOf union (created=5) as a plain pair.
		if v.Kind() != exactjson.KindArray && v.Kind() != exactjson.KindObject {
			return []string{name + "=" + esc(text(v))}, nil
		}
		var out []string
		deepPairs(name, v, esc, &out)
		return out, nil
	}
	switch v.Kind() {
	case exactjson.KindArray:
		items := make([]string, 0, v.Len())
		for e := range v.Values() {
			items = append(items, esc(text(e)))
		}
		if p.explode && p.style != "deepObject" {
			out := make([]string, 0, len(items))
			for _, it := range items {
				out = append(out, name+"="+it)
			}
			return out, nil
		}
		switch p.style {
		case "spaceDelimited":
			return []string{name + "=" + strings.Join(items, "%20")}, nil
		case "pipeDelimited":
			return []string{name + "=" + strings.Join(items, "|")}, nil
		}
		return []string{name + "=" + strings.Join(items, ",")}, nil
	case exactjson.KindObject:
		switch {
		case p.explode:
			var out []string
			for k, e := range v.All() {
				out = append(out, escape(k, false)+"="+esc(text(e)))
			}
			return out, nil
		}
		sep := ","
		switch p.style {
		case "spaceDelimited":
			sep = "%20"
		case "pipeDelimited":
			sep = "|"
		}
		var parts []string
		for k, e := range v.All() {
			parts = append(parts, esc(k), esc(text(e)))
		}
		return []string{name + "=" + strings.Join(parts, sep)}, nil
	}
	return []string{name + "=" + esc(text(v))}, nil
}

// deepPairs writes v under prefix in bracket notation: an object member as
// prefix[name], an array element as prefix[index], nested to any depth.
func deepPairs(prefix string, v exactjson.Value, esc func(string) string, out *[]string) {
	switch v.Kind() {
	case exactjson.KindObject:
		for k, e := range v.All() {
			deepPairs(prefix+"%5B"+escape(k, false)+"%5D", e, esc, out)
		}
	case exactjson.KindArray:
		i := 0
		for e := range v.Values() {
			deepPairs(prefix+"%5B"+strconv.Itoa(i)+"%5D", e, esc, out)
			i++
		}
	default:
		*out = append(*out, prefix+"="+esc(text(v)))
	}
}

// headerValue serializes a header parameter (style simple). Values with
// control characters are refused: they could split the header.
func headerValue(p param, v exactjson.Value) (string, error) {
	var s string
	switch {
	case p.json:
		var err error
		if s, err = jsonText(v); err != nil {
			return "", err
		}
	case v.Kind() == exactjson.KindArray:
		items := make([]string, 0, v.Len())
		for e := range v.Values() {
			items = append(items, text(e))
		}
		s = strings.Join(items, ",")
	case v.Kind() == exactjson.KindObject:
		var parts []string
		for k, e := range v.All() {
			if p.explode {
				parts = append(parts, k+"="+text(e))
			} else {
				parts = append(parts, k, text(e))
			}
		}
		s = strings.Join(parts, ",")
	default:
		s = text(v)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return "", fmt.Errorf("argument %q: a header value cannot hold control characters", p.arg)
		}
	}
	return s, nil
}

// cookiePairs serializes a cookie parameter (style form), values
// percent-encoded so they cannot break out of the Cookie header.
func cookiePairs(p param, v exactjson.Value) ([]string, error) {
	name := p.name
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return nil, errors.New("cookie parameter name " + fmt.Sprintf("%q", name) + " is not a valid cookie name")
		}
	}
	if p.json {
		s, err := jsonText(v)
		return []string{name + "=" + escape(s, false)}, err
	}
	switch v.Kind() {
	case exactjson.KindArray:
		items := make([]string, 0, v.Len())
		for e := range v.Values() {
			items = append(items, escape(text(e), false))
		}
		if p.explode {
			out := make([]string, 0, len(items))
			for _, it := range items {
				out = append(out, name+"="+it)
			}
			return out, nil
		}
		return []string{name + "=" + strings.Join(items, ",")}, nil
	case exactjson.KindObject:
		var parts []string
		var out []string
		for k, e := range v.All() {
			if p.explode {
				out = append(out, escape(k, false)+"="+escape(text(e), false))
			} else {
				parts = append(parts, escape(k, false), escape(text(e), false))
			}
		}
		if p.explode {
			return out, nil
		}
		return []string{name + "=" + strings.Join(parts, ",")}, nil
	}
	return []string{name + "=" + escape(text(v), false)}, nil
}
