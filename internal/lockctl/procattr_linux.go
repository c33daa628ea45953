package lockctl

import "syscall"

// childProcAttr makes the child the leader of a new process group and has
// the kernel SIGKILL it when the thread that started it exits (see
// startChild).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
