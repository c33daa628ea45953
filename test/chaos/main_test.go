package chaos

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

var (
	full = flag.Bool("chaos.full", false, "run every scenario with its full budget (make test-chaos); default is the short pass of make test")
	seed = flag.Uint64("chaos.seed", 0, "random seed to replay a run (0: from the clock; printed either way)")
)

// rounds returns short in the short pass and long with -chaos.full.
func rounds(short, long int) int {
	if *full {
		return long
	}
	return short
}

// rng returns a generator seeded from -chaos.seed, logged so a failure replays.
func rng(t *testing.T) *rand.Rand {
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -chaos.seed=%d)", s, s)
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15)) //nolint:gosec // G404: a seeded generator so a chaos run replays from -chaos.seed; it needs no cryptographic randomness
}

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role))
	}
	flag.Parse()
	if *full {
		fmt.Println("chaos: full budget")
	}
	os.Exit(m.Run())
}
