package election_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/election"
	"github.com/redlease/redlease/pkg/fence"
)

// The helper process is this test binary re-executed with helperEnv=1: it
// runs one candidate (election.Run) and prints what happens, one event per
// line, so that a test can SIGKILL or SIGSTOP a real leader process.
const (
	helperEnv     = "ELECTION_TEST_HELPER"
	fencedRecord  = "election-output" // the fenced store's resource the leaders write
	writeInterval = 20 * time.Millisecond
)

// helperMain is the helper process. Lines it prints:
//
//	leader <identity>              OnNewLeader
//	started <fence>                OnStartedLeading
//	write ok|refused <fence> ...   a write to the fenced store while leading (every 20ms)
//	ctx-done <cause>               the leader's context ended
//	late-write ok|refused ...      one more write after that: a write prepared before a pause
//	stopped                        OnStoppedLeading
//	returned <error>               Run returned
//
// Its writes ignore the leader's context on purpose, as code that prepared a
// write before a pause would: only the fenced store can refuse them.
func helperMain() int {
	ttl, err := time.ParseDuration(os.Getenv("ELECTION_TTL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	id := os.Getenv("ELECTION_ID")
	client := redis.NewClient(&redis.Options{Addr: os.Getenv("ELECTION_REDIS")})
	defer func() { _ = client.Close() }() // the process exits next: nothing left to tell
	store := fence.NewRedisStore(client, "")

	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		// With the test's end of the pipe gone there is no one left to tell.
		_, _ = fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	write := func(kind string, token uint64) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := store.Write(ctx, fencedRecord, token, id)
		var stale *fence.StaleError
		switch {
		case err == nil:
			say("%s ok %d", kind, token)
		case errors.As(err, &stale):
			say("%s refused %d current=%d", kind, token, stale.Current)
		default:
			say("%s error %d %v", kind, token, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err = election.Run(ctx, election.Config{
		Client: client, Key: os.Getenv("ELECTION_KEY"), Identity: id, TTL: ttl, ReleaseOnCancel: true,
		Callbacks: election.Callbacks{
			OnNewLeader: func(leader string) { say("leader %s", leader) },
			OnStartedLeading: func(ctx context.Context, token uint64) {
				say("started %d", token)
				tick := time.NewTicker(writeInterval)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						say("ctx-done %v", context.Cause(ctx))
						write("late-write", token)
						return
					case <-tick.C:
						write("write", token)
					}
				}
			},
			OnStoppedLeading: func() { say("stopped") },
		},
	})
	say("returned %v", err)
	return 0
}

// child is one helper process.
type child struct {
	id     string
	cmd    *exec.Cmd
	stderr bytes.Buffer
	read   chan struct{} // closed when stdout reached EOF

	mu    sync.Mutex
	lines []line
}

// line is one line a child printed, stamped when the test read it.
type line struct {
	child string
	text  string
	at    time.Time
}

// startChild starts a helper candidate; every line it prints goes to
// events too. It is SIGKILLed (and reaped) when the test ends.
func startChild(t *testing.T, srv *redistest.Server, key, id string, ttl time.Duration, events chan<- line) *child {
	t.Helper()
	c := &child{id: id, read: make(chan struct{})}
	c.cmd = exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$") //nolint:gosec // G204: re-executes this test binary (os.Args[0]) as the helper candidate
	c.cmd.Env = append(os.Environ(), helperEnv+"=1", "ELECTION_REDIS="+srv.Addr(),
		"ELECTION_KEY="+key, "ELECTION_ID="+id, "ELECTION_TTL="+ttl.String())
	c.cmd.Stderr = &c.stderr
	// Killed by the kernel if the test binary dies without its cleanups.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting the helper process: %v", err)
	}
	go func() {
		defer close(c.read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := line{child: id, text: sc.Text(), at: time.Now()}
			c.mu.Lock()
			c.lines = append(c.lines, l)
			c.mu.Unlock()
			select {
			case events <- l:
			default: // the test only waits for some lines; history keeps all
			}
		}
	}()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("%s printed:\n%s\nstderr:\n%s", id, c.text(0), c.stderr.String())
		}
	})
	return c
}

// kill SIGKILLs the child (continuing it first if stopped) and reaps it.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGCONT)
	_ = c.cmd.Process.Kill()
	<-c.read
	_ = c.cmd.Wait()
}

func (c *child) signal(sig syscall.Signal) {
	if err := c.cmd.Process.Signal(sig); err != nil {
		panic(err)
	}
}

// history returns the lines printed from index from on.
func (c *child) history(from int) []line {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]line(nil), c.lines[min(from, len(c.lines)):]...)
}

func (c *child) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

func (c *child) text(from int) string {
	var b strings.Builder
	for _, l := range c.history(from) {
		fmt.Fprintf(&b, "  %s %s\n", l.at.Format("15:04:05.000"), l.text)
	}
	return b.String()
}

// await reads events until one satisfies match, for at most d.
func await(t *testing.T, events <-chan line, d time.Duration, what string, match func(line) bool) line {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l := <-events:
			if match(l) {
				return l
			}
		case <-deadline:
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

func startedFence(l line) (uint64, bool) {
	rest, ok := strings.CutPrefix(l.text, "started ")
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseUint(rest, 10, 64)
	return f, err == nil
}

// TestCrashedAndPausedLeaders runs three candidates as separate processes.
// The first leader is SIGKILLed: it never releases, and another candidate
// leads within the TTL (plus a margin) with a larger fence, after every
// survivor saw the change in OnNewLeader. That leader is then SIGSTOPped past
// its TTL: the third candidate takes over and writes to a fenced store; when
// the paused one resumes, its context is cancelled with a lost lease and
// every write it still makes, including one prepared before the pause, is
// refused by the store.
func TestCrashedAndPausedLeaders(t *testing.T) {
	srv := redistest.StartStandalone(t)
	const (
		key = "crash"
		ttl = time.Second
	)
	events := make(chan line, 4096)
	children := map[string]*child{}
	for _, id := range []string{"p1", "p2", "p3"} {
		children[id] = startChild(t, srv, key, id, ttl, events)
	}

	l1, l2, f2 := crashTheFirstLeader(t, events, children, ttl)
	var l3 *child
	for id, c := range children {
		if id != l1.id && id != l2.id {
			l3 = c
		}
	}
	// Both survivors report the new leader though nobody sent "released".
	for _, c := range []*child{l2, l3} {
		waitLine(t, c, 2*time.Second, "leader "+l2.id)
	}
	await(t, events, 5*time.Second, "the second leader's write", func(l line) bool {
		return l.child == l2.id && l.text == fmt.Sprintf("write ok %d", f2)
	})

	f3 := pauseTheSecondLeader(t, events, l2, l3, f2, ttl)
	from := l2.count() // what it printed before the pause is all read by now
	l2.signal(syscall.SIGCONT)
	waitLine(t, l2, 5*time.Second, "returned "+election.ErrLeadershipLost.Error())
	checkResumedLeader(t, l2, from, f2)

	// The store holds the third leader's write.
	token, value, err := fence.NewRedisStore(srv.Client(t), "").Read(context.Background(), fencedRecord)
	if err != nil || token < f3 || value != l3.id {
		t.Errorf("fenced store holds token %d from %q (err %v), want ≥ %d from %s", token, value, err, f3, l3.id)
	}
	// The third saw both changes of leader.
	waitLine(t, l3, time.Second, "leader "+l3.id)
	if seen, want := observedLeaders(l3), []string{l1.id, l2.id, l3.id}; strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("%s observed leaders %q, want %q", l3.id, seen, want)
	}
}

// crashTheFirstLeader waits for the first leader and its first accepted
// write, SIGKILLs it, and checks that another candidate leads within the TTL
// (plus a margin) with a larger fence. It returns the killed leader, the new
// one and the new one's fence.
func crashTheFirstLeader(t *testing.T, events <-chan line, children map[string]*child, ttl time.Duration) (l1, l2 *child, f2 uint64) {
	t.Helper()
	const margin = 500 * time.Millisecond
	first := await(t, events, 10*time.Second, "a first leader", func(l line) bool { _, ok := startedFence(l); return ok })
	f1, _ := startedFence(first)
	l1 = children[first.child]
	await(t, events, 5*time.Second, "the first leader's write", func(l line) bool {
		return l.child == l1.id && l.text == fmt.Sprintf("write ok %d", f1)
	})

	killed := time.Now()
	l1.kill()
	second := await(t, events, ttl+5*time.Second, "a leader after the crash", func(l line) bool { _, ok := startedFence(l); return ok })
	f2, _ = startedFence(second)
	l2 = children[second.child]
	if d := second.at.Sub(killed); d > ttl+margin {
		t.Errorf("new leader %v after SIGKILL, want within TTL %v + %v", d, ttl, margin)
	} else {
		t.Logf("failover after SIGKILL: %v (TTL %v)", round(d), ttl)
	}
	if f2 <= f1 {
		t.Errorf("fence after the crash %d, not above %d", f2, f1)
	}
	return l1, l2, f2
}

// pauseTheSecondLeader SIGSTOPs l2 (leading with fence f2) past its TTL and
// checks that l3 takes over with a larger fence and writes. It returns l3's
// fence.
func pauseTheSecondLeader(t *testing.T, events <-chan line, l2, l3 *child, f2 uint64, ttl time.Duration) uint64 {
	t.Helper()
	paused := time.Now()
	l2.signal(syscall.SIGSTOP)
	third := await(t, events, ttl+5*time.Second, "a leader while the second is paused", func(l line) bool { _, ok := startedFence(l); return ok })
	f3, _ := startedFence(third)
	if third.child != l3.id || f3 <= f2 {
		t.Fatalf("while %s was paused, %s started with fence %d (want %s, above %d)", l2.id, third.child, f3, l3.id, f2)
	}
	t.Logf("failover after SIGSTOP: %v", round(third.at.Sub(paused)))
	await(t, events, 5*time.Second, "the third leader's write", func(l line) bool {
		return l.child == l3.id && l.text == fmt.Sprintf("write ok %d", f3)
	})
	if left := ttl + 200*time.Millisecond - time.Since(paused); left > 0 {
		time.Sleep(left)
	}
	return f3
}

// checkResumedLeader checks what l2, leading with fence f2 when it was
// paused, printed from line from on after resuming: its context ended with
// a lost lease, every write it made (the late one too) was refused, and it
// stopped leading.
func checkResumedLeader(t *testing.T, l2 *child, from int, f2 uint64) {
	t.Helper()
	var ctxDone, late, stopped bool
	for _, l := range l2.history(from) {
		switch {
		case strings.HasPrefix(l.text, "ctx-done "):
			ctxDone = true
			if !strings.Contains(l.text, "lease lost") {
				t.Errorf("%s: resumed leader's context ended with %q, want a lost lease", l2.id, l.text)
			}
		case strings.HasPrefix(l.text, "late-write "):
			late = true
			if !strings.HasPrefix(l.text, fmt.Sprintf("late-write refused %d current=", f2)) {
				t.Errorf("%s: late write: %q, want refused", l2.id, l.text)
			}
		case strings.HasPrefix(l.text, "write "):
			if !strings.HasPrefix(l.text, "write refused") {
				t.Errorf("%s wrote after resuming: %q", l2.id, l.text)
			}
		case l.text == "stopped":
			stopped = true
		}
	}
	if !ctxDone || !late || !stopped {
		t.Errorf("%s after resuming: ctx-done %v, late write %v, stopped %v; printed:\n%s", l2.id, ctxDone, late, stopped, l2.text(from))
	}
}

// observedLeaders lists the leaders c reported in OnNewLeader, in order.
func observedLeaders(c *child) []string {
	var seen []string
	for _, l := range c.history(0) {
		if id, ok := strings.CutPrefix(l.text, "leader "); ok {
			seen = append(seen, id)
		}
	}
	return seen
}

// waitLine waits until c has printed a line starting with text.
func waitLine(t *testing.T, c *child, d time.Duration, text string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, l := range c.history(0) {
			if strings.HasPrefix(l.text, text) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print %q within %v; printed:\n%s", c.id, text, d, c.text(0))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
