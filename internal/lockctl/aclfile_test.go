package lockctl_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
)

// TestACLFileGeneratesThePasswordInTheSecret: lockctl aclfile (the chart's
// quick-start Redis runs it as an init container) writes a random password
// into the Secret when it has none, once, even when two runs race, and
// keeps it afterwards; the aclfile it writes turns the default user off and
// holds the controller's user with that password, never the password
// itself. A real redis-server that loads it refuses a connection without a
// password and lets the controller in with the Secret's password, with the
// controller's rules only.
func TestACLFileGeneratesThePasswordInTheSecret(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	kubeconfig := env.KubeconfigFile(t)
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"aclfile", "--kubeconfig", kubeconfig, "-n", ns, "--secret", "quickstart-redis", "--out", filepath.Join(dir, out)}
	}

	if r := lockctl(t, args("missing.acl")...); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("without the Secret: exit %d, stderr %q; want 1 and not found", r.code, r.stderr)
	}
	if r := lockctl(t, "aclfile", "--kubeconfig", kubeconfig, "-n", ns, "--secret", "quickstart-redis"); r.code != 2 {
		t.Errorf("without --out: exit %d, want 2 (usage)", r.code)
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quickstart-redis"}}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, out := range []string{"a.acl", "b.acl"} {
		wg.Go(func() {
			if r := lockctl(t, args(out)...); r.code != 0 {
				t.Errorf("aclfile --out %s: exit %d, stderr %s", out, r.code, r.stderr)
			}
		})
	}
	wg.Wait()
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	password := string(secret.Data["password"])
	if len(password) != 64 {
		t.Fatalf("the Secret's password is %d characters, want 64 (256 random bits in hex)", len(password))
	}
	a, b := readACL(t, dir, "a.acl"), readACL(t, dir, "b.acl")
	if a != b || strings.Contains(a, password) {
		t.Fatalf("two racing runs wrote different aclfiles, or the password in clear:\n%s\n%s", a, b)
	}
	if r := lockctl(t, args("c.acl")...); r.code != 0 || readACL(t, dir, "c.acl") != a {
		t.Fatalf("a later run (exit %d, %s) changed the aclfile: the Secret's password must stay", r.code, r.stderr)
	}

	// The server starts with an open default user (the harness's client
	// needs it), then loads the file as a server started on it would.
	file := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(file, []byte("user default on nopass ~* &* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := redistest.StartStandalone(t, redistest.WithConfig("--aclfile", file))
	if err := os.WriteFile(file, []byte(a), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client(t).Do(t.Context(), "ACL", "LOAD").Err(); err != nil {
		t.Fatalf("ACL LOAD of lockctl's aclfile: %v", err)
	}
	if err := srv.Client(t).Ping(t.Context()).Err(); err == nil {
		t.Error("a client without a password was let in: the default user must be off")
	}
	controller := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = redisacl.ControllerUser, password })
	if err := controller.ConfigGet(t.Context(), "maxmemory-policy").Err(); err != nil {
		t.Errorf("CONFIG GET as the controller, with the Secret's password: %v", err)
	}
	if err := controller.FlushAll(t.Context()).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("FLUSHALL as the controller = %v, want NOPERM", err)
	}
}

func readACL(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name)) //nolint:gosec // G304: in t.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
