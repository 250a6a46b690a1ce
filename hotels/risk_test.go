package hotels_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/hotels"
)

func TestWalkRiskIsTheExactBinomialTail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		allotment, n   int
		showRate, want float64
		tolerance      float64
	}{
		{"no overbooking never walks", 200, 200, 0.92, 0, 0},
		{"200 rooms, 210 booked, 8% no-shows: about 2.4%", 200, 210, 0.92, 0.024, 0.001},
		{"everyone shows up: a certain walk", 10, 11, 1, 1, 0},
		{"one room, two bookings, half show: a quarter", 1, 2, 0.5, 0.25, 1e-12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.InDelta(t, c.want, hotels.WalkRisk(c.allotment, c.n, c.showRate), c.tolerance)
		})
	}
}

func TestTheNormalApproximationOfTheExampleIsAboutThreePercent(t *testing.T) {
	t.Parallel()
	n, q, N := 210.0, 0.92, 200.0
	mean, sd := n*q, math.Sqrt(n*q*(1-q))
	require.InDelta(t, 193.2, mean, 1e-9)
	require.InDelta(t, 3.93, sd, 0.005)
	z := (N + 0.5 - mean) / sd
	require.InDelta(t, 1.86, z, 0.01)
	require.InDelta(t, 0.03, 0.5*math.Erfc(z/math.Sqrt2), 0.002)
}

func TestTheLimitIsTheLargestWhoseWalkRiskStaysUnderTheTarget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		allotment int
		showRate  float64
		risk      float64
		want      int
	}{
		{"3% risk at 92% shows over 200 rooms allows 10", 200, 0.92, 0.03, 10},
		{"everyone shows up: no overbooking", 200, 1, 0.03, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := hotels.OverbookLimit(c.allotment, c.showRate, c.risk)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
			if got > 0 {
				require.LessOrEqual(t, hotels.WalkRisk(c.allotment, c.allotment+got, c.showRate), c.risk)
				require.Greater(t, hotels.WalkRisk(c.allotment, c.allotment+got+1, c.showRate), c.risk)
			}
		})
	}
	_, err := hotels.OverbookLimit(200, 0.92, 0)
	require.ErrorIs(t, err, hotels.ErrBadRisk)
}
