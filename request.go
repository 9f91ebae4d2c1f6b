package weft

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/weftmcp/weft/exactjson"
)

// Identity is what admission made of a request: who is calling and which
// authorization partition their state, tasks and subscriptions belong to.
// Client-reported info, _meta and forwarded headers never make an identity.
type Identity struct {
	// Principal names the caller (for example a token subject). Empty for
	// anonymous callers.
	Principal string
	// Partition is the authorization partition: request state sealed for one
	// partition never opens in another, and tasks are visible only within the
	// partition (and principal) that created them. At most 256 bytes.
	Partition string
	// RateKey keys rate limiting; empty means Partition.
	RateKey string
	// Scopes are the granted OAuth scopes, if any.
	Scopes []string
	// Data carries application data from admission to handlers.
	Data any
}

// Anonymous reports whether the identity has no principal.
func (id Identity) Anonymous() bool { return id.Principal == "" }

// AdmissionRequest is what an [Admission] function sees.
type AdmissionRequest struct {
	Method string // JSON-RPC method
	// Name is the request's target taken from the body (tool or prompt
	// name, resource URI, task id), so admission can require per-operation
	// scopes; empty for methods without a target.
	Name       string
	Header     http.Header // nil on stdio
	RemoteAddr string      // empty on stdio
	Transport  string      // "http" or "stdio"
	// BearerToken is the token of an "Authorization: Bearer" header, if any.
	BearerToken string
}

// Admission turns a request into an identity, or rejects it. It runs for every
// structurally valid request, before the target is looked up, so known and
// unknown targets get the same rejection. Return an [*AdmissionError] to
// choose the HTTP status and challenge; any other error is a 401 without
// detail.
type Admission func(ctx context.Context, r *AdmissionRequest) (Identity, error)

// AdmissionError rejects a request at admission.
type AdmissionError struct {
	Status  int    // HTTP status: 401, 403, 429...
	Message string // client-visible sentence
	// Challenge is the WWW-Authenticate header value, if any.
	Challenge string
	// Header holds extra response headers (for example Retry-After).
	Header http.Header
}

// Error implements error.
func (e *AdmissionError) Error() string {
	return fmt.Sprintf("weft: request rejected at admission (%d): %s", e.Status, e.Message)
}

// Outcome classifies how a request ended, for observers and metrics.
type Outcome uint8

// The outcomes.
const (
	OutcomeComplete         Outcome = iota + 1 // a complete result (including tool results with isError)
	OutcomeInputRequired                       // an input_required result
	OutcomeTask                                // a task was created
	OutcomeRejected                            // admission, rate limit or capacity rejected it
	OutcomeProtocolError                       // a protocol error (-32600, -32602, -32020, ...)
	OutcomeApplicationError                    // the handler returned an application *Error
	OutcomeInternalError                       // a handler failure or panic (-32603)
	OutcomeCancelled                           // the client cancelled or disconnected
	OutcomeDeadlineExceeded                    // the request deadline passed
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case OutcomeComplete:
		return "complete"
	case OutcomeInputRequired:
		return "input_required"
	case OutcomeTask:
		return "task"
	case OutcomeRejected:
		return "rejected"
	case OutcomeProtocolError:
		return "protocol_error"
	case OutcomeApplicationError:
		return "application_error"
	case OutcomeInternalError:
		return "internal_error"
	case OutcomeCancelled:
		return "cancelled"
	case OutcomeDeadlineExceeded:
		return "deadline_exceeded"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Observer receives lifecycle callbacks, exactly once each per admitted
// request, with the same *Request the handler sees.
type Observer interface {
	RequestStarted(ctx context.Context, req *Request)
	RequestFinished(ctx context.Context, req *Request, outcome Outcome, err error)
}

// Interceptor wraps the handler of tools/call, prompts/get and
// resources/read. It must call next at most once; it may inspect or replace
// the result, or return without calling next.
type Interceptor func(ctx context.Context, req *Request, next func(context.Context) (any, error)) (any, error)

// Request is the context of one admitted MCP request. The same *Request
// reaches the [Observer], the [Interceptor] and the handler.
type Request struct {
	// Method is the JSON-RPC method, e.g. "tools/call".
	Method string
	// ID is the JSON-RPC id.
	ID ID
	// ProtocolVersion is the version the request was served under.
	ProtocolVersion string
	// Name is the tool or prompt name, the resource URI or the task id.
	Name string
	// Params are the request params exactly as received.
	Params exactjson.Value
	// Meta is params._meta.
	Meta exactjson.Value
	// ClientInfo is the client's self-reported implementation (not for
	// security decisions); null when absent.
	ClientInfo exactjson.Value
	// ClientCapabilities are the capabilities the client declared on this request.
	ClientCapabilities exactjson.Value
	// Identity is what admission made of the request.
	Identity Identity
	// Header holds the HTTP request headers (nil on stdio).
	Header http.Header
	// Endpoint is the normalized endpoint path ("/mcp"), or "stdio".
	Endpoint string

	srv            *Server
	op             *operation
	inputResponses InputResponses
	appState       string
	hasAppState    bool
	fwState        exactjson.Value
	hasFwState     bool
	stateMeta      *stateMeta
	uriParams      map[string]string
	task           *TaskInfo

	progressToken exactjson.Value
	logLevel      int // index into logLevels; -1 = no logging requested
	out           notifier

	mu           sync.Mutex
	lastProgress float64
	progressSent bool
	holdOutput   bool // an unmet conditional capability keeps the response uncommitted
	// argsChecked: this call's arguments passed (or, on a verified retry,
	// provably already passed) the tool's input schema.
	argsChecked bool
}

// argsVerified reports whether verified request state proves that these
// exact arguments already passed op's current input schema: the binding
// covers the arguments, and the state records the fingerprint of the schema
// that validated them when it was emitted.
func (r *Request) argsVerified(op *operation) bool {
	return r.stateMeta != nil && r.stateMeta.Args != "" && op != nil && r.stateMeta.Args == op.argsFingerprint
}

// notifier sends request-scoped notifications on the request's response stream.
type notifier interface {
	notify(method string, params exactjson.Value) error
	// canStream reports whether notifications can reach the client at all
	// (an HTTP client that does not accept text/event-stream cannot get any).
	canStream() bool
}

// InputResponses returns the keyed responses of a retry (empty on a first call).
func (r *Request) InputResponses() InputResponses { return r.inputResponses }

// ApplicationState returns the application-protected state of a retry. It is
// present only on a retry of an operation declared with [StateApplication].
func (r *Request) ApplicationState() (string, bool) { return r.appState, r.hasAppState }

// FrameworkState returns the verified framework-protected state of a retry. It
// is present only on a retry of an operation declared with [StateFramework].
// Numbers come back in canonical form (1.50 as 1.5, 100 as 1E+2).
func (r *Request) FrameworkState() (exactjson.Value, bool) { return r.fwState, r.hasFwState }

// Round returns the round number of verified framework state (1 after the
// first input_required), or 0 on a first call.
func (r *Request) Round() int {
	if r.stateMeta == nil {
		return 0
	}
	return r.stateMeta.Round
}

// URIParams returns the variables matched from a resource template.
func (r *Request) URIParams() map[string]string { return r.uriParams }

// Arguments returns params.arguments (tools/call, prompts/get), or null.
func (r *Request) Arguments() exactjson.Value {
	a, _ := r.Params.Get("arguments")
	return a
}

// ClientSupports reports whether the client declared the capability that
// input kind k needs on this request.
func (r *Request) ClientSupports(k InputKind) bool { return clientSupports(r.ClientCapabilities, k) }

// ErrNoProgress is returned by [Request.Progress] when progress cannot be
// delivered for this request: the client sent no progress token, or the
// response must stay uncommitted (an unmet conditional capability).
var ErrNoProgress = errors.New("weft: progress cannot be reported for this request")

// ErrProgressNotIncreasing is returned by [Request.Progress] when progress
// does not increase.
var ErrProgressNotIncreasing = errors.New("weft: progress must increase with each notification")

// CanReportProgress reports whether [Request.Progress] would deliver.
func (r *Request) CanReportProgress() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.progressToken.Kind() != exactjson.KindNull && !r.holdOutput && r.out != nil && r.out.canStream()
}

// Progress sends notifications/progress for this request. Progress must
// increase with each call; total is omitted when 0. The first progress
// notification on HTTP switches the response to an SSE stream.
func (r *Request) Progress(progress, total float64, message string) error {
	r.mu.Lock()
	if r.progressToken.Kind() == exactjson.KindNull || r.holdOutput || r.out == nil || !r.out.canStream() {
		r.mu.Unlock()
		return ErrNoProgress
	}
	if r.progressSent && progress <= r.lastProgress {
		r.mu.Unlock()
		return ErrProgressNotIncreasing
	}
	r.lastProgress, r.progressSent = progress, true
	out := r.out
	r.mu.Unlock()
	pv, err := exactjson.Float(progress)
	if err != nil {
		return fmt.Errorf("weft: progress: %w", err)
	}
	members := []exactjson.Member{
		exactjson.Field("progressToken", r.progressToken),
		exactjson.Field("progress", pv),
	}
	if total != 0 {
		tv, err := exactjson.Float(total)
		if err != nil {
			return fmt.Errorf("weft: progress total: %w", err)
		}
		members = append(members, exactjson.Field("total", tv))
	}
	if message != "" {
		members = append(members, exactjson.Field("message", exactjson.String(message)))
	}
	return out.notify("notifications/progress", exactjson.Object(members...))
}

// LogLevel is a log severity of MCP logging (RFC 5424 names).
type LogLevel string

// The log levels, lowest first.
const (
	LevelDebug     LogLevel = "debug"
	LevelInfo      LogLevel = "info"
	LevelNotice    LogLevel = "notice"
	LevelWarning   LogLevel = "warning"
	LevelError     LogLevel = "error"
	LevelCritical  LogLevel = "critical"
	LevelAlert     LogLevel = "alert"
	LevelEmergency LogLevel = "emergency"
)

var logLevels = [...]LogLevel{LevelDebug, LevelInfo, LevelNotice, LevelWarning, LevelError, LevelCritical, LevelAlert, LevelEmergency}

func levelIndex(l LogLevel) int {
	for i, v := range logLevels {
		if v == l {
			return i
		}
	}
	return -1
}

// Log sends notifications/message on this request's response stream when the
// client asked for logging at this level or below it (with the
// io.modelcontextprotocol/logLevel _meta key). It reports whether the message
// was sent. Never log secrets.
func (r *Request) Log(level LogLevel, logger string, data exactjson.Value) (bool, error) {
	li := levelIndex(level)
	if li < 0 {
		return false, fmt.Errorf("weft: unknown log level %q", level)
	}
	r.mu.Lock()
	send := r.logLevel >= 0 && li >= r.logLevel && !r.holdOutput && r.out != nil && r.out.canStream()
	out := r.out
	r.mu.Unlock()
	if !send {
		return false, nil
	}
	members := []exactjson.Member{exactjson.Field("level", exactjson.String(string(level)))}
	if logger != "" {
		members = append(members, exactjson.Field("logger", exactjson.String(logger)))
	}
	members = append(members, exactjson.Field("data", data))
	return true, out.notify("notifications/message", exactjson.Object(members...))
}
