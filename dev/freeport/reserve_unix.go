//go:build unix

package freeport

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// reserveDir holds one lock file per port handed out on this machine. It is
// fixed, not under TMPDIR, so processes with different temporary folders
// (a test binary and the servers it starts) still meet in it.
const reserveDir = "/tmp/encore-freeport"

// locks keeps each reserved port's lock file open: the lock lasts as long as
// the process, and the kernel drops it when the process ends, however it
// ends, so no file needs removing.
var locks = map[int]*os.File{}

// reserve takes port p for the rest of this process's life against every
// other process that takes ports here: an exclusive flock on the port's file.
// It reports false when another live process holds it. Where the folder
// cannot be used it reports true: the listen check still stands.
func reserve(p int) bool {
	if !reserveDirReady() {
		return true
	}
	f, err := os.OpenFile(filepath.Join(reserveDir, strconv.Itoa(p)), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	locks[p] = f
	return true
}

// reserveDirReady makes reserveDir once per process: sticky and open to
// every user, as /tmp is, so root's test run and a user's share it.
var reserveDirReady = sync.OnceValue(func() bool {
	if err := os.MkdirAll(reserveDir, 0o777); err != nil {
		return false
	}
	_ = os.Chmod(reserveDir, 0o777|os.ModeSticky)
	return true
})
