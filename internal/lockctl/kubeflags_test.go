package lockctl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
)

// TestKubeFlags: lockctl finds a lock as kubectl finds an object: -n
// names the namespace of a lock given by NAME; without it the context's
// namespace is used; --context picks another context; $KUBECONFIG is read
// when --kubeconfig is not given; a NAMESPACE/ that contradicts -n is a
// usage error.
func TestKubeFlags(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	key := ns + "/flags"
	publishLock(t, env, ns, "flags", key, srv.Addr(), "s3cret")
	admin := env.KubeconfigFile(t)
	inNS := withContextNamespace(t, admin, ns)

	for _, c := range []struct {
		name string
		args []string
	}{
		{"-n", []string{"status", "flags", "-n", ns, "--kubeconfig", admin, "-o", "json"}},
		{"--namespace", []string{"status", "--lock", "flags", "--namespace", ns, "--kubeconfig", admin, "-o", "json"}},
		{"the context's namespace", []string{"status", "flags", "--kubeconfig", inNS, "-o", "json"}},
	} {
		if r := lockctl(t, c.args...); r.code != 0 || !strings.Contains(r.stdout, `"key": "`+key+`"`) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want the lock's key %s", c.name, r.code, r.stdout, r.stderr, key)
		}
	}
	if r := lockctl(t, "status", "flags", "--kubeconfig", inNS, "--context", "unreachable"); r.code == 0 || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("--context unreachable: exit %d, stderr %q; want that context's server (127.0.0.1:1) tried", r.code, r.stderr)
	}
	if r := lockctl(t, "status", "other/flags", "-n", ns, "--kubeconfig", admin); r.code != 2 {
		t.Errorf("NAMESPACE/ against -n: exit %d, stderr %q; want 2", r.code, r.stderr)
	}
	t.Setenv("KUBECONFIG", inNS)
	if r := lockctl(t, "status", "flags", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, key) {
		t.Errorf("$KUBECONFIG: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// withContextNamespace copies the kubeconfig at path with ns as its
// current context's namespace, and a second context "unreachable" whose
// server does not answer.
func withContextNamespace(t *testing.T, path, ns string) string {
	t.Helper()
	return editKubeconfig(t, path, func(cfg *clientcmdapi.Config) {
		cur := cfg.Contexts[cfg.CurrentContext]
		cur.Namespace = ns
		cfg.Clusters["unreachable"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
		cfg.Contexts["unreachable"] = &clientcmdapi.Context{Cluster: "unreachable", AuthInfo: cur.AuthInfo}
	})
}

// editKubeconfig writes a copy of the kubeconfig at path, changed by edit,
// into t's temporary directory and returns its path.
func editKubeconfig(t *testing.T, path string, edit func(*clientcmdapi.Config)) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRedisPasswordOutsideTheURL: with --redis, the password comes from
// --redis-password-file (its trailing newline dropped) or $REDISCLI_AUTH,
// so that it needs not be in the URL (and in ps); without one the server
// refuses.
func TestRedisPasswordOutsideTheURL(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := redisURL(srv)
	if r := lockctl(t, "run", "--redis", url, "--key", "pw", "--", "true"); r.code == 0 {
		t.Fatal("no password: the server took the lock")
	}
	if r := lockctl(t, "run", "--redis", url, "--key", "pw", "--redis-password-file", file, "--", "true"); r.code != 0 {
		t.Errorf("--redis-password-file: exit %d, stderr %q", r.code, r.stderr)
	}
	t.Setenv("REDISCLI_AUTH", "s3cret")
	if r := lockctl(t, "run", "--redis", url, "--key", "pw", "--", "true"); r.code != 0 {
		t.Errorf("$REDISCLI_AUTH: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestFlagsPerCommand: a command lists only the flags it uses: status
// reads, so the flags that shape a lease are not among its flags.
func TestFlagsPerCommand(t *testing.T) {
	help := lockctl(t, "status", "--help").stdout
	for _, f := range []string{"--ttl", "--fifo", "--identity"} {
		if strings.Contains(help, f) {
			t.Errorf("status --help lists %s, which status does not use", f)
		}
	}
	for _, f := range []string{"--namespace", "--context", "--kubeconfig", "--redis-password-file", "--permits"} {
		if !strings.Contains(help, f) {
			t.Errorf("status --help lacks %s", f)
		}
	}
	if help := lockctl(t, "run", "--help").stdout; !strings.Contains(help, "--ttl") || !strings.Contains(help, "--identity") {
		t.Errorf("run --help lacks --ttl or --identity:\n%s", help)
	}
}
