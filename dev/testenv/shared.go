package testenv

import (
	"os"
	"strconv"
	"testing"
)

// AdminURL is the test cluster's URL for a login that may create databases,
// for test helpers built on this package (temporaltest) that keep
// databases of their own.
func AdminURL(tb testing.TB) string {
	tb.Helper()
	requireMain(tb)
	admin, _, err := servers()
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return admin
}

// PackageTag names the package under test, for names of databases that
// must not collide with another package's run on the same cluster.
func PackageTag() string { return packageTag() }

// AtExit runs f once the package's tests have ended (in Main, after m.Run).
func AtExit(f func()) { atExit(f) }

// IntFromEnv is the whole number in the environment variable name, or def
// when it is unset, so that a benchmark's size can be turned up from the
// command line; a value that is not a number fails tb.
func IntFromEnv(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		tb.Fatalf("testenv: %s: %v", name, err)
	}
	return n
}
