package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The workers: library and lockctl workers per tenant, their logs read
// into events, and the holder paused past its TTL.

// runWorkers runs the library workers and the lockctl worker for duration,
// pausing one holder midway and printing the table every second. It returns
// ctx's error if the demo was interrupted.
func (d *demo) runWorkers(ctx context.Context, st *stack, bin string, duration time.Duration, workers int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	d.aboutTo = make(chan string, 64)
	d.step("starting %d library workers (pkg/kube) in each of %s and a lockctl worker in %s; each increments its namespace's ledger under its namespace's lock",
		workers, strings.Join(tenants, ", "), tenants[0])
	var libs []*exec.Cmd // tenants[0]'s: the ones pauseOneHolder may pause
	for i, ns := range tenants {
		for j := range workers {
			name := fmt.Sprintf("%s-%d", ns[:3], j+1)
			cmd, err := d.spawnWorker(self, ns, name, "worker", "--name", name, "--namespace", ns, "--kubeconfig", st.kubeconfig, "--store", st.storeAddr)
			if err != nil {
				return err
			}
			if i == 0 {
				libs = append(libs, cmd)
			}
		}
	}
	runCtx, stopRun := context.WithTimeout(ctx, duration)
	defer stopRun()
	var wg sync.WaitGroup
	wg.Go(func() { d.lockctlLoop(runCtx, filepath.Join(bin, "lockctl"), st.kubeconfig, self, st.storeAddr) })
	wg.Go(func() { d.pauseOneHolder(runCtx, libs, duration/3) })

	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	start := time.Now()
	for done := false; !done; {
		select {
		case <-runCtx.Done():
			done = true
		case <-ticker.C:
			d.table(ctx, st.env.Client, time.Since(start))
		}
	}
	d.stopWorkers()
	wg.Wait()
	return ctx.Err()
}

// stopWorkers stops the library workers: each finishes its round (a write
// that reached the ledger is reported) and exits on SIGTERM, and every
// report is read before the summary counts them. A worker still running
// after 10 s is killed.
func (d *demo) stopWorkers() {
	for _, c := range d.workers {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	read := make(chan struct{})
	go func() { d.consumers.Wait(); close(read) }()
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		for _, c := range d.workers {
			_ = c.Process.Kill()
		}
		<-read
	}
}

// spawnLogged starts a background process writing to logPath, killed at cleanup.
func (d *demo) spawnLogged(logPath string, env []string, name string, args ...string) error {
	logf, err := os.Create(logPath) //nolint:gosec // G304: a log file in the demo's own temporary directory
	if err != nil {
		return err
	}
	cmd := background(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close() // nothing was written to it; the start's error is the one to report
		return fmt.Errorf("starting %s: %w (run `make demo`, which builds it)", name, err)
	}
	d.onCleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logf.Close() // the process that wrote to it has exited; the log is only for reading
	})
	return nil
}

// background is how the demo starts its long-running processes, the
// operator and the workers: they are killed with the demo (parent-death
// signal), and stopped by its cleanup.
func background(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...) //nolint:gosec,noctx // G204: the demo's own programs (bin/manager, os.Executable()); noctx: stopped by the demo's cleanup (SIGTERM, then SIGKILL), not by a context's bare SIGKILL
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// spawnWorker starts worker name of namespace ns, whose stdout events feed
// the table.
func (d *demo) spawnWorker(self, ns, name string, args ...string) (*exec.Cmd, error) {
	d.mu.Lock()
	d.stats[name] = &workerStats{namespace: ns}
	d.mu.Unlock()
	cmd := background(self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d.onCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	d.workers = append(d.workers, cmd)
	d.consumers.Go(func() { d.consume(out) })
	return cmd, nil
}

func (d *demo) consume(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		d.record(e)
	}
}

func (d *demo) record(e event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats[e.Worker]
	if s == nil {
		return // not a worker the demo started
	}
	switch e.Kind {
	case "acquired":
		s.acquired++
		s.lastFence = e.Fence
	case "about-to-write":
		if d.armed {
			select {
			case d.aboutTo <- e.Worker:
			default:
			}
		}
	case "write":
		if e.Accepted {
			s.accepted++
		} else {
			s.refused++
		}
	case "lost":
		s.lost++
	case "error":
		printf(d.out, "    %s: %s\n", e.Worker, e.Detail)
	}
}

// lockctlLoop runs `lockctl run -- demo write-once` again and again, in
// tenants[0].
func (d *demo) lockctlLoop(ctx context.Context, lockctl, kubeconfig, self, store string) {
	ns := tenants[0]
	d.mu.Lock()
	d.stats["lockctl"] = &workerStats{namespace: ns}
	d.mu.Unlock()
	for ctx.Err() == nil {
		args := []string{"run", "--kubeconfig", kubeconfig, "--lock", ns + "/" + lockName,
			"--identity", "lockctl", "--wait", "20s", "--", self, "write-once", "--name", "lockctl", "--namespace", ns, "--store", store}
		cmd := exec.CommandContext(ctx, lockctl, args...) //nolint:gosec // G204: bin/lockctl, which make demo builds, running the demo itself
		// At the end, SIGTERM: lockctl stops waiting, or forwards it to
		// write-once, which finishes its round; killed only after 10 s.
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return
		}
		if err := cmd.Start(); err != nil {
			printf(d.out, "    lockctl: %v (run `make demo`, which builds bin/lockctl)\n", err)
			return
		}
		d.consume(out)
		_ = cmd.Wait()
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// pauseOneHolder waits until `after`, then SIGSTOPs the next library worker
// that announces a write, for longer than the TTL, and resumes it.
func (d *demo) pauseOneHolder(ctx context.Context, libs []*exec.Cmd, after time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(after):
	}
	d.mu.Lock()
	d.armed = true // from now on: announcements are fresh
	d.mu.Unlock()
	for {
		var name string
		select {
		case <-ctx.Done():
			return
		case name = <-d.aboutTo:
		}
		var idx int
		if _, err := fmt.Sscanf(name, tenants[0][:3]+"-%d", &idx); err != nil || idx < 1 || idx > len(libs) {
			continue // lockctl's child or another tenant's worker: pause one of tenants[0]'s library workers
		}
		p := libs[idx-1].Process
		_ = p.Signal(syscall.SIGSTOP)
		d.mu.Lock()
		d.armed = false
		d.pausedAt = name
		d.stats[name].paused = true
		d.mu.Unlock()
		printf(d.out, "==> paused %s (SIGSTOP) while it held the lock and was about to write; its TTL is %v\n", name, ttl)
		select {
		case <-ctx.Done():
		case <-time.After(2*ttl + time.Second):
		}
		_ = p.Signal(syscall.SIGCONT)
		d.mu.Lock()
		d.stats[name].paused = false
		d.mu.Unlock()
		printf(d.out, "==> resumed %s: its lease ended at its local deadline; its late write carries an old fence\n", name)
		return
	}
}
