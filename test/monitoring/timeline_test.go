package monitoring_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/util/teststorage"
)

// Prometheus's defaults for a scrape and a rule group.
const (
	scrapeInterval = 30 * time.Second
	evalInterval   = 30 * time.Second
)

// timeline is a Prometheus TSDB filled with real scrapes, each written at a
// time of the test's choosing: a fault the test keeps in place is scraped
// for real and written once per scrape interval for as long as an alert's
// `for` needs, which the test cannot wait out. Prometheus's own rule
// engine then evaluates the chart's alerts over it.
type timeline struct {
	t  *testing.T
	db *teststorage.TestStorage
	t0 time.Time
}

func newTimeline(t *testing.T) *timeline {
	return &timeline{t: t, db: teststorage.New(t), t0: time.Unix(1_800_000_000, 0)}
}

// record writes one scrape's samples at the timeline's start plus at.
func (tl *timeline) record(at time.Duration, samples model.Vector) {
	tl.t.Helper()
	app := tl.db.Appender(context.Background())
	ts := tl.t0.Add(at).UnixMilli()
	for _, s := range samples {
		b := labels.NewBuilder(labels.EmptyLabels())
		for k, v := range s.Metric {
			b.Set(string(k), string(v))
		}
		if _, err := app.Append(0, b.Labels(), ts, float64(s.Value)); err != nil {
			tl.t.Fatalf("appending %v: %v", s.Metric, err)
		}
	}
	if err := app.Commit(); err != nil {
		tl.t.Fatal(err)
	}
}

// hold writes the same scrape every scrape interval in [from, to): the
// state it shows lasted that long.
func (tl *timeline) hold(from, to time.Duration, samples model.Vector) {
	tl.t.Helper()
	for at := from; at < to; at += scrapeInterval {
		tl.record(at, samples)
	}
}

// firing evaluates the alert a every evaluation interval from the start to
// to, as Prometheus's rule manager would, and reports the offset at which
// it first fired.
func (tl *timeline) firing(a query, to time.Duration) (time.Duration, bool) {
	tl.t.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(a.expr)
	if err != nil {
		tl.t.Fatalf("%s: %v", a.where, err)
	}
	var hold time.Duration
	if a.hold != "" {
		d, err := model.ParseDuration(a.hold)
		if err != nil {
			tl.t.Fatalf("%s: for %q: %v", a.where, a.hold, err)
		}
		hold = time.Duration(d)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rule := rules.NewAlertingRule(a.alert, expr, hold, 0, labels.EmptyLabels(), labels.EmptyLabels(), labels.EmptyLabels(), "", true, quiet)
	engine := promql.NewEngine(promql.EngineOpts{Logger: quiet, MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	query := rules.EngineQueryFunc(engine, tl.db)
	for at := time.Duration(0); at <= to; at += evalInterval {
		if _, err := rule.Eval(context.Background(), 0, tl.t0.Add(at), query, nil, 0); err != nil {
			tl.t.Fatalf("%s at +%v: %v", a.where, at, err)
		}
		for _, active := range rule.ActiveAlerts() {
			if active.State == rules.StateFiring {
				return at, true
			}
		}
	}
	return 0, false
}

// target is what Prometheus adds to a scrape's samples (honorLabels, as the
// chart's ServiceMonitor sets: a sample's own namespace label wins).
type target struct {
	job, namespace, instance string
}

// samples labels families as Prometheus would for t, with its up series.
func (t target) samples(fams []*dto.MetricFamily, up bool) (model.Vector, error) {
	vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, fams...)
	if err != nil {
		return nil, err
	}
	upValue := model.SampleValue(0)
	if up {
		upValue = 1
	}
	vec = append(vec, &model.Sample{Metric: model.Metric{model.MetricNameLabel: "up"}, Value: upValue})
	for _, s := range vec {
		s.Metric["job"], s.Metric["instance"] = model.LabelValue(t.job), model.LabelValue(t.instance)
		if _, ok := s.Metric["namespace"]; !ok {
			s.Metric["namespace"] = model.LabelValue(t.namespace)
		}
	}
	return vec, nil
}

// scrape GETs url's metrics; a failed scrape is an up of 0 and no other
// sample, as in Prometheus.
func (t target) scrape(ctx context.Context, url string) model.Vector {
	fams, err := fetchFamilies(ctx, url)
	if err != nil {
		vec, _ := t.samples(nil, false)
		return vec
	}
	vec, err := t.samples(fams, true)
	if err != nil {
		vec, _ = t.samples(nil, false)
	}
	return vec
}

func fetchFamilies(ctx context.Context, url string) ([]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := make([]*dto.MetricFamily, 0, len(byName))
	for _, f := range byName {
		out = append(out, f)
	}
	return out, nil
}

// value is the value of the first sample of vec named name whose labels
// include match, or -1.
func value(vec model.Vector, name string, match map[string]string) float64 {
	for _, s := range vec {
		if string(s.Metric[model.MetricNameLabel]) != name {
			continue
		}
		ok := true
		for k, v := range match {
			if string(s.Metric[model.LabelName(k)]) != v {
				ok = false
			}
		}
		if ok {
			return float64(s.Value)
		}
	}
	return -1
}
