package weft

import (
	"fmt"
	"net/http"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/hdr"
	"github.com/weftmcp/weft/internal/mirror"
)

// The checks of a 2026-07-28 request that come before admission, in the
// spec's order (dispatch.go serve): required _meta, the HTTP metadata
// headers against the body, the version, the target name and its Mcp-Name
// header. checkMirrors (the Mcp-Param-* headers of tools/call) runs once the
// tool is known (call.go).

func requiredMeta(meta exactjson.Value) (string, exactjson.Value, *Error) {
	if meta.Kind() != exactjson.KindObject {
		return "", exactjson.Value{}, InvalidParams(`Missing params._meta with "` + metaProtocolVersion + `" and "` + metaClientCapabilities + `"`)
	}
	pv, ok := meta.Get(metaProtocolVersion)
	version, isStr := pv.AsString()
	if !ok || !isStr || version == "" {
		return "", exactjson.Value{}, InvalidParams(`Missing or invalid params._meta["` + metaProtocolVersion + `"]`)
	}
	caps, ok := meta.Get(metaClientCapabilities)
	if !ok || caps.Kind() != exactjson.KindObject {
		return "", exactjson.Value{}, InvalidParams(`Missing or invalid params._meta["` + metaClientCapabilities + `"]`)
	}
	return version, caps, nil
}

func versionSupported(v string) bool {
	for _, s := range supportedVersions {
		if s == v {
			return true
		}
	}
	return false
}

func unsupportedVersion(requested string) *Error {
	return protocolError(CodeUnsupportedProtocolVersion, "Unsupported protocol version", exactjson.Object(
		exactjson.Field("supported", stringArray(supportedVersions)),
		exactjson.Field("requested", exactjson.String(requested))))
}

func headerMismatch(msg string) *Error {
	return protocolError(CodeHeaderMismatch, "Header mismatch: "+msg, exactjson.Value{})
}

func checkHeaders(h http.Header, version, method string) *Error {
	pv, ok, err := hdr.Value(h, "Mcp-Protocol-Version") // canonical: no allocation
	switch {
	case err != nil:
		return headerMismatch(err.Error())
	case !ok:
		return headerMismatch("MCP-Protocol-Version header is required")
	case pv != version:
		return headerMismatch("MCP-Protocol-Version header differs from params._meta")
	}
	mv, ok, err := hdr.Value(h, "Mcp-Method")
	switch {
	case err != nil:
		return headerMismatch(err.Error())
	case !ok:
		return headerMismatch("Mcp-Method header is required")
	case mv != method:
		return headerMismatch("Mcp-Method header differs from the request method")
	}
	return nil
}

func checkNameHeader(h http.Header, name string) *Error {
	nv, ok, err := hdr.Value(h, "Mcp-Name")
	switch {
	case err != nil:
		return headerMismatch(err.Error())
	case !ok:
		return headerMismatch("Mcp-Name header is required for this method")
	case nv != name:
		return headerMismatch("Mcp-Name header differs from the request target")
	}
	return nil
}

type target struct {
	value    string
	required bool
}

// targetName extracts the target of a request: params.name, params.uri,
// params.taskId, or the NameParam of a custom method.
func (s *Server) targetName(method string, params exactjson.Value) (target, *Error) {
	var member string
	switch method {
	case "tools/call", "prompts/get":
		member = "name"
	case "resources/read":
		member = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		member = "taskId"
	default:
		if cm, ok := s.customMethod(method); ok && cm.opts.NameParam != "" {
			member = cm.opts.NameParam
		} else {
			return target{}, nil
		}
	}
	return nameParam(member, params)
}

func nameParam(member string, params exactjson.Value) (target, *Error) {
	v, ok := params.Get(member)
	s, isStr := v.AsString()
	if !ok || !isStr {
		return target{}, InvalidParams(fmt.Sprintf("params.%s must be a string", member))
	}
	return target{value: s, required: true}, nil
}

// checkMirrors validates Mcp-Param-* headers of a tools/call against the
// arguments they mirror.
func checkMirrors(h http.Header, mirrors []mirror.Mirror, args exactjson.Value) *Error {
	if err := mirror.Check(h, mirrors, args); err != nil {
		return headerMismatch(err.Error())
	}
	return nil
}
