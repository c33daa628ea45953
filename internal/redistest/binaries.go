package redistest

import (
	"os/exec"
	"strings"
	"testing"
)

// binaries are the programs the harness runs: servers, Sentinels, and
// redis-cli to create clusters.
var binaries = []string{"redis-server", "redis-sentinel", "redis-cli"}

// RequireBinaries fails the test when redis-server, redis-sentinel or
// redis-cli is not on PATH. It fails instead of skipping: a skipped safety
// test would let a run without Redis look green.
func RequireBinaries(t testing.TB) {
	t.Helper()
	if missing := missingBinaries(); len(missing) > 0 {
		t.Fatalf("redistest: %s not found on PATH; run `make test` or hack/install-redis.sh to install Debian's redis-server, redis-sentinel and redis-tools",
			strings.Join(missing, ", "))
	}
}

func missingBinaries() []string {
	var missing []string
	for _, b := range binaries {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}
