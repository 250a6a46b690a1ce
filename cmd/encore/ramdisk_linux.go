package main

import "syscall"

// tmpfsMagic is the Linux statfs type of a tmpfs.
const tmpfsMagic = 0x01021994

// freeRAMDisk returns the bytes free on dir when it is a tmpfs, or 0.
func freeRAMDisk(dir string) uint64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != tmpfsMagic {
		return 0
	}
	return st.Bavail * uint64(st.Bsize)
}
