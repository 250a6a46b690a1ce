package store_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// paidWithTicket sells seat n to user, records its captured payment under
// intent and issues its ticket.
func (e ticketEvent) paidWithTicket(user string, n int, intent string) uuid.UUID {
	e.t.Helper()
	ctx := context.Background()
	id := e.sold(user, n)
	require.NoError(e.t, e.st.Bookings.SavePayment(ctx, id, intent, money.Money{Amount: 1000, Currency: "EUR"}, vocab.PaymentCaptured, 1))
	require.NoError(e.t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{e.ticket(id, user, n)}))
	return id
}

func (e ticketEvent) validTickets(id uuid.UUID) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.st.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM tickets WHERE reservation_id = $1 AND status = 'VALID'`, id).Scan(&n))
	return n
}

func TestDisputeEventsConvergeWhateverTheirOrderAndRepeats(t *testing.T) {
	t.Parallel()
	e := newTicketEvent(t)
	ctx := context.Background()
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	for _, tc := range []struct {
		name  string
		order []vocab.DisputeStatus // the statuses delivered, events created one second apart in set order
		want  vocab.DisputeStatus
	}{
		{"opened then lost", []vocab.DisputeStatus{vocab.DisputeNeedsResponse, vocab.DisputeLost}, vocab.DisputeLost},
		{"lost before it was opened", []vocab.DisputeStatus{vocab.DisputeLost, vocab.DisputeNeedsResponse}, vocab.DisputeLost},
		{"won before it was opened, twice", []vocab.DisputeStatus{vocab.DisputeWon, vocab.DisputeNeedsResponse, vocab.DisputeWon}, vocab.DisputeWon},
		{"opened twice then won", []vocab.DisputeStatus{vocab.DisputeNeedsResponse, vocab.DisputeNeedsResponse, vocab.DisputeWon}, vocab.DisputeWon},
		{"a stale open status after review", []vocab.DisputeStatus{vocab.DisputeUnderReview, vocab.DisputeNeedsResponse}, vocab.DisputeUnderReview},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := map[string]int{"opened then lost": 1, "lost before it was opened": 2, "won before it was opened, twice": 3,
				"opened twice then won": 4, "a stale open status after review": 5}[tc.name]
			user := "u_" + uuid.NewString()
			id := e.paidWithTicket(user, n, "pi_"+uuid.NewString())
			dp := "dp_" + uuid.NewString()
			// Each status's event was created at its place in the lifecycle.
			rank := map[vocab.DisputeStatus]int{vocab.DisputeNeedsResponse: 0, vocab.DisputeUnderReview: 1, vocab.DisputeWon: 2, vocab.DisputeLost: 2}
			revoked := 0
			for i, st := range tc.order {
				out, err := e.st.Bookings.ApplyDispute(ctx, store.DisputeEvent{ReservationID: id, IntentID: "pi", ChargeID: "ch",
					DisputeID: dp, Status: st, Reason: "fraudulent", Amount: money.Money{Amount: 1000, Currency: "EUR"},
					EventID: "evt_" + string(st) + "_" + string(rune('a'+i)), EventAt: t0.Add(time.Duration(rank[st]) * time.Second)})
				require.NoError(t, err)
				revoked += len(out.Revoked)
			}
			ds, err := e.st.Bookings.Disputes(ctx, id)
			require.NoError(t, err)
			require.Len(t, ds, 1)
			require.Equal(t, tc.want, ds[0].Status)
			v, err := e.st.Bookings.Booking(ctx, id, "")
			require.NoError(t, err)
			require.NotNil(t, v.Dispute)
			require.Equal(t, tc.want, v.Dispute.Status)
			if tc.want == vocab.DisputeLost {
				require.Equal(t, 1, revoked, "the ticket is revoked once")
				require.Zero(t, e.validTickets(id))
				require.NotNil(t, ds[0].RevokedAt)
			} else {
				require.Zero(t, revoked)
				require.Equal(t, 1, e.validTickets(id), "tickets stay valid unless the dispute is lost")
			}
			require.Equal(t, vocab.ReservationPaid, v.Hold.Status, "a dispute never ends the sale")
		})
	}
}

func TestAnOutsideRefundInFullEndsThePaidBookingOnceAndAPartialOneIsOnlyRecorded(t *testing.T) {
	t.Parallel()
	e := newTicketEvent(t)
	ctx := context.Background()

	partial := e.paidWithTicket("u_partial", 1, "pi_p_"+uuid.NewString())
	out, err := e.st.Bookings.ApplyOutsideRefund(ctx, store.OutsideRefundEvent{ReservationID: partial, IntentID: "pi", ChargeID: "ch_p",
		EventID: "evt_p_" + uuid.NewString(), AmountRefunded: 300, AmountCaptured: 1000, Currency: "EUR"})
	require.NoError(t, err)
	require.Equal(t, uuid.Nil, out.Ended.ReservationID)
	v, err := e.st.Bookings.Booking(ctx, partial, "")
	require.NoError(t, err)
	require.Equal(t, vocab.ReservationPaid, v.Hold.Status)
	require.False(t, v.RefundedOutside)
	require.Equal(t, 1, e.validTickets(partial))

	full := e.paidWithTicket("u_full", 2, "pi_f_"+uuid.NewString())
	ev := store.OutsideRefundEvent{ReservationID: full, IntentID: "pi", ChargeID: "ch_f", EventID: "evt_f_" + uuid.NewString(),
		AmountRefunded: 1000, AmountCaptured: 1000, Currency: "EUR", Full: true}
	out, err = e.st.Bookings.ApplyOutsideRefund(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, full, out.Ended.ReservationID)
	require.Len(t, out.Revoked, 1)
	again, err := e.st.Bookings.ApplyOutsideRefund(ctx, ev)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Empty(t, again.Revoked)
	v, err = e.st.Bookings.Booking(ctx, full, "")
	require.NoError(t, err)
	require.Equal(t, vocab.ReservationCancelled, v.Hold.Status)
	require.Equal(t, vocab.PaymentRefunded, v.PaymentStatus)
	require.True(t, v.RefundedOutside)
	require.Zero(t, e.validTickets(full))
	var seat string
	require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT status FROM seats WHERE id = $1`, e.seat(2)).Scan(&seat))
	require.Equal(t, string(vocab.SeatAvailable), seat, "the seat is back on sale")
	rs, err := e.st.Bookings.OutsideRefunds(ctx, full)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.True(t, rs[0].EndedBooking)
	var audits int
	require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM admin_audit WHERE target = $1 AND action = 'booking.refund.outside'`,
		"booking:"+full.String()).Scan(&audits))
	require.Equal(t, 1, audits)
}

func TestAnEventCancellationLeavesChargedBackBookingsOutOfItsRefunds(t *testing.T) {
	t.Parallel()
	e := newTicketEvent(t)
	ctx := context.Background()
	kept := e.paidWithTicket("u_kept_"+uuid.NewString(), 1, "pi_"+uuid.NewString())
	lost := e.paidWithTicket("u_lost_"+uuid.NewString(), 2, "pi_"+uuid.NewString())
	open := e.paidWithTicket("u_open_"+uuid.NewString(), 3, "pi_"+uuid.NewString())
	for id, st := range map[uuid.UUID]vocab.DisputeStatus{lost: vocab.DisputeLost, open: vocab.DisputeNeedsResponse} {
		_, err := e.st.Bookings.ApplyDispute(ctx, store.DisputeEvent{ReservationID: id, IntentID: "pi", ChargeID: "ch",
			DisputeID: "dp_" + uuid.NewString(), Status: st, Reason: "fraudulent", Amount: money.Money{Amount: 1000, Currency: "EUR"},
			EventID: "evt_" + uuid.NewString(), EventAt: time.Now()})
		require.NoError(t, err)
	}

	c, err := e.st.Jobs.CancelEvent(ctx, e.ev, "", "olga", "ill", "job-"+e.ev)
	require.NoError(t, err)
	require.Equal(t, 2, c.Job.Total, "the charged-back booking's money is already back with the cardholder")
	ids, err := e.st.Jobs.PaidBookingsAfter(ctx, e.ev, uuid.Nil, 10)
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{kept, open}, ids)
}

// TestABookingReadWhileItsDisputeIsLostShowsTheLossAndItsRevokedTicketsTogether
// loses the disputes of twenty bookings one by one while readers keep
// reading them: a reader sees a lost dispute only with every ticket
// revoked, as the one transaction that records the loss leaves them.
func TestABookingReadWhileItsDisputeIsLostShowsTheLossAndItsRevokedTicketsTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var ids []uuid.UUID
	for range 4 {
		e := newTicketEvent(t)
		for n := 1; n <= 5; n++ {
			ids = append(ids, e.paidWithTicket("u_"+uuid.NewString(), n, "pi_"+uuid.NewString()))
		}
	}
	st := newTicketEvent(t).st
	var torn, lostSeen atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, id := range ids {
					v, err := st.Bookings.Booking(ctx, id, "")
					if err != nil {
						t.Error(err)
						return
					}
					if v.Dispute == nil || v.Dispute.Status != vocab.DisputeLost {
						continue
					}
					lostSeen.Add(1)
					for _, tk := range v.Tickets {
						if tk.Status != string(vocab.TicketRevoked) {
							torn.Add(1)
						}
					}
				}
			}
		})
	}
	for i, id := range ids {
		seen := lostSeen.Load()
		_, err := st.Bookings.ApplyDispute(ctx, store.DisputeEvent{ReservationID: id, IntentID: "pi", ChargeID: "ch",
			DisputeID: "dp_" + uuid.NewString(), Status: vocab.DisputeLost, Reason: "fraudulent",
			Amount: money.Money{Amount: 1000, Currency: "EUR"}, EventID: "evt_lost_" + strconv.Itoa(i), EventAt: time.Now()})
		require.NoError(t, err)
		// The readers cross this commit before the next one.
		require.Eventually(t, func() bool { return lostSeen.Load() > seen }, 10*time.Second, time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.Positive(t, lostSeen.Load(), "the readers saw lost disputes")
	require.Zero(t, torn.Load(), "a booking read as charged back with a ticket still valid")
}
