package hotels_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
)

func TestAStayBookingCarriesItsCancellationTermsAndPassesTheFraudCheckWithoutAnEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 5, 0)
	h := f.holdStay(t, "terms", f.stay(f.main, "double", 3, 2, 2))
	_, err := f.store.Pool().Exec(ctx, `UPDATE properties SET free_cancel_days = 2 WHERE id = $1`, f.main)
	require.NoError(t, err)
	b, err := f.store.Bookings.LoadBooking(ctx, h.ID)
	require.NoError(t, err)
	require.True(t, b.CancelBy.Equal(f.night(3)), "cancellable until check-in, got %v", b.CancelBy)
	require.True(t, b.StayFreeUntil.Equal(f.night(1)), "free until two days before, got %v", b.StayFreeUntil)
	require.Equal(t, int64(2*10000), b.StayPenalty, "the first night of two rooms")

	sig, err := f.store.Bookings.FraudSignals(ctx, "terms", "", "", "", "")
	require.NoError(t, err, "a hotel-only booking has no event and no purchase limit")
	require.Zero(t, sig.Limit)
}

func TestAConfirmWhoseNightsAreNoLongerHeldSellsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A database of its own: the counters are made wrong on purpose below,
	// and the other tests' audits read every room-night.
	pool, _ := testenv.FreshDB(t)
	f := newFixtureOn(t, pool, 5, 0)
	h := f.holdStay(t, "gone", f.stay(f.main, "double", 0, 2, 1))
	_, err := f.store.Pool().Exec(ctx, `UPDATE room_nights SET held = held - 1 WHERE property_id = $1 AND room_type = 'double' AND night = $2`,
		f.main, f.night(1))
	require.NoError(t, err)

	ok, err := f.store.Bookings.ConfirmSale(ctx, h.ID)
	require.ErrorIs(t, err, store.ErrUnsellable)
	require.False(t, ok)
	got, err := f.store.Holds.GetHold(ctx, h.ID, "")
	require.NoError(t, err)
	require.Equal(t, "PENDING_PAYMENT", string(got.Status))
	require.Equal(t, 1, f.counters(t, f.main, "double", 0).Held, "the other night is untouched")

	_, err = f.store.Holds.Release(ctx, h.ID, "")
	require.NoError(t, err)
	for n := range 2 {
		c := f.counters(t, f.main, "double", n)
		require.Equal(t, [2]int{0, 0}, [2]int{c.Held, c.Sold}, "night %d given back, never below zero", n)
	}
}
