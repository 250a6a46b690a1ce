//go:build race

package testenv

// Race says the test binary runs under the race detector, which slows every
// loop several times and makes sync.Pool drop a share of what is put back
// (on purpose), so a test can shorten its heaviest loops or skip counting
// reuse.
const Race = true
