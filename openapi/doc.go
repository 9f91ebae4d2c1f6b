// Package openapi serves an existing HTTP API as MCP tools (and, when
// asked, resources) from its OpenAPI 3.0 or 3.1 document.
//
//	api, err := openapi.New(doc, &openapi.Options{BaseURL: "https://api.example.com", HTTPClient: hc})
//	if err != nil { ... }
//	err = api.Register(server)
//
// Every operation becomes a tool: the name is the operationId (sanitised to
// [A-Za-z0-9_.-], or method_path when there is none; Options.Rename
// overrides), the description is the summary and description, the input
// schema is a JSON Schema 2020-12 object with one property per path, query,
// header and cookie parameter plus "body" for the request body (a name used
// in two locations becomes name__query, name__path, ...), and the output
// schema comes from the 2xx JSON response when there is exactly one. GET,
// HEAD and OPTIONS are annotated read-only and idempotent, DELETE
// destructive and idempotent, PUT idempotent.
//
// # Schemas
//
// Schemas are converted from the document's own YAML nodes, so numbers keep
// their literal spelling (maximum: 9007199254740993 stays exact, and so do
// examples and defaults). Every local $ref becomes a reference into the
// tool schema's $defs: shared schemas are written once and recursive ones
// stay recursive. OpenAPI 3.0 rules are mapped: nullable adds "null" to the
// type (and the enum), boolean exclusiveMinimum/exclusiveMaximum become
// numeric bounds, $ref siblings are ignored, example becomes examples.
// OpenAPI-only keywords (discriminator, xml, externalDocs) and x- extensions
// are left out of the tool schemas.
//
// # Calls
//
// A call builds the HTTP request exactly: path templating with every
// reserved character percent-encoded ("." and ".." too, so a value cannot
// leave the base path), the styles simple, label, matrix, form,
// spaceDelimited, pipeDelimited and deepObject with explode, allowReserved,
// content-encoded (JSON) parameters, and JSON bodies written from the exact
// arguments (9007199254740993 and 3.50 arrive as sent). It is sent with
// Options.HTTPClient under Options.Timeout; a body beyond
// Options.MaxResponseBytes fails the call. 2xx JSON becomes
// structuredContent plus its text (wrapped as {"result": ...} when it is not
// an object), checked against the output schema; other content types become
// text, image, audio or an embedded resource; 4xx and 5xx become tool
// errors carrying the status and at most Options.MaxErrorBytes of the body.
//
// # Confirmation
//
// Operations for which Options.Confirm says so (by default DELETE, and any
// operation with x-mcp-confirm: true) ask the user first, through a form
// elicitation with framework-protected state: the first call answers
// input_required, and only a verified retry whose answer confirms sends the
// request. The sealed state binds the arguments, so what was confirmed is
// what is sent.
//
// # Authorization
//
// Upstream credentials are added by Options.Authorize ([StaticHeader], [StaticQuery],
// [BearerPassThrough] or any [Authorizer]); nothing from the MCP request
// reaches the upstream otherwise, and nothing from the upstream's response
// headers (Set-Cookie, WWW-Authenticate) reaches the MCP client. Forwarding
// the caller's token is the confused-deputy risk docs/openapi.md explains.
//
// # The parser
//
// The document is read with github.com/pb33f/libopenapi rather than
// github.com/getkin/kin-openapi. Both read 3.0 and 3.1 today; libopenapi
// was built for 3.1 (schemas as JSON Schema 2020-12, $ref siblings, type
// arrays, 3.2 too) and detects circular references instead of failing on
// them, and above all it keeps every object's source YAML node. kin-openapi
// decodes examples, defaults, enums and numeric bounds into Go any and
// float64, losing digits this package must keep; with libopenapi the
// converter reads the exact literals from the nodes. libopenapi resolves
// parameter, request-body and response references; schema references are
// turned into $defs by this package. Remote and file references are never
// fetched.
package openapi
