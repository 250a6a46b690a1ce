//go:build !race

package notify_test

const raceEnabled = false
