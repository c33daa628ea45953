package monitoring_test

import (
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	// The manager's controllers: importing them registers, in
	// controller-runtime's registry, what the manager serves: their own
	// metrics, and through controller-runtime the reconcile, work queue,
	// leader election, client-go, Go runtime and process metrics.
	_ "github.com/redlease/redlease/controllers"
)

// prometheusOwn are the series Prometheus makes itself for every target,
// which no exporter registers.
var prometheusOwn = map[string]bool{"up": true}

// histogramSeries are the suffixes a histogram's (or summary's) series add
// to the name it is registered under.
var histogramSeries = []string{"_bucket", "_sum", "_count"}

// knownMetric: name is a series the code exposes: a metric declared in
// controllers/ or pkg/ (defined: the library's are served by the pods
// that take locks, not by the manager), one the manager's registry holds,
// or one of Prometheus's own.
func knownMetric(name string, defined map[string]bool) bool {
	if prometheusOwn[name] {
		return true
	}
	candidates := []string{name}
	for _, s := range histogramSeries {
		if base, ok := strings.CutSuffix(name, s); ok {
			candidates = append(candidates, base)
		}
	}
	for _, c := range candidates {
		if defined[c] || managerRegisters(c) {
			return true
		}
	}
	return false
}

// metricName is a metric name client_golang registers.
var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// managerRegisters: the manager's registry holds a metric named name.
// A registry does not list its collectors, and a vector without series is
// absent from what it gathers, so ask it: registering a gauge of that name
// (with a help text no real metric has) fails exactly when the name is
// taken; a gauge that registers is removed at once.
func managerRegisters(name string) bool {
	if !metricName.MatchString(name) { // Register would refuse it for that
		return false
	}
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "monitoring_test: is this name registered?"})
	if err := metrics.Registry.Register(probe); err != nil {
		return true
	}
	metrics.Registry.Unregister(probe)
	return false
}
