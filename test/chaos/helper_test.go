package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/election"
	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// Helper processes are this test binary re-executed with helperEnv set to a
// role: a lock holder the test can SIGSTOP or SIGKILL like a real process.
// They report on stdout, one JSON event per line.
const helperEnv = "CHAOS_HELPER"

type event struct {
	Kind  string `json:"kind"` // "acquired", "holding", "about-to-write", "claim", "write", "first", "done", "error"
	Claim *Claim `json:"claim,omitempty"`
	Write *Write `json:"write,omitempty"`
	Error string `json:"error,omitempty"`
	// Quarantine and Waited (ns) report a quarantined acquisition: the
	// quarantine left that the server reported, and how long it took.
	Quarantine time.Duration `json:"quarantine,omitempty"`
	Waited     time.Duration `json:"waited,omitempty"`
	// Ended is why a claim's lease ended (its Err), for the test log.
	Ended string `json:"ended,omitempty"`
}

func emit(e event) {
	b, _ := json.Marshal(e)
	fmt.Println(string(b))
}

// helper is a running helper process.
type helper struct {
	cmd    *exec.Cmd
	events chan event
}

// startHelper runs role with its parameters in the environment.
func startHelper(t *testing.T, role string, env map[string]string) *helper {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$") //nolint:gosec // G204: re-executes this test binary (os.Args[0]) as a helper process
	cmd.Env = append(os.Environ(), helperEnv+"="+role)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, events: make(chan event, 64)}
	go func() {
		defer close(h.events)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				h.events <- e
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return h
}

// next waits for the helper's next event of kind.
func (h *helper) next(t *testing.T, kind string, within time.Duration) event {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case e, ok := <-h.events:
			if !ok {
				t.Fatalf("helper exited before %q", kind)
			}
			if e.Kind == "error" {
				t.Fatalf("helper: %s", e.Error)
			}
			if e.Kind == kind {
				return e
			}
		case <-deadline:
			t.Fatalf("no %q from the helper within %v", kind, within)
		}
	}
}

func (h *helper) signal(sig syscall.Signal) { _ = h.cmd.Process.Signal(sig) }

func runHelper(role string) int {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS"), ContextTimeoutEnabled: true})
	defer func() { _ = client.Close() }() // the helper process exits next; its connections go with it
	ttl, _ := time.ParseDuration(os.Getenv("TTL"))
	key := os.Getenv("KEY")
	switch role {
	case "paused-writer":
		return pausedWriter(ctx, client, key, ttl, os.Getenv("NAIVE") == "1")
	case "breakglass-holder":
		return breakGlassHolder(ctx, client, key, ttl)
	case "paused-leader":
		return pausedLeader(ctx, client, key, ttl)
	case "acquire-loop":
		return acquireLoop(ctx, client, key, ttl)
	case "line-waiter":
		return lineWaiter(ctx, client, key, ttl)
	case "naive-line-waiter":
		return naiveLineWaiter(ctx, client, key, ttl)
	case "naive-counting-waiter":
		return naiveCountingWaiter(ctx, client, key, ttl, false)
	case "history-blind-waiter":
		return naiveCountingWaiter(ctx, client, key, ttl, true)
	case "multi-writer":
		return multiWriter(ctx, client, key, ttl, os.Getenv("NAIVE") == "1")
	case "rw-loop":
		return rwLoop(ctx, client, key, ttl, os.Getenv("SHARED") == "1")
	case "naive-rw-loop":
		return naiveRWLoop(ctx, client, key, ttl, os.Getenv("SHARED") == "1")
	case "permit-loop":
		return permitLoop(ctx, client, key, ttl)
	case "naive-counter-loop":
		return naiveCounterLoop(ctx, client, key, ttl)
	case "naive-expiring-loop":
		return naiveExpiringLoop(ctx, client, key, ttl)
	case "quarantine-holder":
		return quarantineHolder(ctx, client, key, ttl)
	case "quarantine-contender":
		return quarantineContender(ctx, client, key, ttl)
	case "naive-setnx-loop":
		emit(event{Kind: "acquired"})
		for i := 0; ; i++ {
			if client.SetNX(ctx, key, "x", 0).Val() {
				time.Sleep(time.Duration(i%3) * time.Millisecond) // the gap between the two commands
				client.PExpire(ctx, key, ttl)
			}
			time.Sleep(time.Millisecond)
		}
	}
	emit(event{Kind: "error", Error: "unknown role " + role})
	return 2
}

// acquireLoop takes the lock again and again until killed.
func acquireLoop(ctx context.Context, client *redis.Client, key string, ttl time.Duration) int {
	l, err := lock.New(client, lock.WithTTL(ttl))
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	for first := true; ; { //nolint:gosec // G118: runs until the test SIGKILLs this helper process (that is the crash under test; cleanup and Pdeathsig kill it too); ctx is Background, nothing cancels it
		if lease, err := l.Acquire(ctx, key); err == nil {
			if first {
				emit(event{Kind: "acquired"})
				first = false
			}
			time.Sleep(time.Millisecond)
			_ = lease.Release(ctx)
		}
	}
}

// pausedWriter acquires, reads a counter from the store at STORE, announces
// it is about to write (the test SIGSTOPs it there), then writes the counter
// plus one with its fence, and reports its claim. The naive variant has no local deadline: it believes it holds
// the lock until a renewal tells it otherwise, and writes to a plain key.
func pausedWriter(ctx context.Context, client *redis.Client, key string, ttl time.Duration, naive bool) int {
	store := redis.NewClient(&redis.Options{Addr: os.Getenv("STORE")})
	defer func() { _ = store.Close() }() // the helper process exits next; its connections go with it
	id := "paused-" + strconv.Itoa(os.Getpid())
	if naive {
		from := Mono()
		if !client.SetNX(ctx, key, id, ttl).Val() {
			emit(event{Kind: "error", Error: "naive: lock held"})
			return 1
		}
		emit(event{Kind: "acquired"})
		n, _ := store.Get(ctx, "ledger").Int() // read-modify-write of a counter
		emit(event{Kind: "about-to-write"})
		time.Sleep(100 * time.Millisecond) // preparing the write: the pause lands here
		err := store.Set(ctx, "ledger", n+1, 0).Err()
		emit(event{Kind: "write", Write: &Write{Client: id, Resource: "ledger", At: Mono(), Accepted: err == nil}})
		// It believed it held the lock until the write was done.
		emit(event{Kind: "claim", Claim: &Claim{Client: id, Key: key, From: from, Until: Mono()}})
		return 0
	}
	l, err := lock.New(client, lock.WithTTL(ttl), lock.WithIdentity(id))
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	defer func() { _ = l.Close() }() // nothing is held by then (the lease ended, see Done, or was never taken) and the process exits next
	lease, err := l.TryAcquire(ctx, key)
	if err != nil {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	from := Mono()
	emit(event{Kind: "acquired"})
	fs := fence.NewRedisStore(store, "")
	if lease.Err() == nil {
		_, v, _ := fs.Read(ctx, "ledger") // read-modify-write of a counter
		n, _ := strconv.Atoi(v)
		emit(event{Kind: "about-to-write"})
		time.Sleep(100 * time.Millisecond) // preparing the write: the pause lands here
		err := fs.Write(ctx, "ledger", lease.Fence(), strconv.Itoa(n+1))
		if err != nil && !errors.Is(err, fence.ErrStale) {
			emit(event{Kind: "error", Error: err.Error()})
			return 1
		}
		emit(event{Kind: "write", Write: &Write{Client: id, Resource: "ledger", Fence: lease.Fence(), At: Mono(), Accepted: err == nil}})
	}
	<-lease.Done() // the deadline passed while paused: the timer fires on resume
	emit(event{Kind: "claim", Claim: &Claim{Client: id, Key: key, Fence: lease.Fence(), From: from, Until: MonoAt(lease.ValidUntil())}})
	return 0
}

// pausedLeader is pausedWriter as an elected leader: it wins an election,
// reads the counter, announces the write (the test SIGSTOPs it there), then
// writes with its fence as long as its leader context is live.
func pausedLeader(ctx context.Context, client *redis.Client, key string, ttl time.Duration) int {
	store := redis.NewClient(&redis.Options{Addr: os.Getenv("STORE")})
	defer func() { _ = store.Close() }() // the helper process exits next; its connections go with it
	fs := fence.NewRedisStore(store, "")
	id := "leader-" + strconv.Itoa(os.Getpid())
	err := election.Run(ctx, election.Config{Client: client, Key: key, Identity: id, TTL: ttl, ReleaseOnCancel: true,
		Callbacks: election.Callbacks{OnStartedLeading: func(lctx context.Context, token uint64) {
			from := Mono()
			emit(event{Kind: "acquired"})
			_, v, _ := fs.Read(lctx, "ledger")
			n, _ := strconv.Atoi(v)
			emit(event{Kind: "about-to-write"})
			time.Sleep(100 * time.Millisecond) // preparing the write: the pause lands here
			werr := fs.Write(context.Background(), "ledger", token, strconv.Itoa(n+1))
			emit(event{Kind: "write", Write: &Write{Client: id, Resource: "ledger", Fence: token, At: Mono(), Accepted: werr == nil}})
			<-lctx.Done() // seen only after the process runs again
			emit(event{Kind: "claim", Claim: &Claim{Client: id, Key: key, Fence: token, From: from, Until: Mono()}})
		}}})
	if err != nil && !errors.Is(err, election.ErrLeadershipLost) {
		emit(event{Kind: "error", Error: err.Error()})
		return 1
	}
	return 0
}
