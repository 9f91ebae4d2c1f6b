package client

import (
	"errors"
	"net/http"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/mirror"
)

// toolHeaders is what the client keeps of a listed tool: its x-mcp-header
// mirrors, or why its definition was rejected.
type toolHeaders struct {
	mirrors []mirror.Mirror
	invalid error
}

// headers returns the Mcp-Param-* headers for args. Absent and null
// arguments produce no header.
func (th *toolHeaders) headers(args exactjson.Value) http.Header {
	var h http.Header
	for _, m := range th.mirrors {
		v, present := m.Lookup(args)
		if !present {
			continue
		}
		val, ok := mirror.HeaderValue(v)
		if !ok {
			continue // not a primitive: the server reports the mismatch
		}
		if h == nil {
			h = http.Header{}
		}
		h.Set("Mcp-Param-"+m.Header, val)
	}
	return h
}

// findMirrors collects and checks the x-mcp-header annotations of a listed
// tool's input schema (SEP-2243); a tool breaking the rules is invalid.
func findMirrors(schema exactjson.Value) ([]mirror.Mirror, error) {
	ms, err := mirror.Find(schema)
	if err != nil {
		return nil, errors.New("invalid tool definition: " + err.Error())
	}
	return ms, nil
}
