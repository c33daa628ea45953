//go:build !linux

package redistest

import "syscall"

// sysProcAttr has no parent-death signal outside Linux; t.Cleanup remains the
// only thing stopping servers there.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
