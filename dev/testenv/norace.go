//go:build !race

package testenv

// Race says the test binary runs under the race detector (see race.go).
const Race = false
