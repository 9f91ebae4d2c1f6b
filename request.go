package weft

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/weftmcp/weft/exactjson"
)

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
// request, with the same *Request the handler sees. A subscriptions/listen
// stream detached from its HTTP/1.1 request finishes (OutcomeComplete) when
// it is acknowledged; see docs/architecture.md.
type Observer interface {
	RequestStarted(ctx context.Context, req *Request)
	RequestFinished(ctx context.Context, req *Request, outcome Outcome, err error)
}

// Request is the context of one admitted MCP request. The same *Request
// reaches the [Observer], every [Middleware] and the handler.
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

	srv       *Server
	transport string
	b         boundFields
	op        *operation
	retry     *retryState // nil on a first call
	prep      *prepared   // the verified target of an operation request (call.go)
	uriParams map[string]string
	task      *TaskInfo

	progressToken exactjson.Value
	logLevel      int // index into logLevels; -1 = no logging requested
	out           stream
	early         earlyReplier // the transport's early reply (dispatch.go)
	remoteAddr    string
	era           era // the client's protocol era
	// conn is an era adapter's own state of the request (eraCall.conn),
	// nil for 2026-07-28 requests.
	conn any
	// charged marks a later round of a call an era adapter runs in rounds:
	// the client's request was charged to the rate limiter once.
	charged bool

	mu           sync.Mutex
	lastProgress float64
	progressSent bool
	holdOutput   bool // an unmet conditional capability keeps the response uncommitted
	// argsChecked: this call's arguments passed (or, on a verified retry,
	// provably already passed) the tool's input schema.
	argsChecked bool
}

// boundFields are what request state is bound to, as the request arrived:
// a middleware or handler that changes the exported fields of a Request
// changes neither what its state is sealed to nor what a retry's state is
// verified against.
type boundFields struct {
	set                                  bool
	endpoint, version, method, partition string
	id                                   ID
	params                               exactjson.Value
}

// retryState is what a retry carries: its input responses and its request
// state. Only retries have one, so a first call's Request is smaller.
type retryState struct {
	inputResponses InputResponses
	appState       string
	hasAppState    bool
	fwState        exactjson.Value
	hasFwState     bool
	stateMeta      *stateMeta // &meta once the state is verified
	meta           stateMeta  // decoded in place: no allocation of its own
}

// retried returns the request's retry state, making it on first use.
func (r *Request) retried() *retryState {
	if r.retry == nil {
		r.retry = &retryState{}
	}
	return r.retry
}

// stateMeta returns the metadata of verified framework state, or nil.
func (r *Request) stateMeta() *stateMeta {
	if r.retry == nil {
		return nil
	}
	return r.retry.stateMeta
}

// bound returns the bound fields, taking them from the exported fields the
// first time (the dispatcher does so before any middleware runs).
func (r *Request) bound() *boundFields {
	if !r.b.set {
		r.b = boundFields{set: true, endpoint: r.Endpoint, version: r.ProtocolVersion, method: r.Method,
			partition: r.Identity.Partition, id: r.ID, params: r.Params}
	}
	return &r.b
}

// argsVerified reports whether verified request state proves that these
// exact arguments already passed op's current input schema: the binding
// covers the arguments, and the state records the fingerprint of the schema
// that validated them when it was emitted.
func (r *Request) argsVerified(op *operation) bool {
	m := r.stateMeta()
	return m != nil && m.Args != "" && op != nil && m.Args == op.argsFingerprint &&
		r.Params == r.bound().params // the handler sees the arguments the state was verified with
}

// Transport names how the request arrived: "http", "stdio", or "task" for
// the steps of durable tasks.
func (r *Request) Transport() string { return r.transport }

// Server returns the server serving the request.
func (r *Request) Server() *Server { return r.srv }

// Caller is the key Weft's fair shares count the request's caller by: the
// partition, else the principal, else, for an anonymous caller, the
// transport's identity (the remote host over HTTP, IPv6 by /64; "stdio" for
// a stdio connection). Components that share a capacity among callers (the
// gateway's upstream processes, say) use it to agree with the server's own
// shares (docs/security.md, "Fair shares among callers").
func (r *Request) Caller() string { return fairKeyOf(r.Identity, r.remoteAddr).String() }

// InputResponses returns the keyed responses of a retry (empty on a first call).
func (r *Request) InputResponses() InputResponses {
	if r.retry == nil {
		return InputResponses{}
	}
	return r.retry.inputResponses
}

// ApplicationState returns the application-protected state of a retry. It is
// present only on a retry of an operation declared with [StateApplication].
func (r *Request) ApplicationState() (string, bool) {
	if r.retry == nil {
		return "", false
	}
	return r.retry.appState, r.retry.hasAppState
}

// The verified framework-protected state of a retry is read with the
// generic [FrameworkState].

// Round returns the round number of verified framework state (1 after the
// first input_required), or 0 on a first call.
func (r *Request) Round() int {
	m := r.stateMeta()
	if m == nil {
		return 0
	}
	return m.Round
}

// URIParams returns the variables matched from a resource template.
func (r *Request) URIParams() map[string]string { return r.uriParams }

// Arguments returns params.arguments (tools/call, prompts/get), or null.
func (r *Request) Arguments() exactjson.Value {
	a, _ := r.Params.Get("arguments")
	return a
}

// ArgumentsAs decodes params.arguments into a T (github.com/go-json-experiment/json,
// as the generic [AddTool] decodes its argument type), for untyped handlers
// that want Go values rather than JSON. Absent arguments decode as {}.
func ArgumentsAs[T any](req *Request) (T, error) {
	a := req.Arguments()
	if a.Kind() == exactjson.KindNull {
		a = exactjson.Object()
	}
	v, err := exactjson.Decode[T](a)
	if err != nil {
		return v, fmt.Errorf("weft: arguments: %w", err)
	}
	return v, nil
}

// ParamsAs decodes the request's params into a T, for methods registered
// with [Server.HandleMethod]. Absent params decode as {}.
func ParamsAs[T any](req *Request) (T, error) {
	p := req.Params
	if p.Kind() == exactjson.KindNull {
		p = exactjson.Object()
	}
	v, err := exactjson.Decode[T](p)
	if err != nil {
		return v, fmt.Errorf("weft: params: %w", err)
	}
	return v, nil
}

// ClientSupports reports whether the client declared, on this request, the
// capability that the declared input needs (for a [SamplingInput] made
// WithTools, sampling.tools).
func (r *Request) ClientSupports(in Input) bool {
	return in != nil && clientSupports(r.ClientCapabilities, in.input().decl.kind)
}

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
	return r.progressToken.Kind() != exactjson.KindNull && r.streamsLocked()
}

// streamsLocked reports whether a notification can go on this request's
// response stream now: output is not held back and the response can
// stream (r.mu held).
func (r *Request) streamsLocked() bool {
	return !r.holdOutput && r.out != nil && r.out.canStream()
}

// Progress sends notifications/progress for this request. Progress must
// increase with each call; total is omitted when 0. The first progress
// notification on HTTP switches the response to an SSE stream.
func (r *Request) Progress(progress, total float64, message string) error {
	r.mu.Lock()
	if r.progressToken.Kind() == exactjson.KindNull || !r.streamsLocked() {
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
	return out.send(frame{method: "notifications/progress", params: exactjson.Object(members...)})
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

// ElicitationComplete tells a client of the 2025-11-25 era that the
// out-of-band interaction of the URL elicitation with elicitationID id has
// completed (notifications/elicitation/complete, on this request's
// response stream). 2026-07-28 has no such notification (a client learns
// the outcome by retrying), so for its requests, or when the response
// cannot stream, nothing is sent and it reports false.
func (r *Request) ElicitationComplete(id string) (bool, error) {
	r.mu.Lock()
	send := r.era.completesElicitations() && id != "" && r.streamsLocked()
	out := r.out
	r.mu.Unlock()
	if !send {
		return false, nil
	}
	return true, out.send(frame{method: "notifications/elicitation/complete",
		params: exactjson.Object(exactjson.Field("elicitationId", exactjson.String(id)))})
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
	send := r.logLevel >= 0 && li >= r.logLevel && r.streamsLocked()
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
	return true, out.send(frame{method: "notifications/message", params: exactjson.Object(members...)})
}
