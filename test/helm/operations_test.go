package helm_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestKubeVersion: Chart.yaml states the Kubernetes versions the chart
// needs, and Helm refuses older ones.
func TestKubeVersion(t *testing.T) {
	t.Parallel()
	if v, _ := readYAML(t, "charts/redlease/Chart.yaml")["kubeVersion"].(string); v != ">= 1.30.0-0" {
		t.Errorf("Chart.yaml kubeVersion = %q, want \">= 1.30.0-0\"", v)
	}
	if _, err := helmTemplate(t, chartDir(t), "--kube-version", "1.29.0"); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
		t.Errorf("helm template for Kubernetes 1.29: err = %v, want a kubeVersion refusal", err)
	}
	render(t, "--kube-version", "1.30.0")
}

// TestCommonLabels: commonLabels land on every object, and cannot replace
// the chart's own labels (selectors depend on them).
func TestCommonLabels(t *testing.T) {
	t.Parallel()
	m := render(t, "--set", "commonLabels.team=payments", "--set", "commonLabels.app\\.kubernetes\\.io/name=other",
		"--set", "prometheusRule.enabled=true,networkPolicy.enabled=true,serviceMonitor.enabled=true,grafanaDashboard.enabled=true")
	for _, o := range m.objs {
		l := o.GetLabels()
		if l["team"] != "payments" {
			t.Errorf("%s %s has no commonLabels: %v", o.GetKind(), o.GetName(), l)
		}
		if o.GetKind() != "CustomResourceDefinition" && l["app.kubernetes.io/name"] != "redlease" {
			t.Errorf("%s %s: commonLabels replaced app.kubernetes.io/name: %v", o.GetKind(), o.GetName(), l)
		}
	}
	if l := deployment(t, m).Spec.Template.Labels; l["team"] != "payments" {
		t.Errorf("the manager pods lack commonLabels: %v", l)
	}
}

// TestExtraVolumes: extraVolumes and extraVolumeMounts reach the manager's
// pod and container, which stay restricted.
func TestExtraVolumes(t *testing.T) {
	t.Parallel()
	m := render(t, "--set", "extraVolumes[0].name=ca,extraVolumes[0].configMap.name=redis-ca",
		"--set", "extraVolumeMounts[0].name=ca,extraVolumeMounts[0].mountPath=/etc/redis-ca,extraVolumeMounts[0].readOnly=true")
	d := deployment(t, m)
	c := manager(t, d)
	if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "ca" && v.ConfigMap != nil }) {
		t.Errorf("volumes = %+v, want the extra ConfigMap volume", d.Spec.Template.Spec.Volumes)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.Name == "ca" && v.MountPath == "/etc/redis-ca" && v.ReadOnly }) {
		t.Errorf("volumeMounts = %+v, want the extra mount", c.VolumeMounts)
	}
	checkRestricted(t, d)
	if d := deployment(t, render(t)); len(d.Spec.Template.Spec.Volumes) != 0 || len(manager(t, d).VolumeMounts) != 0 {
		t.Error("volumes rendered by default")
	}
}

// TestPrometheusRule: off by default; on, the alerts, each with a
// severity and a runbook_url under prometheusRule.runbookURL, on metrics
// the code defines (controller-runtime's own aside; test/monitoring
// parses every expression); the lease-loss alert always critical.
func TestPrometheusRule(t *testing.T) {
	t.Parallel()
	if m := render(t); len(m.ofKind("PrometheusRule")) != 0 {
		t.Fatal("a PrometheusRule by default")
	}
	m := render(t, "--set", "prometheusRule.enabled=true,prometheusRule.labels.release=prom,prometheusRule.notReadyFor=30m,prometheusRule.severity=critical")
	pr := m.must("PrometheusRule", namespace, managerName)
	if pr.GetAPIVersion() != "monitoring.coreos.com/v1" || pr.GetLabels()["release"] != "prom" {
		t.Errorf("PrometheusRule %s labels %v", pr.GetAPIVersion(), pr.GetLabels())
	}
	alerts := map[string]map[string]any{}
	for _, rule := range ruleList(t, m) {
		alerts[rule["alert"].(string)] = rule
	}
	for _, want := range []string{"RedleaseLockNotReady", "RedleaseStoreNotReady", "RedleaseUnsafeRedisSettings", "RedleaseLeasesLost", "RedleaseFenceFloorRaised", "RedleaseReconcileErrors"} {
		if alerts[want] == nil {
			t.Errorf("no alert %s in %v", want, alerts)
		}
	}
	if a := alerts["RedleaseLockNotReady"]; a != nil && (a["for"] != "30m" || a["labels"].(map[string]any)["severity"] != "critical" ||
		!strings.Contains(a["expr"].(string), "redlease_controller_lock_ready")) {
		t.Errorf("RedleaseLockNotReady = %v, want one alert per lock, for 30m and severity critical from the values", a)
	}
	defined := definedMetrics(t)
	for name, a := range alerts {
		if sev, _ := a["labels"].(map[string]any)["severity"].(string); sev == "" {
			t.Errorf("alert %s has no severity", name)
		}
		want := "https://github.com/redlease/redlease/blob/main/docs/runbooks.md#" + strings.ToLower(name)
		if url, _ := a["annotations"].(map[string]any)["runbook_url"].(string); url != want {
			t.Errorf("alert %s: runbook_url %q, want %q", name, url, want)
		}
		for _, metric := range regexp.MustCompile(`redlease_[a-z_]+`).FindAllString(a["expr"].(string), -1) {
			if !defined[metric] {
				t.Errorf("alert %s uses %s, which no Go code defines (renamed metric?)", name, metric)
			}
		}
	}
	m = render(t, "--set", "prometheusRule.enabled=true,prometheusRule.severity=info")
	for _, rule := range ruleList(t, m) {
		if rule["alert"] == "RedleaseLeasesLost" && rule["labels"].(map[string]any)["severity"] != "critical" {
			t.Errorf("RedleaseLeasesLost with prometheusRule.severity=info: labels %v, want severity critical", rule["labels"])
		}
	}
}

// TestManagerAlerts: the manager's alerts only where the chart knows how
// the manager is scraped (its ServiceMonitor names the job), the leader's
// only with leader election; runbook_url follows prometheusRule.runbookURL.
func TestManagerAlerts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set  string
		want []string // the manager's alerts
	}{
		{"serviceMonitor.enabled=false", nil},
		{"serviceMonitor.enabled=true", []string{"RedleaseManagerAbsent", "RedleaseManagerNotLeading"}},
		{"serviceMonitor.enabled=true,leaderElection.enabled=false", []string{"RedleaseManagerAbsent"}},
	} {
		m := render(t, "--set", "prometheusRule.enabled=true,prometheusRule.runbookURL=https://wiki.example/redlease,"+tc.set)
		var got []string
		for _, r := range ruleList(t, m) {
			name := r["alert"].(string)
			if strings.HasPrefix(name, "RedleaseManager") {
				got = append(got, name)
			}
			if url := r["annotations"].(map[string]any)["runbook_url"]; url != "https://wiki.example/redlease#"+strings.ToLower(name) {
				t.Errorf("%s: alert %s runbook_url %v", tc.set, name, url)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: the manager's alerts %v, want %v", tc.set, got, tc.want)
		}
	}
}

// TestMetricsCertificate: metrics.certSecret mounts the Secret read-only
// where --metrics-cert-path points; HTTP/2 is off unless asked for; a
// certificate needs the secure endpoint.
func TestMetricsCertificate(t *testing.T) {
	t.Parallel()
	c := manager(t, deployment(t, render(t)))
	args := managerArgs(t, c)
	if args["enable-http2"] != "false" {
		t.Errorf("--enable-http2 = %q by default, want false", args["enable-http2"])
	}
	if _, ok := args["metrics-cert-path"]; ok {
		t.Error("--metrics-cert-path set without metrics.certSecret")
	}
	d := deployment(t, render(t, "--set", "metrics.certSecret=redlease-metrics-tls,metrics.enableHTTP2=true"))
	c = manager(t, d)
	args = managerArgs(t, c)
	path := args["metrics-cert-path"]
	if path == "" || args["enable-http2"] != "true" {
		t.Fatalf("args = %v, want --metrics-cert-path and --enable-http2=true", args)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path && m.ReadOnly }) {
		t.Errorf("nothing is mounted read-only at --metrics-cert-path %s: %+v", path, c.VolumeMounts)
	}
	if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == "redlease-metrics-tls"
	}) {
		t.Errorf("volumes = %+v, want the Secret redlease-metrics-tls", d.Spec.Template.Spec.Volumes)
	}
	if _, err := helmTemplate(t, chartDir(t), "--set", "metrics.certSecret=x,metrics.secure=false"); err == nil || !strings.Contains(err.Error(), "metrics.certSecret needs metrics.secure") {
		t.Errorf("a certificate for plain HTTP: err = %v, want a readable refusal", err)
	}
}

// ruleList is the rules of the manifest's one PrometheusRule group.
func ruleList(t *testing.T, m *manifest) []map[string]any {
	t.Helper()
	groups, _, _ := unstructured.NestedSlice(m.must("PrometheusRule", namespace, managerName).Object, "spec", "groups")
	if len(groups) != 1 {
		t.Fatalf("groups = %v", groups)
	}
	rules, _, _ := unstructured.NestedSlice(groups[0].(map[string]any), "rules")
	out := make([]map[string]any, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.(map[string]any))
	}
	return out
}
