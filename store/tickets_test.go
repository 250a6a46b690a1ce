package store_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// ticketEvent is an on-sale event of ten seats whose holds and tickets the
// ticket tests write.
type ticketEvent struct {
	t  *testing.T
	st *store.Store
	ev string
}

func newTicketEvent(t *testing.T) ticketEvent {
	t.Helper()
	st := store.New(testenv.DB(t), store.Options{})
	ev := "evt_tk_" + testenv.RandomSuffix()
	require.NoError(t, st.Catalogue.CreateEvent(context.Background(), store.EventSpec{ID: ev, Title: "T", VenueID: "ven_tk",
		VenueName: "V", City: "C", StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Sections: []store.SectionSpec{{ID: "sec_" + ev, Name: "A", Rows: 2, PerRow: 5, BasePrice: 1000}}}))
	return ticketEvent{t: t, st: st, ev: ev}
}

func (e ticketEvent) seat(n int) string { return "sec_" + e.ev + "-A-" + strconv.Itoa(n) }

// hold places user's hold on seat n.
func (e ticketEvent) hold(user string, n int) uuid.UUID {
	e.t.Helper()
	h, _, err := e.st.Holds.CreateHold(context.Background(), store.HoldRequest{ReservationID: uuid.New(), UserID: user,
		EventID: e.ev, SeatIDs: []string{e.seat(n)}})
	require.NoError(e.t, err)
	return h.ID
}

// sold holds seat n for user and sells it.
func (e ticketEvent) sold(user string, n int) uuid.UUID {
	e.t.Helper()
	id := e.hold(user, n)
	ok, err := e.st.Bookings.ConfirmSale(context.Background(), id)
	require.NoError(e.t, err)
	require.True(e.t, ok)
	return id
}

// ticket is the ticket the saga would issue for seat n of the booking.
func (e ticketEvent) ticket(id uuid.UUID, user string, n int) store.TicketRow {
	return store.TicketRow{ID: "tkt_" + uuid.NewString(), ReservationID: id, EventID: e.ev, SectionID: "sec_" + e.ev,
		SeatID: e.seat(n), Unit: 1, UserID: user, SecretSealed: []byte("sealed")}
}

func (e ticketEvent) tickets(id uuid.UUID) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM tickets WHERE reservation_id = $1`, id).Scan(&n))
	return n
}

func TestTicketsAreRefusedToAHoldTheEventsCancellationReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTicketEvent(t)
	paid := e.sold("paid", 1)
	late := e.hold("late", 2)
	_, err := e.st.Jobs.CancelEvent(ctx, e.ev, "", "olga", "ill", "job-"+e.ev)
	require.NoError(t, err)

	// The late fan's saga goes on as if sold: its tickets are refused, in
	// the database, whatever the saga believes.
	err = e.st.Tickets.InsertTickets(ctx, []store.TicketRow{e.ticket(late, "late", 2)})
	require.ErrorIs(t, err, store.ErrNotPaid)
	require.Zero(t, e.tickets(late))
	// One refused booking refuses the whole batch: nothing is half-issued.
	err = e.st.Tickets.InsertTickets(ctx, []store.TicketRow{e.ticket(paid, "paid", 1), e.ticket(late, "late", 2)})
	require.ErrorIs(t, err, store.ErrNotPaid)
	require.Zero(t, e.tickets(paid))
	// The paid booking alone is issued, once.
	require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{e.ticket(paid, "paid", 1)}))
	require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{e.ticket(paid, "paid", 1)}))
	require.Equal(t, 1, e.tickets(paid))
}

// A cancel and the saga's issue race on one booking: the cancel has locked
// the booking and revoked its (no) tickets when the issue arrives. The
// issue waits for the cancel and is refused; before, it wrote a VALID
// ticket after the revoke, for a booking no longer paid.
func TestAnIssueRacingACancelOfTheSameBookingWaitsAndIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTicketEvent(t)
	id := e.sold("racer", 3)

	// CancelPaid's statements, held open so the issue runs inside them.
	tx, err := e.st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT status FROM reservations WHERE id = $1 FOR UPDATE`, id)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE tickets SET status = 'REVOKED', revoked_at = now() WHERE reservation_id = $1 AND status = 'VALID'`, id)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE reservations SET status = 'CANCELLED', ended_at = now() WHERE id = $1`, id)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE seats SET status = 'AVAILABLE', reservation_id = NULL WHERE reservation_id = $1`, id)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE reservation_items SET live = false WHERE reservation_id = $1`, id)
	require.NoError(t, err)

	issued := make(chan error, 1)
	go func() { issued <- e.st.Tickets.InsertTickets(ctx, []store.TicketRow{e.ticket(id, "racer", 3)}) }()
	require.Eventually(t, func() bool {
		select {
		case err := <-issued:
			issued <- err
			return true
		default:
		}
		var waiting bool
		require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%FOR SHARE%' AND datname = current_database())`).Scan(&waiting))
		return waiting
	}, 10*time.Second, 10*time.Millisecond, "the issue waits for the cancel, or has already answered")
	require.NoError(t, tx.Commit(ctx))

	require.ErrorIs(t, <-issued, store.ErrNotPaid)
	require.Zero(t, e.tickets(id), "no ticket for a cancelled booking")
	rep, err := e.st.Holds.Audit(ctx, e.ev, time.Minute)
	require.NoError(t, err)
	require.Zero(t, rep.Violations(), rep.String())
}

func TestTheAuditCountsTicketsBeyondTheSaleAndTicketsRevokedTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTicketEvent(t)
	pool := e.st.Pool()
	paid := e.sold("fan", 1)
	require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{e.ticket(paid, "fan", 1)}))
	refunded := e.sold("refunded", 4)
	require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{e.ticket(refunded, "refunded", 4)}))
	_, err := e.st.Bookings.CancelPaid(ctx, refunded)
	require.NoError(t, err)
	// Its payment, captured and then refunded, says it was sold.
	require.NoError(t, e.st.Bookings.SavePayment(ctx, refunded, "pi_"+e.ev, money.Money{Amount: 1000, Currency: "EUR"},
		vocab.PaymentRefunded, 1))
	audit := func() store.AuditReport {
		t.Helper()
		rep, err := e.st.Holds.Audit(ctx, e.ev, time.Minute)
		require.NoError(t, err)
		return rep
	}
	require.Zero(t, audit().Violations(), "a sold booking's tickets, and a cancelled one's revoked ticket: %s", audit())

	// A second revoke of the cancelled booking leaves its one revocation as
	// it was.
	var first time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT revoked_at FROM tickets WHERE reservation_id = $1`, refunded).Scan(&first))
	again, err := e.st.Tickets.RevokeTickets(ctx, refunded)
	require.NoError(t, err)
	require.Empty(t, again)
	var still time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT revoked_at FROM tickets WHERE reservation_id = $1`, refunded).Scan(&still))
	require.Equal(t, first, still)

	// Planted: the 501st ticket, revoked, of a booking that was never sold
	// (released by the event's cancellation, its authorisation voided)...
	stranger := e.hold("stranger", 2)
	_, err = e.st.Jobs.CancelEvent(ctx, e.ev, "", "olga", "ill", "job-"+e.ev)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO tickets (id, reservation_id, event_id, section_id, seat_id, user_id, secret_sealed, status, revoked_at)
		VALUES ($1, $2, $3, $4, $5, 'stranger', '\x00', 'REVOKED', now())`, "tkt_"+uuid.NewString(), stranger, e.ev, "sec_"+e.ev, e.seat(2))
	require.NoError(t, err)
	rep := audit()
	require.EqualValues(t, 1, rep.TicketsBeyondSale, rep.String())
	require.Contains(t, rep.String(), "than their sale issued: 1")

	// ...and a paid booking's second ticket for its one seat's unit.
	_, err = pool.Exec(ctx, `INSERT INTO tickets (id, reservation_id, event_id, section_id, seat_id, unit, user_id, secret_sealed, status, revoked_at)
		VALUES ($1, $2, $3, $4, $5, 2, 'fan', '\x00', 'REVOKED', now())`, "tkt_"+uuid.NewString(), paid, e.ev, "sec_"+e.ev, e.seat(1))
	require.NoError(t, err)
	require.EqualValues(t, 2, audit().TicketsBeyondSale)

	// Planted: the cancelled booking's revoked ticket made valid again, so
	// it could be revoked a second time.
	_, err = pool.Exec(ctx, `UPDATE tickets SET status = 'VALID' WHERE reservation_id = $1`, refunded)
	require.NoError(t, err)
	rep = audit()
	require.EqualValues(t, 1, rep.TicketsRevokedTwice, rep.String())
	require.EqualValues(t, 3, rep.Violations(), rep.String())
}

// A booking's cancellation e-mail had two senders (its saga's refund step
// and the staff action that asked for it), each checking Notified before it
// sent and logging after: racing, or retried after the send, they logged the
// one message twice. RecordSentOnce marks and logs it once, however many
// record it at once.
func TestAMessageRecordedByManySendersAtOnceIsLoggedOnce(t *testing.T) {
	t.Parallel()
	e := newTicketEvent(t)
	ctx := context.Background()
	id := e.sold("asha", 1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			require.NoError(t, e.st.Bookings.RecordSentOnce(ctx, id, "cancellation", "asha@example.test"))
		})
	}
	wg.Wait()
	require.NoError(t, e.st.Bookings.RecordSentOnce(ctx, id, "cancellation", "asha@example.test"), "a retry after the fact")
	var logged int
	require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM notification_log WHERE reservation_id = $1 AND kind = 'cancellation'`,
		id).Scan(&logged))
	require.Equal(t, 1, logged)
	sent, err := e.st.Bookings.Notified(ctx, id, "cancellation")
	require.NoError(t, err)
	require.True(t, sent)
}

// A message costs the database one row: the line that logs it is also the
// once-per-kind mark the saga checks before sending (there used to be a
// marker row beside it). A support resend is a line of its own, which
// neither marks another kind as sent nor stops the kind's first line.
func TestAMessageIsOneLogLineAndAResendAnotherBesideIt(t *testing.T) {
	t.Parallel()
	e := newTicketEvent(t)
	ctx := context.Background()
	id := e.sold("asha", 1)
	require.NoError(t, e.st.Bookings.LogNotification(ctx, id, "resend", "asha@example.test"))
	sent, err := e.st.Bookings.Notified(ctx, id, "confirmation")
	require.NoError(t, err)
	require.False(t, sent, "a resend marks nothing as sent")
	require.NoError(t, e.st.Bookings.RecordSentOnce(ctx, id, "confirmation", "asha@example.test"))
	require.NoError(t, e.st.Bookings.LogNotification(ctx, id, "resend", "asha@example.test"))
	sent, err = e.st.Bookings.Notified(ctx, id, "confirmation")
	require.NoError(t, err)
	require.True(t, sent)
	rows, err := e.st.Pool().Query(ctx, `SELECT kind, resend FROM notification_log WHERE reservation_id = $1 ORDER BY id`, id)
	require.NoError(t, err)
	type line struct {
		Kind   string
		Resend bool
	}
	lines, err := pgx.CollectRows(rows, pgx.RowToStructByPos[line])
	require.NoError(t, err)
	require.Equal(t, []line{{"resend", true}, {"confirmation", false}, {"resend", true}}, lines)
	require.Zero(t, e.count(`SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'notifications'`),
		"no marker table beside the log")
}

// TestPhonesRacingToOpenOneTicketEachGetTheirOwnGeneration: twenty devices
// open one ticket's wallet at once, twice each. No two devices ever get the
// same generation (a shared key would leave a left phone's codes working),
// a device opening it again without another in between keeps its
// generation, and the row ends on the device holding the highest one.
func TestPhonesRacingToOpenOneTicketEachGetTheirOwnGeneration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTicketEvent(t)
	booking := e.sold("fan", 1)
	row := e.ticket(booking, "fan", 1)
	require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{row}))

	const devices = 20
	type bound struct {
		device     string
		generation int64
	}
	got := make(chan bound, 2*devices)
	var wg sync.WaitGroup
	for d := range devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			device := "phone-" + strconv.Itoa(d)
			for range 2 {
				tk, err := e.st.Tickets.BindDevice(ctx, row.ID, "fan", device)
				if err != nil {
					t.Error(err)
					return
				}
				got <- bound{tk.DeviceID, tk.Generation}
			}
		}()
	}
	wg.Wait()
	close(got)

	owner := map[int64]string{}
	var highest bound
	for b := range got {
		if b.generation == 0 {
			continue // read before the first bind committed: the wallet reads again
		}
		if prev, ok := owner[b.generation]; ok {
			require.Equal(t, prev, b.device, "generation %d given to two devices", b.generation)
		}
		owner[b.generation] = b.device
		if b.generation > highest.generation {
			highest = b
		}
	}
	require.GreaterOrEqual(t, len(owner), devices, "every device got a generation of its own")
	var device string
	var generation int64
	require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT device_id, key_generation FROM tickets WHERE id = $1`, row.ID).Scan(&device, &generation))
	require.Equal(t, highest, bound{device, generation})

	_, err := e.st.Tickets.BindDevice(ctx, row.ID, "someone_else", "phone-x")
	require.ErrorIs(t, err, store.ErrNotFound, "another fan's ticket is not found")
	_, err = e.st.Tickets.RevokeTickets(ctx, booking)
	require.NoError(t, err)
	_, err = e.st.Tickets.BindDevice(ctx, row.ID, "fan", "phone-y")
	require.ErrorIs(t, err, store.ErrTicketRevoked)
}

// TestAnEventCancellationRacingSalesAndTheirTicketsRevokesOnlyWhatItCounted
// plays, at once, what the event-cancellation test once saw end with 501
// revoked tickets for 500 paid bookings: sales confirming and issuing their
// tickets (the saga's ConfirmSale then InsertTickets, a late one retried),
// the event's cancellation committing among them, and its job cancelling
// every paid booking it pages while those sales still issue. Whatever the
// interleaving, every revoked ticket belongs to a booking the cancellation
// counted as paid, one per seat, none is revoked twice, nothing stays paid
// or valid, and the audit finds nothing.
func TestAnEventCancellationRacingSalesAndTheirTicketsRevokesOnlyWhatItCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const fans, rounds = 40, 4
	for round := range rounds {
		st := store.New(testenv.DB(t), store.Options{})
		ev := onSaleEvent(t, st, "evt_race_", 1, fans, 0)
		e := ticketEvent{t: t, st: st, ev: ev}
		ids := make([]uuid.UUID, fans)
		for i := range fans {
			ids[i] = e.hold("fan"+strconv.Itoa(i), i+1)
			// Checked out: authorised.
			require.NoError(t, st.Bookings.SavePayment(ctx, ids[i], "pi_"+ids[i].String(), money.Money{Amount: 1000, Currency: "EUR"},
				vocab.PaymentAuthorised, 1))
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		sell := func(i int) {
			defer wg.Done()
			<-start
			time.Sleep(time.Duration(i) * time.Millisecond) // sales spread over 40 ms
			ok, err := st.Bookings.ConfirmSale(ctx, ids[i])
			if err != nil || !ok {
				return // refused (the cancellation came first) or busy: no sale, no tickets
			}
			// Captured, then the tickets: the job may page the booking in
			// between.
			if err := st.Bookings.SetPaymentStatus(ctx, ids[i], vocab.PaymentCaptured, ""); err != nil {
				t.Error(err)
			}
			time.Sleep(time.Duration(i%4) * time.Millisecond)
			row := e.ticket(ids[i], "fan"+strconv.Itoa(i), i+1)
			for attempt := 0; attempt < 2; attempt++ { // the saga's step, retried once
				if err := st.Tickets.InsertTickets(ctx, []store.TicketRow{row}); err != nil && !errors.Is(err, store.ErrNotPaid) &&
					!errors.Is(err, store.ErrBusy) {
					t.Error(err)
				}
				row.ID = "tkt_" + uuid.NewString()
			}
		}
		for i := range fans {
			wg.Add(1)
			go sell(i)
		}
		close(start)
		time.Sleep(time.Duration(5+round*10) * time.Millisecond) // the cancellation lands among the sales
		c, err := st.Jobs.CancelEvent(ctx, ev, "", "olga", "ill", "job-"+ev)
		require.NoError(t, err)
		// The job: every booking paid when the cancellation committed, paged
		// and cancelled (tickets revoked) while the sales still issue.
		var cancelled []uuid.UUID
		for after := uuid.Nil; ; {
			page, err := st.Jobs.PaidBookingsAfter(ctx, ev, after, 7)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			for _, id := range page {
				_, err := st.Bookings.CancelPaid(ctx, id)
				require.NoError(t, err)
				// The money back: refunded once captured, else voided.
				_, err = st.Pool().Exec(ctx, `UPDATE payments SET status = CASE WHEN status = 'CAPTURED' THEN 'REFUNDED' ELSE 'VOIDED' END
					WHERE reservation_id = $1`, id)
				require.NoError(t, err)
				cancelled = append(cancelled, id)
			}
			after = page[len(page)-1]
		}
		wg.Wait()
		require.Len(t, cancelled, c.Job.Total, "the job cancels what the cancellation counted")

		var paid, valid, revoked, strangers, twice int
		require.NoError(t, st.Pool().QueryRow(ctx, `SELECT
			  (SELECT count(*) FROM reservations WHERE event_id = $1 AND status = 'PAID'),
			  (SELECT count(*) FROM tickets WHERE event_id = $1 AND status = 'VALID'),
			  (SELECT count(*) FROM tickets WHERE event_id = $1 AND status = 'REVOKED'),
			  (SELECT count(*) FROM tickets WHERE event_id = $1 AND NOT reservation_id = ANY($2)),
			  (SELECT count(*) FROM (SELECT reservation_id FROM tickets WHERE event_id = $1
			     GROUP BY reservation_id HAVING count(*) > 1) x)`, ev, cancelled).Scan(&paid, &valid, &revoked, &strangers, &twice))
		require.Zero(t, paid, "round %d", round)
		require.Zero(t, valid, "round %d", round)
		require.Zero(t, strangers, "round %d: tickets of bookings the cancellation did not count", round)
		require.Zero(t, twice, "round %d: a booking with two tickets for its one seat", round)
		require.LessOrEqual(t, revoked, c.Job.Total, "round %d: revoked tickets for %d paid bookings", round, c.Job.Total)
		rep, err := st.Holds.Audit(ctx, ev, time.Minute)
		require.NoError(t, err)
		require.Zero(t, rep.Violations(), rep.String())
		t.Logf("round %d: %d paid when cancelled, %d tickets revoked, %d holds released", round, c.Job.Total, revoked, len(c.Released))
	}
}

func TestTheSettleCountNamesAPaidBookingStillWithoutItsTicketsAndItsPayment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTicketEvent(t)
	issued := e.sold("issued", 1)
	require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{e.ticket(issued, "issued", 1)}))
	waiting := e.sold("waiting", 2)
	require.NoError(t, e.st.Bookings.SavePayment(ctx, waiting, "pi_w"+e.ev, money.Money{Amount: 1000, Currency: "EUR"},
		vocab.PaymentAuthorised, 1))

	settled, err := e.st.Holds.Settle(ctx, e.ev, time.Minute)
	require.NoError(t, err)
	require.EqualValues(t, 1, settled.BookingsMissingTickets)
	require.Len(t, settled.UnsettledBookings, 1, "only the booking still waiting for its tickets")
	require.Contains(t, settled.UnsettledBookings[0], waiting.String()+" PAID payment AUTHORISED places 1 tickets 0 expires ")

	require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{e.ticket(waiting, "waiting", 2)}))
	settled, err = e.st.Holds.Settle(ctx, e.ev, time.Minute)
	require.NoError(t, err)
	require.Zero(t, settled.BookingsMissingTickets)
	require.Empty(t, settled.UnsettledBookings)
}
