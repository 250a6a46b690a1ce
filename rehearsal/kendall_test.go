package rehearsal

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every expected value below is worked out by hand in the case's comment,
// pair by pair: C concordant, D discordant, n1 and n2 the pairs tied in x
// and in y, n0 = n(n-1)/2.
func TestKendallTauBMatchesHandComputedCases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		x, y []float64
		want float64
	}{
		// All 10 pairs concordant: (10-0)/sqrt(10*10).
		{"the same order is 1", []float64{1, 2, 3, 4, 5}, []float64{10, 20, 30, 40, 50}, 1},
		// All 10 pairs discordant.
		{"the reverse order is -1", []float64{1, 2, 3, 4, 5}, []float64{5, 4, 3, 2, 1}, -1},
		// (0,1) C, (0,2) C, (1,2) D: (2-1)/3.
		{"one swap of three", []float64{1, 2, 3}, []float64{1, 3, 2}, 1.0 / 3},
		// (0,1) C, (0,2) C, (0,3) C, (1,2) tied in x, (1,3) C, (2,3) tied in y:
		// C=4, D=0, n0=6, n1=1, n2=1: 4/sqrt(5*5) = 0.8.
		{"ties in x and in y", []float64{1, 2, 2, 3}, []float64{1, 2, 3, 3}, 0.8},
		// x=(12,2,1,12,2), y=(1,4,7,1,0): C=2 ((0,4),(3,4)), D=6, (0,3) tied in
		// both, (1,4) tied in x: n1=2, n2=1, n0=10: -4/sqrt(8*9).
		{"a pair tied in both counts in both", []float64{12, 2, 1, 12, 2}, []float64{1, 4, 7, 1, 0}, -4 / math.Sqrt(72)},
		// (0,1) D, (0,2) C, (0,3) C, (1,2) C, (1,3) C, (2,3) D: (4-2)/6.
		{"four points, two swaps", []float64{1, 2, 3, 4}, []float64{2, 1, 4, 3}, 1.0 / 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tau, ok := KendallTauB(tc.x, tc.y)
			require.True(t, ok)
			require.InDelta(t, tc.want, tau, 1e-12)
		})
	}
}

func TestKendallTauBIsUndefinedWithoutTwoDistinctRanks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		x, y []float64
	}{
		{"no points", nil, nil},
		{"one point", []float64{1}, []float64{2}},
		{"every x the same", []float64{3, 3, 3}, []float64{1, 2, 3}},
		{"every y the same", []float64{1, 2, 3}, []float64{7, 7, 7}},
		{"lengths differ", []float64{1, 2, 3}, []float64{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, ok := KendallTauB(tc.x, tc.y)
			require.False(t, ok)
		})
	}
}
