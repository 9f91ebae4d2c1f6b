package openapi

// CheckSchema is checkSchema for the external tests: the meta-schema
// validates schema, and it compiles as New compiles tool schemas.
var CheckSchema = checkSchema

// CompileSchema compiles a schema as New compiles tool schemas.
var CompileSchema = compile
