package notify

import (
	"testing"

	"github.com/stretchr/testify/require"
	"rsc.io/qr/coding"
)

// bits reads a line of modules written as 1 (dark) and 0 (light).
func bits(s string) []bool {
	out := make([]bool, len(s))
	for i, c := range s {
		out[i] = c == '1'
	}
	return out
}

func TestALineIsScoredByTheStandardsRunAndFinderRules(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       int
	}{
		{"no run of five", "1010110010", 0},
		{"a run of five scores three", "1000001", 3},
		{"each module past five scores one more", "01111111", 5},
		{"runs of both colours", "1111100000", 6},
		{"a finder-like run with four light modules after it", "010111010000", 40},
		{"a finder-like run with four light modules before it", "00001011101", 40},
		{"the run without its light modules is no finder", "1011101", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, qrLinePenalty(bits(tc.line)))
		})
	}
}

func TestTheSymbolTakesTheMaskThatScoresLowest(t *testing.T) {
	content := "https://tickets.example/#/booking/7d0c6a8e-5f43-4f7e-9b1a-3c2d1e0f9a8b"
	chosen, err := qrSymbol(content)
	require.NoError(t, err)
	scores := map[int]bool{}
	lowest := qrPenalty(chosen)
	v := (chosen.Size - 17) / 4
	for m := range 8 {
		plan, err := qrPlan(coding.Version(v), coding.Mask(m))
		require.NoError(t, err)
		code, err := plan.Encode(coding.String(content))
		require.NoError(t, err)
		s := qrPenalty(code)
		scores[s] = true
		require.GreaterOrEqual(t, s, lowest, "mask %d scores lower than the chosen one", m)
	}
	require.Greater(t, len(scores), 1, "the masks score differently, so the choice matters")
}
