package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftmcp/weft/metrics"
)

func get(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	defer ts.Close()
	res, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("HTTP %d %v", res.StatusCode, err)
	}
	return string(b)
}

func TestNewPrometheusNames(t *testing.T) {
	mp, h, err := metrics.NewPrometheus(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Shutdown(context.Background())
	meter := mp.Meter("test")
	c, _ := meter.Int64Counter("weft.requests", metric.WithUnit("{request}"))
	c.Add(context.Background(), 3, metric.WithAttributes(attribute.String("method", "tools/call")))
	hist, _ := meter.Float64Histogram("weft.request.duration", metric.WithUnit("s"))
	hist.Record(context.Background(), 0.2)
	body := get(t, h)
	for _, want := range []string{
		`weft_requests_total{method="tools/call"} 3`,
		`weft_request_duration_seconds_count 1`,
		`go_goroutines `,            // the Go collector of a new registry
		`process_cpu_seconds_total`, // and the process collector
	} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "otel_scope_name") {
		t.Errorf("scope labels are not wanted:\n%s", body)
	}
}

func TestNewPrometheusOwnRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	mp, h, err := metrics.NewPrometheus(reg)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := mp.Meter("test").Int64Gauge("weft.subscriptions.open")
	g.Record(context.Background(), 2)
	if body := get(t, h); !strings.Contains(body, "weft_subscriptions_open 2") || strings.Contains(body, "go_goroutines") {
		t.Errorf("exposition:\n%s", body)
	}
}

type registererOnly struct{ prometheus.Registerer }

func TestNewPrometheusNeedsGatherer(t *testing.T) {
	if _, _, err := metrics.NewPrometheus(registererOnly{prometheus.NewRegistry()}); err == nil {
		t.Error("a registerer that cannot be gathered was accepted")
	}
}
