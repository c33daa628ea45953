package lockctl_test

import (
	"bufio"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/podrbac"
	"github.com/redlease/redlease/internal/redistest"
)

// TestRBAC: `lockctl rbac LOCK --service-account SA` prints the Role
// podrbac.Rules gives for the Secret the lock's status names, bound to SA;
// applied, it is enough for SA to take the lock with lockctl.
func TestRBAC(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t, redistest.WithPassword("s3cret"))
	publishLock(t, env, ns, "rbac", ns+"/rbac", srv.Addr(), "s3cret")
	admin := env.KubeconfigFile(t)

	if r := lockctl(t, "rbac", "rbac", "-n", ns, "--kubeconfig", admin); r.code != 2 {
		t.Errorf("without --service-account: exit %d, want 2", r.code)
	}
	r := lockctl(t, "rbac", "rbac", "-n", ns, "--service-account", "settle", "--kubeconfig", admin)
	if r.code != 0 {
		t.Fatalf("rbac: exit %d, stderr %q", r.code, r.stderr)
	}
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	docs := yamlDocs(t, r.stdout)
	if len(docs) != 2 {
		t.Fatalf("rbac printed %d documents, want a Role and a RoleBinding:\n%s", len(docs), r.stdout)
	}
	if err := errors.Join(yaml.UnmarshalStrict(docs[0], &role), yaml.UnmarshalStrict(docs[1], &binding)); err != nil {
		t.Fatal(err)
	}
	if want := podrbac.Rules("redlease-shared"); role.Kind != "Role" || role.Namespace != ns || !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("Role %s %s/%s rules %+v; want podrbac.Rules(redlease-shared) = %+v", role.Kind, role.Namespace, role.Name, role.Rules, want)
	}
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != "settle" || binding.Subjects[0].Namespace != ns {
		t.Errorf("RoleBinding %+v: want Role %s bound to %s/settle", binding, role.Name, ns)
	}
	sa := "system:serviceaccount:" + ns + ":settle"
	asSA := impersonating(t, admin, sa)
	if r := lockctl(t, "status", "rbac", "-n", ns, "--kubeconfig", asSA); r.code == 0 {
		t.Fatal("the ServiceAccount read the lock before the Role was applied: the test does not act as it")
	}
	if err := errors.Join(env.Client.Create(t.Context(), &role), env.Client.Create(t.Context(), &binding)); err != nil {
		t.Fatal(err)
	}
	env.WaitForAccess(t, sa, ns, "list", "redlease.io", "distributedlocks")
	if r := lockctl(t, "run", "--lock", "rbac", "-n", ns, "--kubeconfig", asSA, "--", "true"); r.code != 0 {
		t.Errorf("run as the bound ServiceAccount: exit %d, stderr %q", r.code, r.stderr)
	}
}

// impersonating copies the kubeconfig at path, acting as user.
func impersonating(t *testing.T, path, user string) string {
	t.Helper()
	return editKubeconfig(t, path, func(cfg *clientcmdapi.Config) {
		for _, a := range cfg.AuthInfos {
			a.Impersonate = user
		}
	})
}

func yamlDocs(t *testing.T, s string) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, doc)
	}
}
