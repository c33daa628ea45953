package bench

import "syscall"

// sysProcAttr has the kernel SIGKILL the server if the benchmark process
// dies without closing it, so no redis-server outlives a killed run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
