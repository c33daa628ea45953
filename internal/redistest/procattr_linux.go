package redistest

import "syscall"

// sysProcAttr makes the kernel SIGKILL the server when the test binary dies
// without running its cleanups (panic, os.Exit, a killed `go test`), so no
// server outlives the run. The kernel sends it when the OS thread that
// started the child exits; Go only ends a thread whose goroutine exits while
// locked to it, which the harness never does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
