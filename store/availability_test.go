package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
)

// The free units the admitter reads: free seats, seats and places of holds
// that expired unswept (lazy expiry), and general admission not taken; not
// live holds, sales, nor another event's seats.
func TestFreeUnitsCountFreeSeatsExpiredHoldsAndOpenPlacesOfTheEventAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(testenv.DB(t), store.Options{})
	ev, other := onSaleEvent(t, st, "evt_free_", 2, 5, 20), onSaleEvent(t, st, "evt_free_", 2, 5, 20)
	free := func(id string) int64 {
		t.Helper()
		n, err := st.Holds.FreeUnits(ctx, id)
		require.NoError(t, err)
		return n
	}
	require.EqualValues(t, 30, free(ev), "10 seats and 20 places")

	hold := func(req store.HoldRequest) uuid.UUID {
		t.Helper()
		req.ReservationID, req.EventID = uuid.New(), ev
		h, _, err := st.Holds.CreateHold(ctx, req)
		require.NoError(t, err)
		return h.ID
	}
	live := hold(store.HoldRequest{UserID: "fan_free_1_" + ev, SeatIDs: []string{"sec_" + ev + "-A-1", "sec_" + ev + "-A-2"}})
	gaLive := hold(store.HoldRequest{UserID: "fan_free_2_" + ev, SectionID: "ga_" + ev, Quantity: 3})
	expired := hold(store.HoldRequest{UserID: "fan_free_3_" + ev, SeatIDs: []string{"sec_" + ev + "-B-1"}})
	gaExpired := hold(store.HoldRequest{UserID: "fan_free_4_" + ev, SectionID: "ga_" + ev, Quantity: 4})
	require.EqualValues(t, 30-2-3-1-4, free(ev))
	// Two holds expire, unswept: their seat and places count as free again.
	_, err := st.Pool().Exec(ctx, `UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = ANY($1)`,
		[]uuid.UUID{expired, gaExpired})
	require.NoError(t, err)
	require.EqualValues(t, 30-2-3, free(ev))
	// Neither live hold counts, nor does another event's hold.
	require.NotEqual(t, live, gaLive)
	holdSeat(t, st, other, "fan_free_5_"+other, "sec_"+other+"-A-1")
	require.EqualValues(t, 30-2-3, free(ev))
	require.EqualValues(t, 29, free(other))
}
