package openapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// callError is a failure the model should see as a tool error.
type callError struct{ msg string }

func (e *callError) Error() string { return e.msg }

func failf(format string, args ...any) error { return &callError{fmt.Sprintf(format, args...)} }

// response is what came back from the upstream.
type response struct {
	status int
	header http.Header
	body   []byte
	url    string
	// truncated: the body went beyond MaxResponseBytes and body holds only
	// its first MaxResponseBytes.
	truncated bool
}

// buildRequest builds the upstream request from the call's arguments.
func (a *API) buildRequest(ctx context.Context, pl *plan, args exactjson.Value) (*http.Request, error) {
	if args.Kind() == exactjson.KindNull {
		args = exactjson.Object()
	}
	if args.Kind() != exactjson.KindObject {
		return nil, failf("arguments must be an object")
	}
	values := map[string]exactjson.Value{}
	for _, p := range pl.params {
		v, ok := args.Get(p.arg)
		if !ok || v.IsNull() {
			if p.required {
				return nil, failf("argument %q is required", p.arg)
			}
			continue
		}
		values[p.arg] = v
	}
	// Path.
	var path strings.Builder
	rest := pl.path
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			path.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			path.WriteString(rest)
			break
		}
		path.WriteString(rest[:i])
		name := rest[i+1 : i+j]
		rest = rest[i+j+1:]
		for _, p := range pl.params {
			if p.in == "path" && p.name == name {
				s, err := pathValue(p, values[p.arg])
				if err != nil {
					return nil, failf("%v", err)
				}
				path.WriteString(s)
			}
		}
	}
	var query, cookies []string
	header := http.Header{}
	for _, p := range pl.params {
		v, ok := values[p.arg]
		if !ok {
			continue
		}
		switch p.in {
		case "query":
			pairs, err := queryPairs(p, v)
			if err != nil {
				return nil, failf("%v", err)
			}
			query = append(query, pairs...)
		case "header":
			s, err := headerValue(p, v)
			if err != nil {
				return nil, failf("%v", err)
			}
			header.Set(p.name, s)
		case "cookie":
			pairs, err := cookiePairs(p, v)
			if err != nil {
				return nil, failf("%v", err)
			}
			cookies = append(cookies, pairs...)
		}
	}
	if len(cookies) > 0 {
		header.Set("Cookie", strings.Join(cookies, "; "))
	}
	u := *a.base
	rawPath := u.EscapedPath() + path.String()
	target := u.Scheme + "://" + u.Host + rawPath
	if len(query) > 0 {
		target += "?" + strings.Join(query, "&")
	}
	var bodyReader io.Reader
	if b := pl.body; b != nil {
		v, ok := args.Get(b.arg)
		if ok && !v.IsNull() {
			data, ctype, err := encodeBody(b, v)
			if err != nil {
				return nil, failf("body: %v", err)
			}
			bodyReader = bytes.NewReader(data)
			header.Set("Content-Type", ctype)
		} else if b.required {
			return nil, failf("argument %q is required", b.arg)
		}
	}
	req, err := http.NewRequestWithContext(ctx, pl.method, target, bodyReader)
	if err != nil {
		return nil, failf("cannot build the request: %v", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if pl.accept != "" {
		req.Header.Set("Accept", pl.accept)
	}
	return req, nil
}

func encodeBody(b *body, v exactjson.Value) ([]byte, string, error) {
	switch b.kind {
	case bodyJSON:
		data, err := exactjson.AppendJSON(nil, v)
		return data, b.media, err
	case bodyForm:
		if v.Kind() != exactjson.KindObject {
			return nil, "", errors.New("a form body must be an object")
		}
		var parts []string
		for k, e := range v.All() {
			p, err := formField(b.encoding[k], k, e)
			if err != nil {
				return nil, "", err
			}
			parts = append(parts, p...)
		}
		return []byte(strings.Join(parts, "&")), "application/x-www-form-urlencoded", nil
	case bodyMultipart:
		if v.Kind() != exactjson.KindObject {
			return nil, "", errors.New("a multipart body must be an object")
		}
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for k, e := range v.All() {
			if err := w.WriteField(k, text(e)); err != nil {
				return nil, "", err
			}
		}
		if err := w.Close(); err != nil {
			return nil, "", err
		}
		return buf.Bytes(), w.FormDataContentType(), nil
	case bodyText:
		s, ok := v.AsString()
		if !ok {
			return nil, "", errors.New("a text body must be a string")
		}
		return []byte(s), b.media, nil
	}
	s, ok := v.AsString()
	if !ok {
		return nil, "", errors.New("a binary body must be a base64 string")
	}
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, "", fmt.Errorf("a binary body must be base64: %w", err)
	}
	return data, b.media, nil
}

// formEscape escapes a form name or value; a space is %20, which every
// form decoder reads (some read + as itself).
func formEscape(s string) string { return escape(s, false) }

// formField writes one member of a form body as its encoding says
// (OpenAPI's Encoding Object: style and explode as for query parameters,
// or a JSON contentType). Objects, and the objects and arrays inside an
// array, are written in bracket notation, a[b][c]=v and a[0][b]=v, as
// Stripe, Rails, PHP and Express read them: OpenAPI's default (style form,
// exploded) would spread an object's members over the top level, losing
// its name, which no common server reads.
func formField(enc formEncoding, k string, v exactjson.Value) ([]string, error) {
	if enc.style == "" { // not in the Encoding Object: form, exploded
		enc = formEncoding{style: "form", explode: true}
	}
	name := formEscape(k)
	if enc.json {
		s, err := jsonText(v)
		return []string{name + "=" + formEscape(s)}, err
	}
	var out []string
	switch v.Kind() {
	case exactjson.KindObject:
		deepPairs(name, v, formEscape, &out)
		return out, nil
	case exactjson.KindArray:
		flat := true
		for e := range v.Values() {
			if e.Kind() == exactjson.KindArray || e.Kind() == exactjson.KindObject {
				flat = false
			}
		}
		if !flat || enc.style == "deepObject" {
			deepPairs(name, v, formEscape, &out)
			return out, nil
		}
		items := make([]string, 0, v.Len())
		for e := range v.Values() {
			items = append(items, formEscape(text(e)))
		}
		if enc.explode {
			for _, it := range items {
				out = append(out, name+"="+it)
			}
			return out, nil
		}
		sep := ","
		switch enc.style {
		case "spaceDelimited":
			sep = "%20"
		case "pipeDelimited":
			sep = "|"
		}
		return []string{name + "=" + strings.Join(items, sep)}, nil
	}
	return []string{name + "=" + formEscape(text(v))}, nil
}

// do sends the request with the configured client, authorizer, timeout and
// size bound.
func (a *API) do(ctx context.Context, mreq *weft.Request, pl *plan, args exactjson.Value) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	req, err := a.buildRequest(ctx, pl, args)
	if err != nil {
		return nil, err
	}
	if a.opts.Authorize != nil {
		if err := a.opts.Authorize(ctx, mreq, req); err != nil {
			return nil, failf("upstream authorization: %v", err)
		}
	}
	resp, err := a.opts.HTTPClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return nil, failf("%s %s: the upstream did not answer within %v", pl.method, pl.path, a.opts.Timeout)
		}
		return nil, failf("%s %s: upstream request failed: %v", pl.method, pl.path, redact(err, req))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, a.opts.MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, failf("%s %s: the upstream did not finish its answer within %v", pl.method, pl.path, a.opts.Timeout)
		}
		return nil, failf("%s %s: reading the upstream response: %v", pl.method, pl.path, err)
	}
	r := &response{status: resp.StatusCode, header: resp.Header, body: data, url: req.URL.String()}
	if int64(len(data)) > a.opts.MaxResponseBytes {
		if r.status >= 200 && r.status <= 299 {
			return nil, failf("%s %s: the upstream response exceeds %d bytes (MaxResponseBytes)", pl.method, pl.path, a.opts.MaxResponseBytes)
		}
		// An error answer is still reported, with the start of its body.
		r.body, r.truncated = data[:a.opts.MaxResponseBytes], true
	}
	return r, nil
}

// redact keeps the request URL (which may carry query credentials) out of
// transport errors.
func redact(err error, req *http.Request) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return strings.ReplaceAll(err.Error(), req.URL.RawQuery, "…")
}

// toolResult maps an upstream response to a tool result.
func (a *API) toolResult(pl *plan, r *response) (*weft.CallToolResult, error) {
	ctype := r.header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ctype)
	if r.status < 200 || r.status > 299 {
		return a.errorResult(pl, r, mt), nil
	}
	if isJSON(mt) && len(bytes.TrimSpace(r.body)) > 0 {
		v, err := exactjson.Parse(r.body, exactjson.Limits{MaxInputBytes: int(min(a.opts.MaxResponseBytes, 16<<20))})
		if err != nil {
			return toolError(fmt.Sprintf("%s %s: the upstream sent invalid JSON: %v", pl.method, pl.path, err)), nil
		}
		structured := v
		if pl.wrap {
			structured = exactjson.Object(exactjson.Field("result", v))
		}
		if pl.outValidator != nil {
			if err := pl.outValidator.Validate(structured.Any()); err != nil {
				// The request did happen: say so first, so a model does not
				// repeat a POST that succeeded.
				return &weft.CallToolResult{IsError: true, Content: []weft.Content{
					weft.TextContent(fmt.Sprintf("%s %s succeeded (HTTP %d), but its response does not match the documented output schema, so it comes as text: %v",
						pl.method, pl.path, r.status, err)),
					weft.TextContent(string(r.body))}}, nil
			}
		} else if structured.Kind() != exactjson.KindObject {
			structured = exactjson.Object(exactjson.Field("result", v))
		}
		return &weft.CallToolResult{StructuredContent: structured, Content: []weft.Content{weft.TextContent(string(r.body))}}, nil
	}
	if pl.outValidator != nil {
		return toolError(fmt.Sprintf("%s %s: HTTP %d: the upstream sent %q where the document promises JSON", pl.method, pl.path, r.status, ctype)), nil
	}
	return &weft.CallToolResult{Content: []weft.Content{content(r, mt)}}, nil
}

// content maps a non-JSON body: text as text, images and audio as such,
// anything else as an embedded resource named by the request URL.
func content(r *response, mt string) weft.Content {
	switch {
	case len(r.body) == 0:
		return weft.TextContent(fmt.Sprintf("HTTP %d %s (no content)", r.status, http.StatusText(r.status)))
	case strings.HasPrefix(mt, "image/"):
		return weft.ImageContent(r.body, mt)
	case strings.HasPrefix(mt, "audio/"):
		return weft.AudioContent(r.body, mt)
	case (kindOf(mt) == bodyText || isJSON(mt) || mt == "" || mt == "application/x-www-form-urlencoded") && utf8.Valid(r.body):
		return weft.TextContent(string(r.body))
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	return weft.EmbeddedResource(weft.BlobResource(r.url, mt, r.body))
}

func toolError(msg string) *weft.CallToolResult {
	return &weft.CallToolResult{IsError: true, Content: []weft.Content{weft.TextContent(msg)}}
}

// errorResult is a tool error with the status and a bounded body, and the
// same as structured content ({"status": 404, "body": ...}).
func (a *API) errorResult(pl *plan, r *response, mt string) *weft.CallToolResult {
	msg := fmt.Sprintf("%s %s: the upstream answered HTTP %d %s", pl.method, pl.path, r.status, http.StatusText(r.status))
	structured := exactjson.Object(exactjson.Field("status", exactjson.Int(int64(r.status))))
	if len(r.body) > 0 {
		msg += ": " + clip(r.body, a.opts.MaxErrorBytes)
		if isJSON(mt) && len(r.body) <= a.opts.MaxErrorBytes && !r.truncated {
			if v, err := exactjson.Parse(r.body, exactjson.Limits{}); err == nil {
				structured = structured.With("body", v)
			}
		} else if utf8.Valid(r.body) {
			structured = structured.With("body", exactjson.String(clip(r.body, a.opts.MaxErrorBytes)))
		}
	}
	return &weft.CallToolResult{IsError: true, StructuredContent: structured, Content: []weft.Content{weft.TextContent(msg)}}
}

// clip returns at most max bytes of b as text, cut at a UTF-8 boundary, and
// says how much was left out.
func clip(b []byte, max int) string {
	if len(b) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		if utf8.Valid(b[:cut]) {
			return string(b[:cut]) + fmt.Sprintf("… (%d more bytes)", len(b)-cut)
		}
	}
	if !utf8.Valid(b) {
		return fmt.Sprintf("(%d bytes of binary data)", len(b))
	}
	if len(b) <= max {
		return string(b)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + fmt.Sprintf("… (%d more bytes)", len(b)-cut)
}
