package monitoring_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// repoRoot is the repository: this module lives in test/monitoring.
const repoRoot = "../.."

// query is one PromQL expression of the chart and where it comes from.
type query struct {
	where   string // "alert X", "dashboard panel \"T\"", ...
	expr    string
	runbook *string // an alert's runbook_url annotation (nil: not an alert)
	alert   string  // the alert's name (empty: not an alert)
	hold    string  // the alert's `for` (empty: none)
}

// chartQueries renders the chart with its PrometheusRule (every alert: the
// manager's need the ServiceMonitor, and leader election is on by
// default) and its dashboard, and returns their expressions.
func chartQueries(t *testing.T) []query {
	t.Helper()
	helm := filepath.Join(repoRoot, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%s not found (%v): run `make tools` (or hack/install-tools.sh helm)", helm, err)
	}
	cmd := exec.CommandContext(t.Context(), helm, "template", "redlease", filepath.Join(repoRoot, "charts", "redlease"), //nolint:gosec // G204: bin/helm, built from source by make tools
		"--namespace", "redlease-system",
		"--set", "prometheusRule.enabled=true,serviceMonitor.enabled=true,grafanaDashboard.enabled=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	var out []query
	for _, doc := range strings.Split(stdout.String(), "\n---\n") {
		qs, err := documentQueries([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, qs...)
	}
	return out
}

// object is what this test reads of a rendered document.
type object struct {
	Kind string `json:"kind"`
	Spec struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Record      string            `json:"record"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
	Data map[string]string `json:"data"`
}

// documentQueries are the expressions of one rendered document: a
// PrometheusRule's rules, a dashboard ConfigMap's queries.
func documentQueries(doc []byte) ([]query, error) {
	var o object
	if err := yaml.Unmarshal(doc, &o); err != nil {
		return nil, err
	}
	var out []query
	switch o.Kind {
	case "PrometheusRule":
		for _, g := range o.Spec.Groups {
			for _, r := range g.Rules {
				q := query{where: "rule " + r.Record, expr: r.Expr}
				if r.Alert != "" {
					url := r.Annotations["runbook_url"]
					q.where, q.runbook, q.alert, q.hold = "alert "+r.Alert, &url, r.Alert, r.For
				}
				out = append(out, q)
			}
		}
	case "ConfigMap":
		for name, data := range o.Data {
			if strings.HasSuffix(name, ".json") {
				qs, err := dashboardQueries(name, []byte(data))
				if err != nil {
					return nil, err
				}
				out = append(out, qs...)
			}
		}
	}
	return out, nil
}

// panel is a dashboard panel; a collapsed row holds its panels.
type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// labelValues is Grafana's variable query label_values(SELECTOR, LABEL).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// dashboardQueries are a dashboard's panel queries and the selectors of its
// label_values variables.
func dashboardQueries(file string, data []byte) ([]query, error) {
	var dash struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", file, err)
	}
	var out []query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, query{where: fmt.Sprintf("dashboard panel %q", p.Title), expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) != nil { // a plain string: the data source type
			continue
		}
		if m := labelValues.FindStringSubmatch(q.Query); m != nil {
			out = append(out, query{where: "dashboard variable " + v.Name, expr: m[1]})
		}
	}
	return out, nil
}
