//go:build race

package notify_test

// raceEnabled: under the race detector sync.Pool drops a share of what is
// put back, on purpose, so reuse cannot be counted.
const raceEnabled = true
