package pricing_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/pricing"
)

func TestMultiplierFollowsOccupancyAndTheLastWeek(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	far, near := now.AddDate(0, 1, 0), now.AddDate(0, 0, 3)
	cases := []struct {
		occupied, total int64
		show            time.Time
		want            int
	}{
		{0, 100, far, 10000},
		{49, 100, far, 10000},
		{50, 100, far, 12500},
		{79, 100, far, 12500},
		{80, 100, far, 15000},
		{100, 100, far, 15000},
		{0, 100, near, 10500},
		{50, 100, near, 13000},
		{80, 100, near, 15000}, // capped at 1.5x
		{5, 0, far, 15000},     // an empty total counts as one
	}
	for _, c := range cases {
		require.Equal(t, c.want, pricing.Multiplier(c.occupied, c.total, c.show, now), "%d/%d", c.occupied, c.total)
	}
}

func TestPriceRoundsHalfUpAndRefusesOverflow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		base            int64
		surge, discount int
		price, off      int64
	}{
		{1000, 10000, 0, 1000, 0},
		{999, 12500, 0, 1249, 0},  // 1248.75 -> 1249
		{1002, 12500, 0, 1253, 0}, // 1252.5 -> 1253
		{2730, 15000, 0, 4095, 0},
		{1249, 10000, 1000, 1124, 125}, // discount 124.9 -> 125
		{100, 10000, 10000, 0, 100},
	}
	for _, c := range cases {
		q, err := pricing.Price(c.base, c.surge, c.discount)
		require.NoError(t, err)
		require.Equal(t, c.price, q.PriceAtLock, "%+v", c)
		require.Equal(t, c.off, q.Discount, "%+v", c)
	}
	_, err := pricing.Price(math.MaxInt64/2, 15000, 0)
	require.Error(t, err)
	_, err = pricing.Price(-1, 10000, 0)
	require.ErrorIs(t, err, pricing.ErrInvalid)
	_, err = pricing.Price(100, 20000, 0)
	require.ErrorIs(t, err, pricing.ErrInvalid)
}
