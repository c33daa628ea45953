package docs_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/internal/kubetest"
)

// argoHealthCases are the Argo CD health each script of docs/argocd/ gives
// each fixture of docs/argocd/testdata/<kind>/ (the mapping docs/argocd.md
// explains): script, fixture (without .yaml), status, message.
var argoHealthCases = []struct{ script, fixture, status, message string }{
	{"redlease.io_DistributedLock", "DistributedLock/ready", "Healthy", "Sentinel: master 10.0.3.17:6379 answers; replica guard in force"},
	{"redlease.io_DistributedLock", "DistributedLock/no_status", "Progressing", "Waiting for the redlease controller to observe the lock"},
	{"redlease.io_DistributedLock", "DistributedLock/stale_generation", "Progressing", "Waiting for the redlease controller to observe generation 2"},
	{"redlease.io_DistributedLock", "DistributedLock/stale_condition", "Progressing", "Waiting for the redlease controller to observe generation 3"},
	{"redlease.io_DistributedLock", "DistributedLock/reconciling", "Progressing", "Reconciling: not checked: the servers were not reached"},
	{"redlease.io_DistributedLock", "DistributedLock/credentials_not_provisioned", "Progressing", "CredentialsNotProvisioned: the credentials Secret shop/redlease-shared of ClusterLockStore shared is not written yet"},
	{"redlease.io_DistributedLock", "DistributedLock/credentials_secret_conflict", "Degraded", "CredentialsSecretConflict: the Secret shop/shop-redis exists and was not written by redlease for ClusterLockStore/shared: it is left as it is; delete it, or name another Secret in spec.credentialsSecretName"},
	{"redlease.io_DistributedLock", "DistributedLock/store_not_ready", "Degraded", "StoreNotReady: ClusterLockStore shared is not Ready (EndpointUnreachable: 10.0.3.17:6379: dial tcp 10.0.3.17:6379: connect: connection refused)"},
	{"redlease.io_DistributedLock", "DistributedLock/unknown_reason", "Degraded", "SomethingNew: a reason added after this script was written"},
	{"redlease.io_DistributedLock", "DistributedLock/quarantine_unsound", "Degraded", "QuarantineUnsound: the master 10.0.3.17:6379 has 2 replicas but min-replicas-to-write is 1: a partitioned old master keeping the others goes on granting after one is promoted"},
	{"redlease.io_DistributedLock", "DistributedLock/quarantined", "Progressing", "Quarantined until 2026-08-20T10:02:41Z: the key's server 10.0.3.18:6379 changed (a failover, a restart that may have lost writes, or its epoch record was lost): nothing is granted until 2026-08-20T10:02:41Z, when every lease the old server granted has ended"},
	{"redlease.io_DistributedLock", "DistributedLock/epoch_recorded", "Healthy", "Sentinel: master 10.0.3.18:6379 answers; replica guard in force"},
	{"redlease.io_DistributedLock", "DistributedLock/preflight_false", "Healthy", "Standalone: master 10.0.9.4:6379 answers; Preflight False (EvictionPolicyUnsafe): 10.0.9.4:6379: maxmemory-policy is allkeys-lru, not noeviction: lock keys and fence counters can be evicted"},

	{"redlease.io_LockStore", "LockStore/ready", "Healthy", "Sentinel: master 10.0.3.17:6379 answers; replica guard in force"},
	{"redlease.io_LockStore", "LockStore/no_status", "Progressing", "Waiting for the redlease controller to observe the store"},
	{"redlease.io_LockStore", "LockStore/stale_generation", "Progressing", "Waiting for the redlease controller to observe generation 3"},
	{"redlease.io_LockStore", "LockStore/reconciling", "Progressing", "Reconciling: not checked: the servers were not reached"},
	{"redlease.io_LockStore", "LockStore/endpoint_unreachable", "Degraded", "EndpointUnreachable: 10.0.3.17:6379: dial tcp 10.0.3.17:6379: connect: connection refused"},
	{"redlease.io_LockStore", "LockStore/preflight_false", "Healthy", "Standalone: master 10.0.3.17:6379 answers; Preflight False (MemoryNearLimit): 10.0.3.17:6379: used_memory is 94 % of maxmemory"},

	{"redlease.io_ClusterLockStore", "ClusterLockStore/ready", "Healthy", "Sentinel: master 10.0.3.17:6379 answers; replica guard in force"},
	{"redlease.io_ClusterLockStore", "ClusterLockStore/no_status", "Progressing", "Waiting for the redlease controller to observe the store"},
	{"redlease.io_ClusterLockStore", "ClusterLockStore/stale_generation", "Progressing", "Waiting for the redlease controller to observe generation 3"},
	{"redlease.io_ClusterLockStore", "ClusterLockStore/reconciling", "Progressing", "Reconciling: not checked: the servers were not reached"},
	{"redlease.io_ClusterLockStore", "ClusterLockStore/endpoint_unreachable", "Degraded", "EndpointUnreachable: 10.0.3.17:6379: dial tcp 10.0.3.17:6379: connect: connection refused"},
	{"redlease.io_ClusterLockStore", "ClusterLockStore/preflight_false", "Healthy", "Standalone: master 10.0.3.17:6379 answers; Preflight False (MemoryNearLimit): 10.0.3.17:6379: used_memory is 94 % of maxmemory"},

	// Without the annotation: Argo CD's built-in result, message for message.
	{"apps_Deployment", "Deployment/plain_healthy", "Healthy", ""},
	{"apps_Deployment", "Deployment/plain_one_of_two", "Progressing", "Waiting for rollout to finish: 1 of 2 updated replicas are available..."},
	{"apps_Deployment", "Deployment/plain_deadline_exceeded", "Degraded", `Deployment "checkout" exceeded its progress deadline`},
	{"apps_Deployment", "Deployment/plain_paused", "Suspended", "Deployment is paused"},
	{"apps_Deployment", "Deployment/plain_stale_generation", "Progressing", "Waiting for rollout to finish: observed deployment generation less than desired generation"},
	{"apps_Deployment", "Deployment/plain_old_replicas", "Progressing", "Waiting for rollout to finish: 2 old replicas are pending termination..."},
	// With redlease.io/active-standby: "true".
	{"apps_Deployment", "Deployment/standby_healthy", "Healthy", "Active/standby: 1 of 2 replicas available (the lock's holder), 1 standing by"},
	{"apps_Deployment", "Deployment/standby_three", "Healthy", "Active/standby: 1 of 3 replicas available (the lock's holder), 2 standing by"},
	{"apps_Deployment", "Deployment/standby_takeover", "Progressing", "Active/standby: no replica holds the lock yet (0 of 2 available)"},
	{"apps_Deployment", "Deployment/standby_two_ready", "Degraded", "Active/standby: 2 of 2 replicas are available, one expected: is the readinessProbe on lockctl's /readyz?"},
	{"apps_Deployment", "Deployment/standby_rolling", "Progressing", "Waiting for rollout to finish: 1 out of 2 new replicas have been updated..."},
	{"apps_Deployment", "Deployment/standby_deadline_exceeded", "Degraded", `Deployment "checkout" exceeded its progress deadline: an active/standby Deployment needs progressDeadlineSeconds: 2147483647`},
	{"apps_Deployment", "Deployment/standby_paused", "Suspended", "Deployment is paused"},
	{"apps_Deployment", "Deployment/standby_stale_generation", "Progressing", "Waiting for rollout to finish: observed deployment generation less than desired generation"},
	{"apps_Deployment", "Deployment/standby_scaled_to_zero", "Healthy", ""},
}

// TestArgoCDHealth runs each health script of docs/argocd/ in a Lua
// interpreter set up as Argo CD sets it up, on each fixture.
func TestArgoCDHealth(t *testing.T) {
	for _, c := range argoHealthCases {
		t.Run(c.fixture, func(t *testing.T) {
			got, err := runHealth(read(t, "docs/argocd/"+c.script+".lua"), read(t, "docs/argocd/testdata/"+c.fixture+".yaml"))
			if err != nil {
				t.Fatalf("%s: %v", c.script, err)
			}
			if got.status != c.status || got.message != c.message {
				t.Errorf("%s:\n got %s %q\nwant %s %q", c.script, got.status, got.message, c.status, c.message)
			}
		})
	}
}

// TestArgoCDFixturesCovered: every script and fixture under docs/argocd/
// is in argoHealthCases, so none is left untested; each redlease.io
// kind's fixtures include the states docs/argocd.md promises.
func TestArgoCDFixturesCovered(t *testing.T) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var scripts, fixtures []string
	for _, c := range argoHealthCases {
		scripts = append(scripts, c.script)
		fixtures = append(fixtures, c.fixture)
	}
	files, _ := filepath.Glob(filepath.Join(root, "docs", "argocd", "*.lua"))
	yamls, _ := filepath.Glob(filepath.Join(root, "docs", "argocd", "testdata", "*", "*.yaml"))
	if len(files) != 4 || len(yamls) < 30 {
		t.Fatalf("found %d scripts and %d fixtures under docs/argocd: the globs no longer match", len(files), len(yamls))
	}
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".lua"); !slices.Contains(scripts, name) {
			t.Errorf("docs/argocd/%s.lua has no case in argoHealthCases", name)
		}
	}
	for _, f := range yamls {
		rel, _ := filepath.Rel(filepath.Join(root, "docs", "argocd", "testdata"), f)
		if name := strings.TrimSuffix(filepath.ToSlash(rel), ".yaml"); !slices.Contains(fixtures, name) {
			t.Errorf("docs/argocd/testdata/%s.yaml has no case in argoHealthCases", name)
		}
	}
	for _, kind := range []string{"DistributedLock", "LockStore", "ClusterLockStore"} {
		for _, state := range []string{"ready", "no_status", "stale_generation", "reconciling", "preflight_false"} {
			if !slices.Contains(fixtures, kind+"/"+state) {
				t.Errorf("no %s fixture for %s", state, kind)
			}
		}
	}
}

// TestArgoCDSnippets: the argocd-cm snippets in docs/argocd.md hold
// exactly the Lua files of docs/argocd/, and the first is byte for byte
// what hack/argocd-cm.sh prints (the release's argocd-health.yaml), so
// the doc, the release and the tested scripts cannot drift apart.
func TestArgoCDSnippets(t *testing.T) {
	page := read(t, "docs/argocd.md")
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(page, -1)
	shown := map[string]string{}
	var first string
	for _, b := range blocks {
		if !strings.Contains(b[1], "resource.customizations.health.") {
			continue
		}
		if first == "" {
			first = b[1]
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(b[1]), &cm); err != nil {
			t.Fatalf("docs/argocd.md: an argocd-cm snippet that does not parse: %v", err)
		}
		for k, v := range cm.Data {
			shown[k] = v
		}
	}
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "docs", "argocd", "*.lua"))
	for _, f := range files {
		key := "resource.customizations.health." + strings.TrimSuffix(filepath.Base(f), ".lua")
		want := read(t, filepath.Join("docs", "argocd", filepath.Base(f)))
		switch got, ok := shown[key]; {
		case !ok:
			t.Errorf("docs/argocd.md shows no argocd-cm key %s", key)
		case got != want:
			t.Errorf("docs/argocd.md's %s differs from docs/argocd/%s", key, filepath.Base(f))
		}
		delete(shown, key)
	}
	for k := range shown {
		t.Errorf("docs/argocd.md shows %s, which has no file in docs/argocd/", k)
	}
	out, err := exec.Command("bash", filepath.Join(root, "hack", "argocd-cm.sh")).Output() //nolint:noctx,gosec // noctx: a script that only reads files; G204: this repository's script
	if err != nil {
		t.Fatalf("hack/argocd-cm.sh: %v", err)
	}
	if string(out) != first {
		t.Errorf("docs/argocd.md's first argocd-cm snippet is not what hack/argocd-cm.sh prints (the release's argocd-health.yaml):\n%s", out)
	}
}

// TestStandbySampleHealthyInArgoCD: the active/standby sample carries the
// annotation the Deployment override reads, so with one holder Ready of
// its two replicas Argo CD calls it Healthy.
func TestStandbySampleHealthyInArgoCD(t *testing.T) {
	var dep string
	for doc := range strings.SplitSeq(read(t, "config/samples/standby/lockctl-standby.yaml"), "\n---\n") {
		if strings.Contains(doc, "\nkind: Deployment\n") {
			dep = doc
		}
	}
	if dep == "" {
		t.Fatal("config/samples/standby/lockctl-standby.yaml has no Deployment")
	}
	dep += "\nstatus: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, readyReplicas: 1, availableReplicas: 1}\n"
	dep = strings.Replace(dep, "\nmetadata:\n", "\nmetadata:\n  generation: 1\n", 1)
	got, err := runHealth(read(t, "docs/argocd/apps_Deployment.lua"), dep)
	if err != nil {
		t.Fatal(err)
	}
	if got.status != "Healthy" {
		t.Errorf("the sample Deployment with one holder of two: %s %q, want Healthy", got.status, got.message)
	}
}
