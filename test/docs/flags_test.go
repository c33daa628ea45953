package docs_test

import (
	"flag"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/redlease/redlease/internal/lockctl"
)

// docFlag is a --flag as the docs write it.
var docFlag = regexp.MustCompile(`(?:^|[\s(\x60\[|])(--[a-z][a-z0-9-]*[a-z0-9])`)

// TestLockctlFlags: docs/lockctl.md names every flag of every lockctl
// command, and no flag lockctl lacks (the other tools' flags it quotes
// aside).
func TestLockctlFlags(t *testing.T) {
	have := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		c.InitDefaultVersionFlag()
		c.Flags().VisitAll(func(f *pflag.Flag) { have["--"+f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(lockctl.NewCommand(io.Discard, io.Discard))
	page := read(t, "docs/lockctl.md")
	var want []string
	for f := range have {
		if f != "--help" {
			want = append(want, f)
		}
	}
	if m := missing(want, contains(page)); len(m) > 0 {
		t.Errorf("docs/lockctl.md does not document the lockctl flags %v", m)
	}
	// Other tools' flags docs/lockctl.md quotes in their commands.
	others := map[string]bool{"--set": true, "--create-namespace": true, "--from-literal": true, "--from-file": true, "--patch-file": true, "--manifest": true}
	var named []string
	for _, m := range docFlag.FindAllStringSubmatch(page, -1) {
		named = append(named, m[1])
	}
	if m := missing(named, func(f string) bool { return have[f] || others[f] }); len(m) > 0 {
		t.Errorf("docs/lockctl.md names flags lockctl does not have: %v", m)
	}
}

// TestManagerFlags: docs/operator.md's flag table lists every flag of
// cmd/manager (controller-runtime's --zap-* included), and no other.
func TestManagerFlags(t *testing.T) {
	have := map[string]bool{}
	for _, m := range regexp.MustCompile(`flag\.\w+Var\(&f\.\w+,\s*"([a-z0-9-]+)"`).FindAllStringSubmatch(read(t, "cmd/manager/main.go"), -1) {
		have["--"+m[1]] = true
	}
	if len(have) < 20 {
		t.Fatalf("found %d flags in cmd/manager/main.go: the pattern no longer matches", len(have))
	}
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	(&zap.Options{}).BindFlags(zapFlags)
	zapFlags.VisitAll(func(f *flag.Flag) { have["--"+f.Name] = true })
	var documented []string
	for _, k := range tableKeys(read(t, "docs/operator.md")) {
		if strings.HasPrefix(k, "--") {
			documented = append(documented, k)
		}
	}
	var want []string
	for f := range have {
		want = append(want, f)
	}
	if m := missing(want, func(f string) bool { return strings.Contains(strings.Join(documented, " ")+" ", f+" ") }); len(m) > 0 {
		t.Errorf("docs/operator.md's flag table lacks the manager flags %v", m)
	}
	if m := missing(documented, func(f string) bool { return have[f] }); len(m) > 0 {
		t.Errorf("docs/operator.md's flag table lists flags the manager does not have: %v", m)
	}
}
