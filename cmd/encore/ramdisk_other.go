//go:build !linux

package main

// freeRAMDisk reports no RAM disk: only Linux's tmpfs is recognised.
func freeRAMDisk(string) uint64 { return 0 }
