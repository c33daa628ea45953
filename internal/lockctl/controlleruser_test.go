package lockctl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
)

// TestControllerUserCommand: lockctl controller-user prints the line
// redisacl renders for the modes its flags choose (both by default), and
// nothing else.
func TestControllerUserCommand(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		modes redisacl.ControllerModes
	}{
		{nil, redisacl.ControllerModes{Guard: true, Isolation: true, Functions: true}},
		{[]string{"--guard=false", "--isolation=false", "--functions=false"}, redisacl.ControllerModes{}},
		{[]string{"--isolation=false", "--cluster"}, redisacl.ControllerModes{Guard: true, Cluster: true, Functions: true}},
	} {
		want, err := redisacl.ControllerSetUser("PASSWORD", tc.modes)
		if err != nil {
			t.Fatal(err)
		}
		r := lockctl(t, append([]string{"controller-user"}, tc.args...)...)
		if r.code != 0 || strings.TrimSuffix(r.stdout, "\n") != want {
			t.Errorf("controller-user %v: exit %d, stdout %q, want %q", tc.args, r.code, r.stdout, want)
		}
	}
	if r := lockctl(t, "controller-user", "extra"); r.code == 0 {
		t.Errorf("controller-user with an argument: exit 0, want a usage error")
	}
}

// With --aclfile, the controller's user is a line of an aclfile, its
// password stored as a SHA-256 (never in the output). A real redis-server
// started with that file lets the user in with the password, runs what the
// controller sends (CONFIG GET, FUNCTION LIST) and refuses the rest
// (FLUSHALL), and still has the user after a restart: what a user made
// with ACL SETUSER loses.
func TestControllerUserACLFile(t *testing.T) {
	dir := t.TempDir()
	passwordFile := filepath.Join(dir, "password")
	if err := os.WriteFile(passwordFile, []byte("s3cret-for-the-controller\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := lockctl(t, "controller-user", "--aclfile", "--password-file", passwordFile)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "user redlease-operator on #") || strings.Contains(r.stdout, "s3cret") {
		t.Fatalf("controller-user --aclfile: exit %d, stdout %q: want one aclfile line, the password hashed", r.code, r.stdout)
	}
	aclfile := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(aclfile, []byte("user default on nopass ~* &* +@all\n"+r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := redistest.StartStandalone(t, redistest.WithConfig("--aclfile", aclfile))
	controller := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: redisacl.ControllerUser, Password: "s3cret-for-the-controller", MaxRetries: -1})
	defer func() { _ = controller.Close() }()
	ctx := t.Context()
	check := func(when string) {
		t.Helper()
		if err := controller.ConfigGet(ctx, "maxmemory-policy").Err(); err != nil {
			t.Fatalf("%s: CONFIG GET as the controller: %v", when, err)
		}
		if err := controller.FunctionList(ctx, redis.FunctionListQuery{}).Err(); err != nil {
			t.Fatalf("%s: FUNCTION LIST as the controller: %v", when, err)
		}
		if err := controller.FlushAll(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Fatalf("%s: FLUSHALL as the controller = %v, want NOPERM", when, err)
		}
	}
	check("started with the aclfile")
	srv.Stop()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	check("after a restart")

	for _, args := range [][]string{
		{"controller-user", "--aclfile"},
		{"controller-user", "--password-file", passwordFile},
	} {
		if r := lockctl(t, args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, r.code)
		}
	}
}
