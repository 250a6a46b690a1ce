package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

func TestCancellingAnEventStopsSalesReleasesHoldsAndCountsThePaidBookingsOnce(t *testing.T) {
	ctx := context.Background()
	st := store.New(testenv.DB(t), store.Options{})
	ev := onSaleEvent(t, st, "evt_cx_", 2, 5, 0)
	hold := func(user, seat string) uuid.UUID {
		h, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: user, EventID: ev, SeatIDs: []string{seat}})
		require.NoError(t, err)
		return h.ID
	}
	paid := hold("paid", "sec_"+ev+"-A-1")
	ok, err := st.Bookings.ConfirmSale(ctx, paid)
	require.NoError(t, err)
	require.True(t, ok)
	pending := hold("pending", "sec_"+ev+"-A-2")

	c, err := st.Jobs.CancelEvent(ctx, ev, "org_other", "olga", "ill", "job-x-"+ev)
	require.ErrorIs(t, err, store.ErrOtherOrg, "another organisation's event")
	c, err = st.Jobs.CancelEvent(ctx, ev, "", "olga", "ill", "job-"+ev)
	require.NoError(t, err)
	require.True(t, c.Started)
	require.Equal(t, 1, c.Job.Total)
	require.Len(t, c.Released, 1)

	// A second submit returns the first job.
	again, err := st.Jobs.CancelEvent(ctx, ev, "", "olga", "again", "job-other-"+ev)
	require.NoError(t, err)
	require.False(t, again.Started)
	require.Equal(t, "job-"+ev, again.Job.ID)

	// No hold, and no confirm of a hold, succeeds now.
	_, _, err = st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "late", EventID: ev, SeatIDs: []string{"sec_" + ev + "-A-4"}})
	require.True(t, errors.Is(err, store.ErrNotOnSale), "%v", err)
	ok, err = st.Bookings.ConfirmSale(ctx, pending)
	require.NoError(t, err)
	require.False(t, ok)
	// A hold taken in the instant before the cancel committed (its check saw
	// the event published) is refused at confirm and given back.
	pool := st.Pool()
	_, err = pool.Exec(ctx, `UPDATE events SET status = 'PUBLISHED' WHERE id = $1`, ev)
	require.NoError(t, err)
	window := hold("window", "sec_"+ev+"-A-3")
	_, err = pool.Exec(ctx, `UPDATE events SET status = 'CANCELLED' WHERE id = $1`, ev)
	require.NoError(t, err)
	ok, err = st.Bookings.ConfirmSale(ctx, window)
	require.NoError(t, err)
	require.False(t, ok)
	h, err := st.Holds.GetHold(ctx, window, "")
	require.NoError(t, err)
	require.Equal(t, vocab.ReservationCancelled, h.Status)
	cancelled, err := st.Jobs.EventCancelled(ctx, ev)
	require.NoError(t, err)
	require.True(t, cancelled)

	// Paging finds the paid booking; counting it twice counts once.
	ids, err := st.Jobs.PaidBookingsAfter(ctx, ev, uuid.Nil, 10)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{paid}, ids)
	require.NoError(t, st.Jobs.RecordJobItem(ctx, c.Job.ID, paid, true, ""))
	require.NoError(t, st.Jobs.RecordJobItem(ctx, c.Job.ID, paid, true, ""))
	j, err := st.Jobs.FinishJob(ctx, c.Job.ID)
	require.NoError(t, err)
	require.Equal(t, store.JobDone, j.Status)
	require.Equal(t, 1, j.Done)
}

// Holds racing an event's cancellation either commit before it (and are
// released by it) or are refused: none is left PENDING on the cancelled
// event. CreateHold read the event's status without a lock, and in a run of
// this race about half of the racing holds stayed PENDING.
func TestHoldsRacingAnEventsCancellationAreReleasedOrRefusedNeverLeftPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(testenv.DB(t), store.Options{})
	const rounds, racers = 20, 12
	for round := range rounds {
		ev := onSaleEvent(t, st, "evt_race_", 1, racers, 0)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for k := 1; k <= racers; k++ {
			wg.Go(func() {
				<-start
				// Spread over the cancellation's transaction.
				time.Sleep(time.Duration(k*150) * time.Microsecond)
				_, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: fmt.Sprintf("fan%d", k),
					EventID: ev, SeatIDs: []string{fmt.Sprintf("sec_%s-A-%d", ev, k)}})
				if err != nil {
					require.ErrorIs(t, err, store.ErrNotOnSale, "round %d, fan %d", round, k)
				}
			})
		}
		wg.Go(func() {
			<-start
			_, err := st.Jobs.CancelEvent(ctx, ev, "", "olga", "ill", "job-"+ev)
			require.NoError(t, err)
		})
		close(start)
		wg.Wait()
		var pending int
		require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM reservations WHERE event_id = $1 AND status = 'PENDING_PAYMENT'`,
			ev).Scan(&pending))
		require.Zero(t, pending, "round %d: holds left pending on the cancelled event", round)
	}
}
