package election_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/internal/kubetest"
)

// TestMain runs the helper process when the test binary was re-executed as
// one (helper_test.go), else the tests with a shared API server for those
// that need one; after them it fails the run if a goroutine outlived its
// test.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain())
	}
	ctrllog.SetLogger(logr.Discard())
	code := kubetest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}
