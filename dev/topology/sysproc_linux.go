package topology

import "syscall"

// sysProcAttr kills a child with its parent: a test binary that dies (a
// panic, a timeout) leaves no Encore process behind on the machine.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
