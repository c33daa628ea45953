package lockctl

import (
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// groupPollInterval is how often a stopping group is checked for members
// left after the direct child has exited.
const groupPollInterval = 20 * time.Millisecond

// startChild starts cmd as the leader of a new process group, with a
// parent-death signal, and returns a channel that gets Wait's result.
//
// The group is what lockctl signals, so a shell's children stop with it
// rather than working on without the lock. The parent-death signal covers
// what lockctl cannot do itself: when it is SIGKILLed (or OOM-killed), the
// kernel kills its direct child.
//
// The kernel sends that signal when the thread that forked the child exits,
// not the process. The Go runtime ends a thread when a goroutine exits while
// locked to it, and any goroutine (a library's) may do so on any thread.
// Keeping this goroutine locked to the forking thread from Start until Wait
// returns keeps every other goroutine off that thread, so it cannot end while
// the child runs; unlocking afterwards returns the thread to the runtime
// instead of ending it.
func startChild(cmd *exec.Cmd) (<-chan error, error) {
	cmd.SysProcAttr = childProcAttr()
	started := make(chan error)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			exited <- cmd.Wait()
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}

// signalGroup sends sig to every process of the group pgid, then SIGCONT:
// a stopped member acts on sig only once continued. Members get stopped by
// SIGSTOP, and by SIGTTIN when they read the terminal, whose foreground
// group is lockctl's, not theirs.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	return err
}

// groupAlive reports whether any process of the group is left. A member
// that has exited but is not yet reaped by its new parent still counts:
// kill(2) cannot tell it from a live one, and the grace then ends the wait.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) != syscall.ESRCH
}

// stopGroup ends the group after a lost lease: SIGTERM now, SIGKILL once
// grace has passed, unless by then the direct child has exited and no member
// is left; a shell's children may outlive the shell and must not run on
// without the lock. It returns after the direct child has been reaped.
func stopGroup(pgid int, exited <-chan error, grace time.Duration) {
	_ = signalGroup(pgid, syscall.SIGTERM)
	deadline := time.After(grace)
	// The child's exit status is dropped: after a lost lease lockctl exits 4.
	select {
	case <-exited: //nolint:errcheck // see above
		if groupEmptyBefore(pgid, deadline) {
			return
		}
		_ = signalGroup(pgid, syscall.SIGKILL)
	case <-deadline:
		_ = signalGroup(pgid, syscall.SIGKILL)
		<-exited //nolint:errcheck // see above
	}
}

// groupEmptyBefore waits until no process of the group is left (true) or
// deadline fires (false).
func groupEmptyBefore(pgid int, deadline <-chan time.Time) bool {
	tick := time.NewTicker(groupPollInterval)
	defer tick.Stop()
	for groupAlive(pgid) {
		select {
		case <-deadline:
			return false
		case <-tick.C:
		}
	}
	return true
}
