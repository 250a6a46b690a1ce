//go:build unix

package rehearsal

import "syscall"

// raiseFileLimit lifts the process's open-file limit towards want (every
// queue socket is a file): the soft limit up to the hard one, and the hard
// one too where the process may (root). A limit it cannot raise stays;
// sockets past it fail and their fans fall back to polling.
func raiseFileLimit(want uint64) {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil || l.Cur >= want {
		return
	}
	if l.Max < want {
		raised := syscall.Rlimit{Cur: want, Max: want}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			return
		}
	}
	l.Cur = min(want, l.Max)
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
}
