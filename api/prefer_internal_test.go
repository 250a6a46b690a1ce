package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAWaitPreferenceIsReadAmongOthersAndCapped(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"wait=5", 5 * time.Second},
		{"respond-async, wait=10", 10 * time.Second},
		{"Wait = 3 ; foo=bar", 3 * time.Second},
		{`wait="7"`, 7 * time.Second},
		{"wait=3600", maxBookingWait},
		{"wait=0", 0},
		{"wait=-4", 0},
		{"wait=soon", 0},
		{"handling=lenient", 0},
	} {
		require.Equal(t, tc.want, preferredWait(tc.header, maxBookingWait), "Prefer: %s", tc.header)
	}
}

// The Prefer header comes from anyone: whatever it says, the wait is
// between none and the cap, and reading it never panics.
func FuzzPreferredWait(f *testing.F) {
	for _, s := range []string{"wait=5", "respond-async, wait=10", `wait="7"`, "wait=99999999999999999999", ",,;=,wait", "wait=1;wait=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		if d := preferredWait(header, maxBookingWait); d < 0 || d > maxBookingWait {
			t.Fatalf("Prefer: %q gave a wait of %s", header, d)
		}
	})
}
