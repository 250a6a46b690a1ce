//go:build unix

package rehearsal

import "syscall"

// raiseFileLimit lifts the process's open-file limit towards want (every
// queue socket is a file): the soft limit up to the hard one, and the hard
// one too where the process may (CAP_SYS_RESOURCE). It returns the soft
// limit in force afterwards.
func raiseFileLimit(want uint64) uint64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 1024
	}
	if l.Cur >= want {
		return l.Cur
	}
	if l.Max < want {
		raised := syscall.Rlimit{Cur: want, Max: want}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			return want
		}
	}
	cur := min(want, l.Max)
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: cur, Max: l.Max}) == nil {
		return cur
	}
	return l.Cur
}
