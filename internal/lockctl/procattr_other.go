//go:build !linux

package lockctl

import "syscall"

// childProcAttr makes the child the leader of a new process group. There is
// no parent-death signal outside Linux: a SIGKILLed lockctl leaves its child
// running there.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
