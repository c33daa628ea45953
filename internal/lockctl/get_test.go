package lockctl_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// getLock is one DistributedLock a `lockctl get` test publishes: Ready
// on addr unless notReady, with status.holder naming pod.
type getLock struct {
	name     string
	addr     string
	notReady string // the Ready condition's reason when False; no connection published
	holder   string // status.holder.identity
	pod      string
	permits  int32 // spec.permits: above 1, a semaphore
}

// publishLocks creates ls in ns with one credentials Secret holding
// password, as the controller would publish them (no controller runs).
func publishLocks(t *testing.T, env *kubetest.Env, ns, password string, ls ...getLock) {
	t.Helper()
	if err := env.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redlease-shared"},
		Data: map[string][]byte{v1alpha1.CredentialsPassword: []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: l.name},
			Spec: v1alpha1.DistributedLockSpec{Permits: l.permits, StoreRef: &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: "shared"}}}
		if err := env.Client.Create(t.Context(), dl); err != nil {
			t.Fatal(err)
		}
		ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAvailable}
		if l.notReady != "" {
			ready = metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: l.notReady, Message: "the store is not Ready"}
		} else {
			dl.Status = v1alpha1.DistributedLockStatus{Key: ns + "/" + l.name,
				Connection:           &v1alpha1.ConnectionStatus{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{l.addr}},
				CredentialsSecretRef: &v1alpha1.LocalSecretReference{Name: "redlease-shared"}}
		}
		if l.holder != "" {
			dl.Status.Holder = &v1alpha1.LockHolder{Identity: l.holder, Pod: l.pod, Node: "node-1", Since: metav1.Now()}
		}
		apimeta.SetStatusCondition(&dl.Status.Conditions, ready)
		if err := env.Client.Status().Update(t.Context(), dl); err != nil {
			t.Fatal(err)
		}
	}
}

// holdAs takes key on srv as identity until the test ends; its fence.
func holdAs(t *testing.T, srv *redistest.Server, password, key, identity string) uint64 {
	t.Helper()
	c := srv.Client(t)
	if password != "" {
		c.Options().Password = password
	}
	lease, err := locktest.New(t, c, lock.WithIdentity(identity), lock.WithTTL(time.Minute)).TryAcquire(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	locktest.ReleaseAtEnd(t, lease)
	return lease.Fence()
}

// tableRows splits `lockctl get`'s table into its rows' cells, by NAME
// (NAMESPACE/NAME with -A), and checks the header.
func tableRows(t *testing.T, out string, header ...string) map[string][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != strings.Join(header, " ") {
		t.Fatalf("header %q, want %q; table:\n%s", got, header, out)
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if header[0] == "NAMESPACE" {
			rows[f[0]+"/"+f[1]] = f[1:]
		} else {
			rows[f[0]] = f
		}
	}
	return rows
}

// TestGet: `lockctl get` lists a namespace's locks kubectl-get shaped,
// with what Redis says: a held lock's holder (the pod status.holder
// names), fence, waiters and TTL left; a free one's dashes; a not-Ready
// one's reason and ? for everything Redis would have said, and exit 5;
// `ls` and names select; -A adds the NAMESPACE column; -o wide the
// permits, node, store, mode and key.
func TestGet(t *testing.T) {
	env := kubetest.Shared(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	publishLocks(t, env, ns, "s3cret",
		getLock{name: "held", addr: srv.Addr(), holder: "holder-1", pod: "web-0"},
		getLock{name: "free", addr: srv.Addr()},
		getLock{name: "pending", notReady: v1alpha1.ReasonStoreNotReady},
		getLock{name: "sem", addr: srv.Addr(), permits: 9})
	publishLocks(t, env, other, "s3cret", getLock{name: "elsewhere", addr: srv.Addr()})
	fence := strconv.FormatUint(holdAs(t, srv, "s3cret", ns+"/held", "holder-1"), 10)
	c := srv.Client(t)
	c.Options().Password = "s3cret"
	for i := range 5 {
		lease, err := locktest.New(t, c, lock.WithIdentity("p"+strconv.Itoa(i)), lock.WithTTL(time.Minute)).Semaphore(ns+"/sem", 9).TryAcquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		locktest.ReleaseAtEnd(t, lease)
	}

	r := lockctl(t, "get", "-n", ns, "--kubeconfig", kubeconfig)
	if r.code != 5 || !strings.Contains(r.stderr, ns+"/pending: could not read") {
		t.Fatalf("get with a not-Ready lock: exit %d, want 5 naming it; stderr:\n%s", r.code, r.stderr)
	}
	rows := tableRows(t, r.stdout, "NAME", "READY", "REASON", "HOLDER", "POD", "FENCE", "WAITERS", "TTL", "AGE")
	for name, want := range map[string]string{
		"held":    `^True Available holder-1 web-0 ` + fence + ` 0 [0-9.]+s \S+$`,
		"free":    `^True Available - - 0 0 - \S+$`,
		"pending": `^False ` + v1alpha1.ReasonStoreNotReady + ` \? \? \? \? \? \S+$`,
		// A semaphore: its first holders, and how many more hold a permit.
		"sem": `^True Available p0,p1,p2,\+2 more - \d+ 0 - \S+$`,
	} {
		row := rows[name]
		if row == nil || !regexp.MustCompile(want).MatchString(strings.Join(row[1:], " ")) {
			t.Errorf("row %s = %q, want %s; table:\n%s", name, row, want, r.stdout)
		}
	}
	if len(rows) != 4 {
		t.Errorf("%d rows, want the namespace's 4:\n%s", len(rows), r.stdout)
	}

	r = lockctl(t, "ls", "held", "free", "-n", ns, "--kubeconfig", kubeconfig, "-o", "wide", "--no-headers")
	if r.code != 0 || strings.Contains(r.stdout, "pending") || strings.Contains(r.stdout, "NAME") {
		t.Fatalf("ls held free -o wide --no-headers: exit %d, stdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^held .* 1/1 +node-1 +ClusterLockStore/shared +Standalone +` + regexp.QuoteMeta(ns+"/held") + `$`).MatchString(r.stdout) {
		t.Errorf("-o wide lacks the permits, node, store, mode or key:\n%s", r.stdout)
	}

	checkGetAll(t, kubeconfig, ns, other)
	if r := lockctl(t, "get", "nope", "-n", ns, "--kubeconfig", kubeconfig); r.code != 1 || !strings.Contains(r.stderr, `"nope" not found`) {
		t.Errorf("get nope: exit %d, stderr %q; want 1, not found", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret") || lockValue.MatchString(r.stdout) {
		t.Error("get printed the password or a lock value")
	}
}

// checkGetAll: get -A lists the locks of ns and other with a NAMESPACE
// column, the not-Ready one's Redis columns ?, and exits non-zero.
func checkGetAll(t *testing.T, kubeconfig, ns, other string) {
	t.Helper()
	r := lockctl(t, "get", "-A", "--kubeconfig", kubeconfig)
	rows := tableRows(t, r.stdout, "NAMESPACE", "NAME", "READY", "REASON", "HOLDER", "POD", "FENCE", "WAITERS", "TTL", "AGE")
	for _, k := range []string{ns + "/held", ns + "/free", ns + "/pending", other + "/elsewhere"} {
		if rows[k] == nil {
			t.Errorf("-A lacks %s:\n%s", k, r.stdout)
		}
	}
	// Other tests' namespaces are listed too, an unreachable Redis's among
	// them (exit 6): the not-Ready lock alone would make it 5.
	if r.code != 5 && r.code != 6 {
		t.Errorf("-A with a not-Ready lock: exit %d, want 5 (or 6)", r.code)
	}
	if got := strings.Join(rows[ns+"/pending"][3:8], " "); got != "? ? ? ? ?" {
		t.Errorf("-A: pending reads %q from Redis, want ? in each column:\n%s", got, r.stdout)
	}
}

// TestGetOutputs: -o json and yaml print a List of the DistributedLocks,
// each with the "redis" field read; name, jsonpath and custom-columns
// print as kubectl's; an unknown -o is a usage error.
func TestGetOutputs(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t)
	publishLocks(t, env, ns, "", getLock{name: "a", addr: srv.Addr()}, getLock{name: "b", addr: srv.Addr()})
	fence := holdAs(t, srv, "", ns+"/a", "holder-a")
	get := func(output string) string {
		t.Helper()
		r := lockctl(t, "get", "-n", ns, "--kubeconfig", kubeconfig, "-o", output)
		if r.code != 0 {
			t.Fatalf("-o %s: exit %d, stderr %s", output, r.code, r.stderr)
		}
		return r.stdout
	}
	type item struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
		Status   struct{ Key string }
		Redis    struct {
			Held   bool
			Holder string
			Fence  uint64
			TTL    string
		}
	}
	var list struct {
		Kind  string
		Items []item
	}
	for _, format := range []string{"json", "yaml"} {
		out := get(format)
		if err := yaml.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, out)
		}
		if list.Kind != "List" || len(list.Items) != 2 || list.Items[0].Kind != "DistributedLock" || list.Items[0].Metadata.Name != "a" ||
			!list.Items[0].Redis.Held || list.Items[0].Redis.Holder != "holder-a" || list.Items[0].Redis.Fence != fence ||
			list.Items[0].Status.Key != ns+"/a" || list.Items[1].Redis.Held {
			t.Errorf("-o %s = %+v", format, list)
		}
		if strings.Contains(out, "managedFields") {
			t.Errorf("-o %s prints managedFields, which kubectl leaves out", format)
		}
	}
	for output, want := range map[string]string{
		"name":                            "distributedlock.redlease.io/a\ndistributedlock.redlease.io/b\n",
		"jsonpath={.items[*].redis.held}": "true false",
		"custom-columns=NAME:.metadata.name,HOLDER:.redis.holder,FENCE:.redis.fence": "NAME HOLDER FENCE\na holder-a " + strconv.FormatUint(fence, 10) + "\nb <none> 0",
	} {
		got := get(output)
		if output != "name" {
			got = strings.Join(strings.Fields(strings.ReplaceAll(got, "\n", " \n ")), " ")
			want = strings.Join(strings.Fields(strings.ReplaceAll(want, "\n", " \n ")), " ")
		}
		if got != want {
			t.Errorf("-o %s = %q, want %q", output, got, want)
		}
	}
	if r := lockctl(t, "get", "-n", ns, "--kubeconfig", kubeconfig, "-o", "xml"); r.code != 2 {
		t.Errorf("-o xml: exit %d, want 2 (usage)", r.code)
	}
}

// TestGetRedisUnreachable: a store whose Redis does not answer shows ?
// in every column read from Redis, never a free-looking "-" or 0, and get
// exits 6, saying why once for the store's locks.
func TestGetRedisUnreachable(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	publishLocks(t, env, ns, "", getLock{name: "x", addr: "127.0.0.1:1"}, getLock{name: "y", addr: "127.0.0.1:1"})
	r := lockctl(t, "get", "-n", ns, "--kubeconfig", kubeconfig)
	checkOutcome(t, r, 6, regexp.QuoteMeta(ns+"/x, "+ns+"/y: could not read: ")+`.*connection refused`)
	if n := strings.Count(r.stderr, "could not read"); n != 1 {
		t.Errorf("%d lines say why, want one for the store's two locks:\n%s", n, r.stderr)
	}
	rows := tableRows(t, r.stdout, "NAME", "READY", "REASON", "HOLDER", "POD", "FENCE", "WAITERS", "TTL", "AGE")
	for _, name := range []string{"x", "y"} {
		if got := strings.Join(rows[name][3:8], " "); got != "? ? ? ? ?" {
			t.Errorf("row %s reads %q from Redis, want ? in each column:\n%s", name, got, r.stdout)
		}
	}
}

// TestGetReadsEachStoreInOneRound: listing 20 locks of one store costs
// Redis as many rounds as listing 1 (INFO's total_writes_processed: one
// reply write per round), with one read call per lock.
func TestGetReadsEachStoreInOneRound(t *testing.T) {
	env := kubetest.Shared(t)
	one, many := env.Namespace(t), env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t)
	c := srv.Client(t)
	if err := protocol.LoadLibrary(t.Context(), c); err != nil { // as the controller does
		t.Fatal(err)
	}
	publishLocks(t, env, one, "", getLock{name: "l0", addr: srv.Addr()})
	var ls []getLock
	for i := range 20 {
		ls = append(ls, getLock{name: "l" + strconv.Itoa(i), addr: srv.Addr()})
	}
	publishLocks(t, env, many, "", ls...)
	cost := func(ns string) (rounds, reads int) {
		t.Helper()
		before := redisStats(t, srv)
		if r := lockctl(t, "get", "-n", ns, "--kubeconfig", kubeconfig); r.code != 0 {
			t.Fatalf("get: exit %d, stderr %s", r.code, r.stderr)
		}
		after := redisStats(t, srv)
		return after["total_writes_processed"] - before["total_writes_processed"], after["cmdstat_fcall_ro"] - before["cmdstat_fcall_ro"]
	}
	rounds1, reads1 := cost(one)
	rounds20, reads20 := cost(many)
	t.Logf("1 lock: %d rounds, %d reads; 20 locks: %d rounds, %d reads", rounds1, reads1, rounds20, reads20)
	if reads1 != 1 || reads20 != 20 {
		t.Errorf("read calls: %d for 1 lock, %d for 20; want one per lock", reads1, reads20)
	}
	if rounds20 != rounds1 {
		t.Errorf("20 locks cost %d rounds, 1 lock %d: want the same, one pipelined round per store", rounds20, rounds1)
	}
}

// redisStats is INFO's total_writes_processed and the calls of FCALL_RO.
func redisStats(t *testing.T, srv *redistest.Server) map[string]int {
	t.Helper()
	info, err := srv.Client(t).Info(t.Context(), "stats", "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]int{}
	if m := regexp.MustCompile(`total_writes_processed:(\d+)`).FindStringSubmatch(info); m != nil {
		stats["total_writes_processed"], _ = strconv.Atoi(m[1])
	} else {
		t.Fatalf("INFO has no total_writes_processed:\n%s", info)
	}
	if m := regexp.MustCompile(`cmdstat_fcall_ro:calls=(\d+)`).FindStringSubmatch(info); m != nil {
		stats["cmdstat_fcall_ro"], _ = strconv.Atoi(m[1])
	}
	return stats
}

// TestGetHonoursKubectlAuthFlags: --as and --token are kubectl's: a user
// or a service account's token without rights is Forbidden (exit 1,
// naming who), and the same token once granted lists the locks; --server
// and --certificate-authority reach the API server without a kubeconfig.
func TestGetHonoursKubectlAuthFlags(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t)
	publishLocks(t, env, ns, "", getLock{name: "held", addr: srv.Addr()})
	holdAs(t, srv, "", ns+"/held", "holder-1")

	r := lockctl(t, "get", "-n", ns, "--kubeconfig", kubeconfig, "--as", "nobody")
	checkOutcome(t, r, 1, `(?i)forbidden: User "nobody" cannot list resource "distributedlocks"`)

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}}
	if err := env.Client.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}
	if err := env.Client.SubResource("token").Create(t.Context(), sa, tr); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, env.Config.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	noKubeconfig := filepath.Join(t.TempDir(), "none")
	if err := os.WriteFile(noKubeconfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	asReader := []string{"get", "-n", ns, "--kubeconfig", noKubeconfig, "--server", env.Config.Host, "--certificate-authority", ca, "--token", tr.Status.Token}
	r = lockctl(t, asReader...)
	checkOutcome(t, r, 1, `(?i)forbidden: User "system:serviceaccount:`+ns+`:reader" cannot list`)

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lock-reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"distributedlocks"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lock-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "lock-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "reader"}}}
	if err := env.Client.Create(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + ns + ":reader"
	env.WaitForAccess(t, user, ns, "list", v1alpha1.GroupVersion.Group, "distributedlocks")
	env.WaitForAccess(t, user, ns, "get", "", "secrets")
	if r := lockctl(t, asReader...); r.code != 0 || !regexp.MustCompile(`(?m)^held +True .* holder-1 `).MatchString(r.stdout) {
		t.Errorf("granted token: exit %d, stdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// TestGetAsKubectlPlugin: lockctl installed as kubectl-redlease (as
// kubectl runs `kubectl redlease get`) calls itself that in its help and
// lists the locks the same way.
func TestGetAsKubectlPlugin(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	srv := redistest.StartStandalone(t)
	publishLocks(t, env, ns, "", getLock{name: "job", addr: srv.Addr()})
	plugin := filepath.Join(t.TempDir(), "kubectl-redlease")
	if err := os.Symlink(binary, plugin); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) result {
		t.Helper()
		cmd := program(t.Context(), plugin, args...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run() // the exit code is read from ProcessState
		return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	}
	if r := run("get", "--help"); !strings.Contains(r.stdout, "kubectl redlease get [NAME...]") {
		t.Errorf("help does not say kubectl redlease get:\n%s", r.stdout)
	}
	if r := run("get", "-n", ns, "--kubeconfig", kubeconfig); r.code != 0 || !regexp.MustCompile(`(?m)^job +True +Available +- +- +0 +0 +- `).MatchString(r.stdout) {
		t.Errorf("kubectl-redlease get: exit %d, stdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
