//go:build race

package gate_test

// raceEnabled shortens the heaviest loops under the race detector, which
// slows every scan about five times.
const raceEnabled = true
