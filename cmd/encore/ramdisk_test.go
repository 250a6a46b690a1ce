package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTestDataGoesToARAMDiskOnlyWhenATmpfsWithRoomIsGiven(t *testing.T) {
	t.Parallel()
	require.Empty(t, testRAMDir("", "/a/.encore/test"), "an empty --ram-dir keeps the disk")
	require.Empty(t, testRAMDir(filepath.Join(t.TempDir(), "missing"), "/a/.encore/test"))
	if freeRAMDisk("/") == 0 {
		require.Empty(t, testRAMDir("/", "/a/.encore/test"), "a disk is no RAM disk")
	}
	if freeRAMDisk("/dev/shm") < minRAMDisk {
		t.Skip("no tmpfs with room at /dev/shm")
	}
	a := testRAMDir("/dev/shm", "/a/.encore/test")
	require.True(t, strings.HasPrefix(a, "/dev/shm/et-"), a)
	require.LessOrEqual(t, len(a), len("/tmp")+14, "short enough for the sockets of PostgreSQL clusters in tests' folders")
	require.Equal(t, a, testRAMDir("/dev/shm", "/a/.encore/test"), "one checkout keeps its cluster")
	require.NotEqual(t, a, testRAMDir("/dev/shm", "/b/.encore/test"), "two checkouts never share one")
}

func TestTheRAMDisksTemporaryFolderIsOpenToEveryUserAsTmpIs(t *testing.T) {
	t.Parallel()
	ram := filepath.Join(t.TempDir(), "ram")
	servers, tmp, err := prepareRAMDir(ram)
	require.NoError(t, err)
	require.Equal(t, ram, tmp)
	fi, err := os.Stat(tmp)
	require.NoError(t, err)
	require.Equal(t, os.ModeDir|os.ModeSticky|0o777, fi.Mode(), "the servers' user writes its clusters under TMPDIR")
	fi, err = os.Stat(servers)
	require.NoError(t, err)
	require.True(t, fi.IsDir())
}
