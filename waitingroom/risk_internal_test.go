package waitingroom

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRegularTimingIsFlagged(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name    string
		jitter  func(i int) time.Duration
		flagged bool
	}{
		{"exact intervals", func(int) time.Duration { return 0 }, true},
		{"sub-millisecond jitter", func(i int) time.Duration { return time.Duration(i%3) * 200 * time.Microsecond }, true},
		{"human jitter", func(i int) time.Duration { return time.Duration((i*7919)%61) * time.Millisecond }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRegularity(10)
			got := false
			for i := 0; i < 20; i++ {
				if g.beat("e|u", start.Add(time.Duration(i)*5*time.Second+tc.jitter(i)), 2*time.Millisecond) {
					got = true
				}
			}
			require.Equal(t, tc.flagged, got)
		})
	}
}

func TestRegularityForgetsWithinItsBound(t *testing.T) {
	g := newRegularity(100)
	for i := 0; i < 1000; i++ {
		g.beat(string(rune('a'+i%26))+time.Duration(i).String(), time.Now(), time.Millisecond)
	}
	require.LessOrEqual(t, len(g.seen), 100)
}

func TestRiskCombines(t *testing.T) {
	require.InDelta(t, 0.0, combine(), 1e-9)
	require.InDelta(t, 0.75, combine(0.5, 0.5), 1e-9)
	require.InDelta(t, 0.8, combine(0.8), 1e-9)
}

func TestProofOfWork(t *testing.T) {
	f := &friction{powKey: powKeyFrom([]byte("k")), risk: Risk{Difficulty: 12, ChallengeTTL: time.Minute}}
	c := f.newChallenge("asha", "evt")
	sol, err := Solve(context.Background(), c)
	require.NoError(t, err)
	require.GreaterOrEqual(t, LeadingZeroBits(c.Token, sol), 12)
	// Tampered challenges do not verify (before any Redis call).
	require.ErrorIs(t, f.verifyProof(context.Background(), Proof{Challenge: c.Token + "x", Solution: sol}, "asha", "evt"), errBadProof)
	require.ErrorIs(t, f.verifyProof(context.Background(), Proof{Challenge: c.Token, Solution: sol}, "bo", "evt"), errBadProof)
	require.ErrorIs(t, f.verifyProof(context.Background(), Proof{Challenge: c.Token, Solution: sol}, "asha", "other"), errBadProof)
}
