//go:build !race

package psp

const raceEnabled = false
