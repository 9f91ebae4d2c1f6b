package client

import (
	"errors"
	"fmt"

	"github.com/weftmcp/weft/exactjson"
)

// StructuredAs decodes the structuredContent of a tool result into a T
// (github.com/go-json-experiment/json, so a Weft typed tool's output type
// reads back as itself). A result without structuredContent is an error.
func StructuredAs[T any](r *ToolResult) (T, error) {
	var zero T
	if r == nil || r.StructuredContent.Kind() == exactjson.KindNull {
		return zero, errors.New("client: the tool result has no structuredContent")
	}
	v, err := exactjson.Decode[T](r.StructuredContent)
	if err != nil {
		return zero, fmt.Errorf("client: structuredContent: %w", err)
	}
	return v, nil
}
