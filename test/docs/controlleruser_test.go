package docs_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/redisacl"
)

// controllerLinePrefix starts every controller-user line the docs carry.
const controllerLinePrefix = "ACL SETUSER " + redisacl.ControllerUser + " "

// TestControllerUserLines: every "ACL SETUSER redlease-operator" line in
// README.md and docs/*.md is one redisacl.ControllerSetUser renders (with
// PASSWORD for the password), so a command the controller starts or stops
// sending changes the docs too; docs/operator.md carries the line of each
// mode (README's quick start needs none: its Redis gets the controller's
// user from an aclfile, and README points there for your own Redis).
func TestControllerUserLines(t *testing.T) {
	rendered := map[string]redisacl.ControllerModes{}
	for _, guard := range []bool{false, true} {
		for _, isolation := range []bool{false, true} {
			for _, cluster := range []bool{false, true} {
				for _, functions := range []bool{false, true} {
					m := redisacl.ControllerModes{Guard: guard, Isolation: isolation, Cluster: cluster, Functions: functions}
					line, err := redisacl.ControllerSetUser("PASSWORD", m)
					if err != nil {
						t.Fatal(err)
					}
					rendered[line] = m
				}
			}
		}
	}
	want := map[string][]redisacl.ControllerModes{
		"docs/operator.md": {
			{Guard: true, Isolation: true, Functions: true}, {Guard: true, Functions: true}, {Isolation: true, Functions: true}, {Functions: true}, {},
			{Guard: true, Isolation: true, Cluster: true, Functions: true},
		},
	}
	docs := userDocs(t)
	for page, text := range docs {
		var found []redisacl.ControllerModes
		for i, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, controllerLinePrefix) {
				continue
			}
			m, ok := rendered[line]
			if !ok {
				t.Errorf("%s:%d: %q is not a line the code renders; the nearest:\n%s", page, i+1, line, nearest(line, rendered))
				continue
			}
			found = append(found, m)
		}
		for _, m := range want[page] {
			if !slices.Contains(found, m) {
				line, _ := redisacl.ControllerSetUser("PASSWORD", m)
				t.Errorf("%s lacks the controller user's line for %+v:\n%s", page, m, line)
			}
		}
	}
	for page := range want {
		if _, ok := docs[page]; !ok {
			t.Errorf("%s: not found", page)
		}
	}
}

// nearest is the rendered line sharing the longest prefix with line.
func nearest(line string, rendered map[string]redisacl.ControllerModes) string {
	best, n := "", -1
	for r := range rendered {
		i := 0
		for i < len(r) && i < len(line) && r[i] == line[i] {
			i++
		}
		if i > n {
			best, n = fmt.Sprintf("%s (differs at byte %d)", r, i), i
		}
	}
	return best
}
