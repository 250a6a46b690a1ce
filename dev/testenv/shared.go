package testenv

import "testing"

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
