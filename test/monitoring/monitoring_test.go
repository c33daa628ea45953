package monitoring_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/redlease/redlease/internal/doctest"
)

// runbookPage is prometheusRule.runbookURL's default, which the chart
// renders here: docs/runbooks.md on GitHub.
const runbookPage = "https://github.com/redlease/redlease/blob/main/docs/runbooks.md"

// TestAlertsAndDashboardQueries: every alert expression of the chart's
// PrometheusRule and every query of its dashboard parses with the
// Prometheus parser, names only metrics the code registers, and every
// alert's runbook_url is a section of docs/runbooks.md.
func TestAlertsAndDashboardQueries(t *testing.T) {
	c := newChecker(t)
	queries := chartQueries(t)
	alerts := 0
	for _, q := range queries {
		if q.runbook != nil {
			alerts++
		}
		for _, problem := range c.check(q) {
			t.Errorf("%s: %s", q.where, problem)
		}
	}
	// The rendering found what it should (a changed layout finds nothing).
	if alerts < 8 || len(queries)-alerts < 20 {
		t.Errorf("%d alerts and %d dashboard queries found: has the chart's layout changed?", alerts, len(queries)-alerts)
	}
}

// TestCheckerCatches: the checks fail on what they are for, so that the
// test above passing means something.
func TestCheckerCatches(t *testing.T) {
	c := newChecker(t)
	none, missing := "", runbookPage+"#no-such-section"
	good := runbookPage + "#redleaselocknotready"
	for _, tc := range []struct {
		name string
		q    query
		want string // in the one problem found; empty: none
	}{
		{"a good alert", query{expr: `max by (namespace, name) (redlease_controller_lock_ready) == 0`, runbook: &good}, ""},
		{"a good query", query{expr: `sum(rate(workqueue_retries_total{name=~"a|b"}[5m]))`}, ""},
		{"a histogram's series", query{expr: `histogram_quantile(0.9, sum by (le) (rate(redlease_lock_acquire_duration_seconds_bucket[5m])))`}, ""},
		{"a parse error", query{expr: `sum by (namespace (redlease_lock_leases_held)`}, "does not parse"},
		{"a Grafana interval left in", query{expr: `rate(redlease_lock_renewals_total[$__range_s])`}, "does not parse"},
		{"a renamed metric", query{expr: `sum(redlease_lock_leases_hold)`}, "redlease_lock_leases_hold"},
		{"a controller-runtime name that is not", query{expr: `rate(controller_runtime_reconciles_total[5m])`}, "controller_runtime_reconciles_total"},
		{"no runbook", query{expr: `up == 0`, runbook: &none}, "runbook_url"},
		{"a runbook section that does not exist", query{expr: `up == 0`, runbook: &missing}, "no-such-section"},
		{"a runbook elsewhere", query{expr: `up == 0`, runbook: new("https://example.com/runbooks.md#redleaselocknotready")}, "runbook_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := c.check(tc.q)
			switch {
			case tc.want == "" && len(problems) != 0:
				t.Errorf("%s: %v, want no problem", tc.q.expr, problems)
			case tc.want != "" && (len(problems) != 1 || !strings.Contains(problems[0], tc.want)):
				t.Errorf("%s: %v, want one problem naming %q", tc.q.expr, problems, tc.want)
			}
		})
	}
}

// checker holds what queries are checked against.
type checker struct {
	defined map[string]bool // the redlease_* metrics the code declares
	anchors map[string]bool // the sections of docs/runbooks.md
}

func newChecker(t *testing.T) *checker {
	t.Helper()
	defined, err := doctest.DefinedMetrics(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(repoRoot, "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	return &checker{defined: defined, anchors: anchors(string(page))}
}

// grafanaInterval is a Grafana interval variable, which Grafana replaces
// before Prometheus sees the query.
var grafanaInterval = regexp.MustCompile(`\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}`)

// check returns what is wrong with q: a parse error, a metric the code
// does not register, an alert's runbook_url that is not a section of
// docs/runbooks.md.
func (c *checker) check(q query) []string {
	var problems []string
	if q.runbook != nil {
		if p := c.checkRunbook(*q.runbook); p != "" {
			problems = append(problems, p)
		}
	}
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaInterval.ReplaceAllString(q.expr, "5m"))
	if err != nil {
		return append(problems, fmt.Sprintf("%q does not parse: %v", q.expr, err))
	}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok && !knownMetric(vs.Name, c.defined) {
			problems = append(problems, fmt.Sprintf("%q selects %q, which the code does not register (renamed metric?)", q.expr, vs.Name))
		}
		return nil
	})
	return problems
}

// checkRunbook: url is runbookPage#<a section of docs/runbooks.md>.
func (c *checker) checkRunbook(url string) string {
	page, anchor, _ := strings.Cut(url, "#")
	switch {
	case page != runbookPage:
		return fmt.Sprintf("runbook_url %q is not a section of %s", url, runbookPage)
	case !c.anchors[anchor]:
		return fmt.Sprintf("runbook_url %q: docs/runbooks.md has no section #%s", url, anchor)
	}
	return ""
}

var heading = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)

// anchors are the anchors GitHub gives a Markdown page's headings: lower
// case, punctuation dropped, spaces as hyphens.
func anchors(page string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(page, -1) {
		slug := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z':
				return r
			}
			return -1
		}, strings.ToLower(m[1]))
		out[slug] = true
	}
	return out
}
