//go:build race

package psp

// raceEnabled: under the race detector sync.Pool drops a share of what is
// put back, on purpose, so reuse cannot be counted.
const raceEnabled = true
