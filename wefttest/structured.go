package wefttest

import (
	"errors"
	"fmt"

	"github.com/weftmcp/weft/exactjson"
)

// StructuredAs decodes the structuredContent of a tool result into a T,
// the way a typed tool's output was encoded (github.com/go-json-experiment/json:
// the output type of the generic weft.AddTool reads back as itself). A
// result without structuredContent is an error.
func StructuredAs[T any](r *ToolResult) (T, error) {
	var zero T
	if r == nil || r.StructuredContent.Kind() == exactjson.KindNull {
		return zero, errors.New("wefttest: the tool result has no structuredContent")
	}
	v, err := exactjson.Decode[T](r.StructuredContent)
	if err != nil {
		return zero, fmt.Errorf("wefttest: structuredContent: %w", err)
	}
	return v, nil
}
