// Package metrics exposes a Weft server's OpenTelemetry metrics for
// Prometheus.
//
// NewPrometheus returns a MeterProvider to set as weft.Options.MeterProvider
// and the HTTP handler that serves the registry in the Prometheus text
// format. Mount the handler on an internal listener only (the weft command
// serves it at /metrics on its token-protected, loopback-only admin
// listener). docs/operations.md lists every metric, what it means and what to
// alert on.
//
//	mp, h, err := metrics.NewPrometheus(nil)
//	srv, err := weft.NewServer(impl, &weft.Options{MeterProvider: mp})
//	if err != nil {
//		log.Fatal(err)
//	}
//	adminMux.Handle("/metrics", h)
package metrics

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// NewPrometheus wires an OpenTelemetry MeterProvider to a Prometheus
// registry and returns the provider and a handler serving the registry.
//
// reg is where the metrics are registered and what the handler serves. It
// must also be a prometheus.Gatherer (a *prometheus.Registry, or
// prometheus.DefaultRegisterer, which is served from
// prometheus.DefaultGatherer). When reg is nil, a new registry is made with
// the Go runtime and process collectors.
//
// Metric names follow the Prometheus conventions: dots become underscores,
// counters end in _total and the seconds unit adds _seconds, so
// weft.request.duration is weft_request_duration_seconds.
//
// The provider is an *sdkmetric.MeterProvider; call its Shutdown when the
// server stops if the registry outlives it.
func NewPrometheus(reg prometheus.Registerer) (*sdkmetric.MeterProvider, http.Handler, error) {
	var gatherer prometheus.Gatherer
	switch {
	case reg == nil:
		r := prometheus.NewRegistry()
		if err := r.Register(collectors.NewGoCollector()); err != nil {
			return nil, nil, fmt.Errorf("metrics: register the Go collector: %w", err)
		}
		if err := r.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, nil, fmt.Errorf("metrics: register the process collector: %w", err)
		}
		reg, gatherer = r, r
	case reg == prometheus.DefaultRegisterer:
		gatherer = prometheus.DefaultGatherer
	default:
		g, ok := reg.(prometheus.Gatherer)
		if !ok {
			return nil, nil, errors.New("metrics: the registerer must also be a prometheus.Gatherer (use a *prometheus.Registry)")
		}
		gatherer = g
	}
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	h := promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return mp, h, nil
}
