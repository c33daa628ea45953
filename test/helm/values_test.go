package helm_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/redlease/redlease/internal/doctest"
)

// TestSchemaRejectsBadValues: wrong types, unknown keys and malformed values
// fail `helm template` with an error that names the value.
func TestSchemaRejectsBadValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want []string // substrings of the error
	}{
		{[]string{"--set", "replicaCount=abc"}, []string{"/replicaCount", "got string, want integer"}},
		{[]string{"--set", "replicaCount=-1"}, []string{"/replicaCount", "minimum"}},
		{[]string{"--set", "unknownKey=1"}, []string{"additional properties 'unknownKey' not allowed"}},
		{[]string{"--set", "image.tagg=v1"}, []string{"/image", "additional properties 'tagg' not allowed"}},
		{[]string{"--set", "crds.enabled=maybe"}, []string{"/crds/enabled", "want boolean"}},
		{[]string{"--set", "image.pullPolicy=Sometimes"}, []string{"/image/pullPolicy"}},
		{[]string{"--set", "controller.probeInterval=10"}, []string{"/controller/probeInterval", "want string"}},
		{[]string{"--set", "controller.probeInterval=ten"}, []string{"/controller/probeInterval"}},
		{[]string{"--set", "watchNamespaces={Bad_NS}"}, []string{"/watchNamespaces/0"}},
		{[]string{"--set", "watchNamespaces=billing"}, []string{"/watchNamespaces", "want array"}},
		{[]string{"--set", "metrics.port=70000"}, []string{"/metrics/port"}},
		{[]string{"--set", "serviceMonitor.enabled=true,serviceMonitor.intervall=1m"}, []string{"/serviceMonitor", "'intervall'"}},
		{[]string{"--set", "podDisruptionBudget.minAvailable=half"}, []string{"/podDisruptionBudget/minAvailable"}},
		{[]string{"--set", "extraEnv[0].name=A,extraEnv[0].value=2"}, []string{"/extraEnv/0/value", "want string"}},
		{[]string{"--set", "resources.requests.cpu=lots"}, []string{"/resources/requests/cpu"}},
		{[]string{"--set", "logging.encoder=xml"}, []string{"/logging/encoder"}},
		{[]string{"--set", "tests.enabled=maybe"}, []string{"/tests/enabled", "want boolean"}},
		{[]string{"--set", "tests.timeout=ten"}, []string{"/tests/timeout"}},
		{[]string{"--set", "tests.resources.limits.memory=lots"}, []string{"/tests/resources/limits/memory"}},
		{[]string{"--set", "tests.image=x"}, []string{"/tests", "additional properties 'image' not allowed"}},
		{[]string{"--set", "lockctl.image.pullPolicy=Sometimes"}, []string{"/lockctl/image/pullPolicy"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			_, err := helmTemplate(t, chartDir(t), tc.args...)
			if err == nil {
				t.Fatalf("helm template %v succeeded; want the schema to refuse it", tc.args)
			}
			msg := err.Error()
			if !strings.Contains(msg, "values don't meet the specifications of the schema") {
				t.Errorf("error is not a schema refusal:\n%s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not mention %q:\n%s", w, msg)
				}
			}
		})
	}

	// Values that look unusual but are valid are accepted.
	for _, args := range [][]string{
		{"--set", "podDisruptionBudget.minAvailable=50%"},
		{"--set", "resources.requests.cpu=0.5,resources.limits.memory=1Gi"},
		{"--set", "logging.level=2"},
		{"--set", "global.imageRegistry=example.com"},
		{"--set", "leaderElection.leaseDuration=1m30s"},
	} {
		if _, err := helmTemplate(t, chartDir(t), args...); err != nil {
			t.Errorf("valid values refused: %v", err)
		}
	}
}

type schemaNode struct {
	Type                 any                    `json:"type"`
	Description          string                 `json:"description"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties any                    `json:"additionalProperties"`
	Items                *schemaNode            `json:"items"`
}

func loadSchema(t *testing.T) *schemaNode {
	t.Helper()
	data, err := readFile(filepath.Join(chartDir(t), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s schemaNode
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	return &s
}

// TestSchemaIsClosedAndDescribed: every object the schema defines refuses
// unknown keys, and every property has a description. The one exception is
// global, shared with a parent chart whose keys this chart cannot know (its
// own global.imageRegistry is typed).
func TestSchemaIsClosedAndDescribed(t *testing.T) {
	t.Parallel()
	var walk func(path string, n *schemaNode)
	walk = func(path string, n *schemaNode) {
		if n.Properties != nil && n.AdditionalProperties != false && path != ".global" {
			t.Errorf("schema %s: properties without additionalProperties: false", path)
		}
		for k, p := range n.Properties {
			if p.Description == "" {
				t.Errorf("schema %s.%s has no description", path, k)
			}
			walk(path+"."+k, p)
		}
		if n.Items != nil {
			walk(path+"[]", n.Items)
		}
	}
	walk("", loadSchema(t))
}

var keyLine = regexp.MustCompile(`^( *)([A-Za-z_][A-Za-z0-9_]*):`)

// TestValuesDocumented: in values.yaml, every key the schema defines (down
// to the leaves the chart itself reads, not inside free-form Kubernetes
// objects) has a comment right above it, and appears in the schema.
func TestValuesDocumented(t *testing.T) {
	t.Parallel()
	data, err := readFile(filepath.Join(chartDir(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	schema := loadSchema(t)
	type frame struct {
		indent int
		node   *schemaNode // nil: inside a free-form object
	}
	stack := []frame{{-1, schema}}
	lines := strings.Split(string(data), "\n")
	documented := 0
	for i, line := range lines {
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent, key := len(m[1]), m[2]
		for len(stack) > 1 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		parent := stack[len(stack)-1].node
		var node *schemaNode
		if parent != nil && parent.Properties != nil {
			node = parent.Properties[key]
			if node == nil {
				t.Errorf("values.yaml:%d: %q is not in values.schema.json", i+1, key)
			}
			prev := ""
			if i > 0 {
				prev = strings.TrimSpace(lines[i-1])
			}
			if !strings.HasPrefix(prev, "#") {
				t.Errorf("values.yaml:%d: %q has no comment above it", i+1, key)
			} else {
				documented++
			}
		}
		stack = append(stack, frame{indent, node})
	}
	if documented < 40 {
		t.Errorf("only %d documented values found: has values.yaml's layout changed?", documented)
	}
}

// TestGrafanaDashboard: off by default; on, a ConfigMap with the sidecar
// label holds a dashboard whose queries cover the lease and controller
// metrics, and every redlease_* metric it queries exists in the code.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	if m := render(t); len(m.ofKind("ConfigMap")) != 0 {
		t.Fatal("a dashboard ConfigMap by default")
	}
	m := render(t, "--set", "grafanaDashboard.enabled=true")
	cm := m.must("ConfigMap", namespace, dashboardCM)
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard labels = %v, want grafana_dashboard: \"1\"", cm.GetLabels())
	}
	raw, _, _ := unstructured.NestedString(cm.Object, "data", "redlease.json")
	var dash struct {
		UID    string `json:"uid"`
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(raw), &dash); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Error("the dashboard has no uid or title")
	}
	var exprs []string
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	all := strings.Join(exprs, "\n")
	for _, want := range []string{
		"redlease_lock_leases_held",                                          // locks held
		"redlease_lock_acquire_duration_seconds_bucket",                      // acquire/wait latency
		"redlease_lock_leases_lost_total",                                    // lease losses
		`redlease_lock_renewals_total{namespace=~"$namespace",result!="ok"}`, // renew failures
		"redlease_controller_endpoint_probes_total",                          // endpoint health
		"redlease_controller_locks",
		"redlease_controller_lock_ready", // per lock
		"redlease_controller_lock_holder_since_timestamp_seconds",
		"controller_runtime_reconcile_total",
		"controller_runtime_reconcile_time_seconds_bucket",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no dashboard query uses %s", want)
		}
	}
	// The reconcile panels cover the three controllers, not one.
	for _, e := range exprs {
		if strings.Contains(e, "controller_runtime_") || strings.Contains(e, "workqueue_") {
			if !strings.Contains(e, `=~"`+managerControllers+`"`) {
				t.Errorf("the dashboard query %s does not select the three controllers (%s)", e, managerControllers)
			}
		}
	}
	defined := definedMetrics(t)
	for _, name := range regexp.MustCompile(`redlease_[a-z_]+`).FindAllString(all, -1) {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
		if !defined[base] {
			t.Errorf("the dashboard queries %s, which no Go code defines (renamed metric?)", name)
		}
	}

	m = render(t, "--set", "grafanaDashboard.enabled=true,grafanaDashboard.namespace=monitoring,grafanaDashboard.annotations.grafana_folder=Redis")
	cm = m.must("ConfigMap", "monitoring", dashboardCM)
	if cm.GetAnnotations()["grafana_folder"] != "Redis" {
		t.Errorf("annotations = %v", cm.GetAnnotations())
	}
}

// definedMetrics are the redlease_* metrics the code declares.
func definedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	m, err := doctest.DefinedMetrics(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestNotes renders NOTES.txt (helm template does not print it, and
// `helm install --dry-run` needs a cluster) through a copy of the chart that
// renders it into a ConfigMap, and checks it says what to do next.
func TestNotes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "redlease")
	if err := os.CopyFS(dir, os.DirFS(chartDir(t))); err != nil {
		t.Fatal(err)
	}
	notes, err := readFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "files", "notes.txt"), notes, 0o600); err != nil {
		t.Fatal(err)
	}
	wrapper := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: {{ tpl (.Files.Get \"files/notes.txt\") . | quote }}\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "zz-notes.yaml"), []byte(wrapper), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{
			"kubectl -n redlease-system rollout status deployment/redlease-controller-manager",
			"kind: DistributedLock", "kubectl get dlock",
			"ghcr.io/redlease/lockctl:" + chartAppVersion(t), `"/lockctl", "install"`, "lockctl run --lock",
			"make image", "helm uninstall` keeps the three CRDs",
			"helm test redlease -n redlease-system",
		}},
		{[]string{"--set", "watchNamespaces={billing},crds.enabled=false,crds.keep=false"}, []string{
			"namespace: billing", "install the three CRDs yourself",
			"podRole.create renders that Role",
		}},
		{[]string{"--set", "podRole.create=true,podRole.namespaces={billing,reports},podRole.secretNames={redlease-lock-x},podRole.serviceAccounts={settle}"}, []string{
			"Role redlease-lock-user in billing, reports has exactly that, bound to settle.",
		}},
		{[]string{"--set", "quickstart.enabled=true"}, []string{
			"ClusterLockStore quickstart on it", "storeRef: {kind: ClusterLockStore, name: quickstart}",
			"kubectl delete clusterlockstore quickstart` before an",
		}},
		{[]string{"--set", "global.imageRegistry=mirror.example:5000"}, []string{
			"The image is mirror.example:5000/redlease/manager:" + chartAppVersion(t),
			"image: mirror.example:5000/redlease/lockctl:" + chartAppVersion(t),
		}},
	} {
		out, err := helmTemplate(t, dir, append(tc.args, "--show-only", "templates/zz-notes.yaml")...)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := parseDocs(out)
		if err != nil || len(objs) != 1 {
			t.Fatalf("rendering NOTES.txt: %v", err)
		}
		text, _, _ := unstructured.NestedString(objs[0].Object, "data", "notes")
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("NOTES.txt with %v does not say %q:\n%s", tc.args, w, text)
			}
		}
		if strings.Contains(text, "<no value>") {
			t.Errorf("NOTES.txt renders <no value>:\n%s", text)
		}
	}
}

// TestLintStrict: `helm lint --strict` (what `make helm-lint` runs) passes
// with the default values and every ci/*-values.yaml (each new value is
// set in one of them).
func TestLintStrict(t *testing.T) {
	t.Parallel()
	sets, _ := filepath.Glob(filepath.Join(chartDir(t), "ci", "*-values.yaml"))
	for _, args := range append([][]string{nil}, func() (out [][]string) {
		for _, f := range sets {
			out = append(out, []string{"-f", f})
		}
		return out
	}()...) {
		cmd := exec.CommandContext(t.Context(), helmBin(t), append([]string{"lint", "--strict", chartDir(t)}, args...)...) //nolint:gosec // G204: bin/helm, built from source by make tools
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("helm lint --strict %v: %v\n%s", args, err, out)
		}
	}
}

// TestLintValueSets: every ci/*-values.yaml (the `make helm-lint` sets)
// renders and parses.
func TestLintValueSets(t *testing.T) {
	t.Parallel()
	sets, _ := filepath.Glob(filepath.Join(chartDir(t), "ci", "*-values.yaml"))
	if len(sets) == 0 {
		t.Fatal("no charts/redlease/ci/*-values.yaml")
	}
	for _, f := range sets {
		m := render(t, "-f", f)
		if !slices.ContainsFunc(m.objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Deployment" }) {
			t.Errorf("%s: no Deployment", filepath.Base(f))
		}
		for _, o := range m.objs {
			checkTyped(t, o)
		}
	}
}
