package weft

import (
	"encoding/base64"
	"fmt"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/weftmcp/weft/exactjson"
)

// enc appends compact JSON objects to a buffer. The first error sticks.
type enc struct {
	b     []byte
	err   error
	first bool
	// nums, when set, holds every value's numbers to these JSON limits
	// (the server's: what its clients' parsers accept), not only to the
	// encoder's ceilings.
	nums *exactjson.Limits
	// era is the era of the client the encoding is for.
	era era
}

func (e *enc) open() { e.b = append(e.b, '{'); e.first = true }

func (e *enc) close() { e.b = append(e.b, '}'); e.first = false }

func (e *enc) name(n string) {
	if !e.first {
		e.b = append(e.b, ',')
	}
	e.first = false
	e.quote(n)
	e.b = append(e.b, ':')
}

// quote appends a JSON string; invalid UTF-8 is an encoding error.
func (e *enc) quote(s string) {
	b, err := exactjson.AppendJSON(e.b, exactjson.String(s))
	if err != nil {
		if e.err == nil {
			e.err = err
		}
		e.b = append(e.b, `""`...)
		return
	}
	e.b = b
}

func (e *enc) str(n, v string) { e.name(n); e.quote(v) }

func (e *enc) strOpt(n, v string) {
	if v != "" {
		e.str(n, v)
	}
}

func (e *enc) boolean(n string, v bool) { e.name(n); e.b = strconv.AppendBool(e.b, v) }

func (e *enc) integer(n string, v int64) { e.name(n); e.b = strconv.AppendInt(e.b, v, 10) }

func (e *enc) raw(n string, raw []byte) { e.name(n); e.b = append(e.b, raw...) }

func (e *enc) blob(n string, data []byte) {
	e.name(n)
	e.b = append(e.b, '"')
	e.b = base64.StdEncoding.AppendEncode(e.b, data)
	e.b = append(e.b, '"')
}

func (e *enc) value(n string, v exactjson.Value) {
	e.name(n)
	if e.nums != nil {
		if err := e.nums.CheckNumbers(v); err != nil {
			if e.err == nil {
				e.err = fmt.Errorf("member %q: %w", n, err)
			}
			return
		}
	}
	b, err := exactjson.AppendJSON(e.b, v)
	if err != nil {
		if e.err == nil {
			e.err = err
		}
		return
	}
	e.b = b
}

func (e *enc) valueOpt(n string, v exactjson.Value) {
	if v.Kind() != exactjson.KindNull {
		e.value(n, v)
	}
}

// goValue encodes an arbitrary Go value with the case-sensitive JSON v2 codec.
func (e *enc) goValue(n string, v any) {
	e.name(n)
	b, err := jsonv2.Marshal(v)
	if err != nil {
		if e.err == nil {
			e.err = err
		}
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, b...)
}
