package agentclients_test

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// output collects what a process writes, line by line with the time each
// line came: the kill test measures a hand-off by when a waiter prints.
type output struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
	lines   []line
}

type line struct {
	text string
	at   time.Time
}

func (o *output) Write(p []byte) (int, error) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.all.Write(p)
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		o.lines = append(o.lines, line{text: string(o.partial[:i]), at: now})
		o.partial = o.partial[i+1:]
	}
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.all.String()
}

// first is the first whole line that starts with prefix.
func (o *output) first(prefix string) (line, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range o.lines {
		if strings.HasPrefix(l.text, prefix) {
			return l, true
		}
	}
	return line{}, false
}

// process is a running example.
type process struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr *output
	done           chan struct{} // closed when it has exited
}

// start starts cmd as the example name; it is killed when t ends if it
// still runs then.
func start(t *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{name: name, cmd: cmd, stdout: &output{}, stderr: &output{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }() // the exit code is read from ProcessState
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // fails only when it has exited: nothing to do then
		<-p.done
	})
	return p
}

// waitLine waits for the process's first stdout line that starts with
// prefix and returns it.
func (p *process) waitLine(t *testing.T, prefix string, within time.Duration) line {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(5 * time.Millisecond) {
		if l, ok := p.stdout.first(prefix); ok {
			return l
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) without printing %q; stdout:\n%s\nstderr:\n%s", p.name, p.cmd.ProcessState, prefix, p.stdout, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s printed no %q within %v; stdout:\n%s\nstderr:\n%s", p.name, prefix, within, p.stdout, p.stderr)
		}
	}
}

// succeed waits for the process to exit and fails t unless it exits 0.
func (p *process) succeed(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("%s still runs after %v; stdout:\n%s\nstderr:\n%s", p.name, within, p.stdout, p.stderr)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("%s exited %d; stdout:\n%s\nstderr:\n%s", p.name, code, p.stdout, p.stderr)
	}
}
