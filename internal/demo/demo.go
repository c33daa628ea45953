// Package demo is `make demo`: the whole product on this machine. It starts
// a control plane (etcd and kube-apiserver built from source), Redis
// servers and the operator, the way a platform team runs it: one
// ClusterLockStore with isolation ACL shared by two tenant namespaces, each
// with a DistributedLock of the same name. Workers — library workers
// through pkg/kube and a lockctl-wrapped command — take their namespace's
// lock in turn and increment that namespace's counter in a fenced store.
// Midway it pauses a holder past its TTL and shows its late write refused;
// at the end it shows that one tenant's credentials cannot touch the other
// tenant's lock. It prints a live table, a summary, and stops everything it
// started.
package demo

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/redlease/redlease/internal/kubetest"
)

const (
	storeName = "shared"
	lockName  = "settlement"
	ttl       = 2 * time.Second
	// tenantLabel is what the store's tenants.namespaceSelector matches.
	tenantLabel = "redlease.io/locks"
	// adminNamespace holds the controller's Redis password Secret, as a
	// platform team's Redis namespace would.
	adminNamespace = "redis"
	adminPassword  = "demo-admin-password"
)

// tenants are the two namespaces sharing the store; the first runs the
// lockctl worker and the paused holder.
var tenants = []string{"billing", "reports"}

// Main runs the demo, or one of its worker roles when re-executed.
func Main(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "worker":
			fs := flag.NewFlagSet("worker", flag.ExitOnError)
			name, kubeconfig, store, ns := fs.String("name", "", ""), fs.String("kubeconfig", "", ""), fs.String("store", "", ""), fs.String("namespace", "", "")
			lk := fs.String("lock", lockName, "")
			rounds := fs.Int("rounds", 0, "stop after this many acquisitions (0: never)")
			work := fs.Duration("work", 300*time.Millisecond, "time between the ledger's read and its write")
			_ = fs.Parse(args[1:])
			return runWorker(*name, *kubeconfig, *ns, *lk, *store, *rounds, *work)
		case "leader":
			fs := flag.NewFlagSet("leader", flag.ExitOnError)
			ns, lk := fs.String("namespace", "", ""), fs.String("lock", "", "")
			_ = fs.Parse(args[1:])
			return runLeader(*ns, *lk)
		case "intrude":
			fs := flag.NewFlagSet("intrude", flag.ExitOnError)
			ns, lk, other := fs.String("namespace", "", ""), fs.String("lock", "", ""), fs.String("other", "", "another tenant's key")
			otherNS, secret := fs.String("other-namespace", "", ""), fs.String("secret", "", "the credentials Secret's name there")
			_ = fs.Parse(args[1:])
			return runIntrude(*ns, *lk, *other, *otherNS, *secret)
		case "file-ledger":
			fs := flag.NewFlagSet("file-ledger", flag.ExitOnError)
			ns, lk, path := fs.String("namespace", "", ""), fs.String("lock", "", ""), fs.String("ledger", "", "the ledger file")
			rounds := fs.Int("rounds", 1, "")
			hold := fs.Duration("hold", 0, "how long each lease is kept after its write")
			_ = fs.Parse(args[1:])
			return runFileLedger(*ns, *lk, *path, *rounds, *hold)
		case "write-once":
			fs := flag.NewFlagSet("write-once", flag.ExitOnError)
			name, store, ns := fs.String("name", "", ""), fs.String("store", "", ""), fs.String("namespace", "", "")
			_ = fs.Parse(args[1:])
			return runWriteOnce(*name, *ns, *store)
		}
	}
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	keep := fs.Bool("keep", false, "leave everything running after the summary, until Ctrl-C")
	duration := fs.Duration("duration", 25*time.Second, "how long the workers run")
	workers := fs.Int("workers", 2, "library workers in each tenant namespace (plus one lockctl worker in the first)")
	binDir := fs.String("bin", "", "where manager and lockctl are (default: <repo>/bin, where make demo builds them)")
	_ = fs.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := &demo{out: os.Stdout, stats: map[string]*workerStats{}}
	if err := d.run(ctx, *binDir, *duration, *workers, *keep); err != nil {
		printf(os.Stderr, "demo: %v\n", err)
		d.cleanup()
		return 1
	}
	d.cleanup()
	return 0
}

type workerStats struct {
	namespace                         string
	acquired, accepted, refused, lost int
	lastFence                         uint64
	paused                            bool
}

type demo struct {
	out      io.Writer
	mu       sync.Mutex
	stats    map[string]*workerStats
	cleanups []func()
	workers  []*exec.Cmd // every library worker, stopped when the run ends
	// consumers read the library workers' reports, until each worker exits.
	consumers sync.WaitGroup
	aboutTo   chan string // workers announcing a write, once armed
	armed     bool
	pausedAt  string
}

// printf writes one of the demo's messages to the terminal. A failed write
// is deliberately dropped: the demo goes on and, above all, still stops
// everything it started; what it shows is no reason to leave processes
// behind.
func printf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}

func (d *demo) step(format string, args ...any) {
	printf(d.out, "==> "+format+"\n", args...)
}

func (d *demo) onCleanup(f func()) { d.cleanups = append(d.cleanups, f) }

func (d *demo) cleanup() {
	for i := len(d.cleanups) - 1; i >= 0; i-- {
		d.cleanups[i]()
	}
	d.cleanups = nil
}

func (d *demo) run(ctx context.Context, bin string, duration time.Duration, workers int, keep bool) error {
	if bin == "" {
		root, err := kubetest.RepoRoot()
		if err != nil {
			return err
		}
		bin = filepath.Join(root, "bin")
	}
	st, err := d.startStack(ctx, bin)
	if err != nil {
		return err
	}
	if err := d.runWorkers(ctx, st, bin, duration, workers); err != nil {
		return err
	}
	if err := d.summary(ctx, st.storeAddr); err != nil {
		return err
	}
	if err := d.showIsolation(ctx, st.env.Client); err != nil {
		return err
	}
	if keep {
		printf(d.out, "\nStill running (Ctrl-C to stop everything):\n  export KUBECONFIG=%s\n  %s get clstore,dlock -A\n  %s status %s/%s --kubeconfig %s\n",
			st.kubeconfig, filepath.Join(bin, "kubectl"), filepath.Join(bin, "lockctl"), tenants[0], lockName, st.kubeconfig)
		<-ctx.Done()
	}
	return nil
}
