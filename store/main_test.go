package store_test

import (
	"sync"
	"testing"

	"github.com/encore-tickets/encore/dev/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// raceTen starts ten calls of each (by index, 0 to 9) and one of rival
// at once, rival sixth so that it is neither first nor last to start, and
// counts the calls that succeeded. An error lost does not accept as the
// way a call loses the race fails the test.
func raceTen(t *testing.T, each func(i int) error, rival func() error, lost func(error) bool) (eachWon, rivalWon int) {
	t.Helper()
	errs := make([]error, 11)
	var wg sync.WaitGroup
	for i := range 11 {
		wg.Go(func() {
			switch {
			case i == 5:
				errs[i] = rival()
			case i < 5:
				errs[i] = each(i)
			default:
				errs[i] = each(i - 1)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case err == nil && i == 5:
			rivalWon++
		case err == nil:
			eachWon++
		case !lost(err):
			t.Errorf("call %d: %v", i, err)
		}
	}
	return eachWon, rivalWon
}
