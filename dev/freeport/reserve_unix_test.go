//go:build unix

package freeport

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// lockAsAnotherProcess holds port p's lock through a file description of its
// own, as another process's Take would, until the test ends.
func lockAsAnotherProcess(t *testing.T, p int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(reserveDir, 0o777))
	f, err := os.OpenFile(filepath.Join(reserveDir, strconv.Itoa(p)), os.O_RDONLY|os.O_CREATE, 0o666)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	t.Cleanup(func() { f.Close() })
}

func TestAPortAnotherProcessHandedOutIsNotHandedOutAgain(t *testing.T) {
	t.Parallel()
	mu.Lock()
	defer mu.Unlock()
	// A port this process has not handed out, in the range, free now.
	p := 0
	for c := lowest + 7; c < EphemeralLow(); c += 97 {
		if handedOut[c] || locks[c] != nil {
			continue
		}
		p = c
		break
	}
	require.NotZero(t, p)
	lockAsAnotherProcess(t, p)
	require.False(t, reserve(p), "port %d is held by another process", p)
	require.Nil(t, locks[p])
}

func TestAReservedPortStaysReservedWhileTheProcessLives(t *testing.T) {
	t.Parallel()
	ports, err := Take("127.0.0.1", 3)
	require.NoError(t, err)
	for _, p := range ports {
		f, err := os.Open(filepath.Join(reserveDir, strconv.Itoa(p)))
		require.NoError(t, err)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close()
		require.ErrorIs(t, err, syscall.EWOULDBLOCK, "another process cannot take port %d", p)
	}
}
