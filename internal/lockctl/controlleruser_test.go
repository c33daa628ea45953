package lockctl_test

import (
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/redisacl"
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
