// Package otelinst holds the OpenTelemetry instruments of a Weft server
// (docs/operations.md lists them).
package otelinst

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// RequestBuckets are the bucket bounds, in seconds, of the latency
// histograms (the MCP semantic conventions' bounds, with finer low buckets).
var RequestBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Instruments are the OpenTelemetry instruments of docs/operations.md.
type Instruments struct {
	Requests      metric.Int64Counter
	Duration      metric.Float64Histogram
	StateOpens    metric.Int64Counter
	StateFailures metric.Int64Counter
	StateSeals    metric.Int64Counter
	TaskSteps     metric.Int64Counter
	TaskDuration  metric.Float64Histogram
	Leases        metric.Int64UpDownCounter

	KeyringInfo  metric.Int64ObservableGauge
	Verification metric.Int64ObservableGauge
	Tasks        metric.Int64ObservableGauge
	Subs         metric.Int64ObservableGauge
	Active       metric.Int64ObservableGauge
	Queued       metric.Int64ObservableGauge
}

// New creates the instruments on meter; an instrument that cannot be
// created is left nil-safe (the OpenTelemetry API returns a no-op) and its
// error joined into the result.
func New(meter metric.Meter) (*Instruments, error) {
	var m Instruments
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	m.Requests, err = meter.Int64Counter("weft.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Finished MCP requests by method, outcome, target name and JSON-RPC error code."))
	add(err)
	m.Duration, err = meter.Float64Histogram("weft.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from parsing an MCP request to its reply, by method, outcome and target name."),
		metric.WithExplicitBucketBoundaries(RequestBuckets...))
	add(err)
	m.StateOpens, err = meter.Int64Counter("weft.state.opens", metric.WithUnit("{open}"),
		metric.WithDescription("Retries that carried requestState, by state mode and result (ok or failed)."))
	add(err)
	m.StateFailures, err = meter.Int64Counter("weft.state.open.failures", metric.WithUnit("{failure}"),
		metric.WithDescription("Request state rejected on a retry, by server-side reason (never told to the client)."))
	add(err)
	m.StateSeals, err = meter.Int64Counter("weft.state.seals", metric.WithUnit("{seal}"),
		metric.WithDescription("Framework request state sealed for input_required results, by result (ok or failed)."))
	add(err)
	m.TaskSteps, err = meter.Int64Counter("weft.task.steps", metric.WithUnit("{step}"),
		metric.WithDescription("Task steps run by this instance, by tool and result."))
	add(err)
	m.TaskDuration, err = meter.Float64Histogram("weft.task.step.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of task steps run by this instance, by tool and result."),
		metric.WithExplicitBucketBoundaries(RequestBuckets...))
	add(err)
	m.Leases, err = meter.Int64UpDownCounter("weft.task.leases", metric.WithUnit("{lease}"),
		metric.WithDescription("Task steps running on this instance (leases held by its workers)."))
	add(err)
	m.KeyringInfo, err = meter.Int64ObservableGauge("weft.keyring.info",
		metric.WithDescription("1, labelled with the active key id and keyring fingerprint of the request-state protector."))
	add(err)
	m.Verification, err = meter.Int64ObservableGauge("weft.keyring.verification_keys", metric.WithUnit("{key}"),
		metric.WithDescription("Verification-only keys held by the request-state keyring."))
	add(err)
	m.Tasks, err = meter.Int64ObservableGauge("weft.tasks", metric.WithUnit("{task}"),
		metric.WithDescription("Non-terminal tasks by status, as seen on the task store's change bus."))
	add(err)
	m.Subs, err = meter.Int64ObservableGauge("weft.subscriptions.open", metric.WithUnit("{subscription}"),
		metric.WithDescription("Open subscriptions/listen streams."))
	add(err)
	m.Active, err = meter.Int64ObservableGauge("weft.requests.active", metric.WithUnit("{request}"),
		metric.WithDescription("Handlers holding a concurrency slot (at most MaxConcurrent)."))
	add(err)
	m.Queued, err = meter.Int64ObservableGauge("weft.requests.queued", metric.WithUnit("{request}"),
		metric.WithDescription("Requests waiting for a concurrency slot (at most MaxQueue)."))
	add(err)
	return &m, errors.Join(errs...)
}

// Observables are the asynchronous instruments, for the callback that
// reports them.
func (m *Instruments) Observables() []metric.Observable {
	return []metric.Observable{m.KeyringInfo, m.Verification, m.Tasks, m.Subs, m.Active, m.Queued}
}
