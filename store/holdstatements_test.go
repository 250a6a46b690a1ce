package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
)

// A hold sends as many statements for four seats as for one: the fan's
// account and the reservation are one statement, the seats' take and their
// sections' surge another, and the items, the hold's outbox row and the
// reservation's total a third. Written apart, each item was a statement of
// its own and the account, the surge read, the outbox row and the total one
// each (13 statements for one seat, 16 for four). What the one statement
// writes is all there: an item a seat in seat order, the total of their
// prices, and one outbox row naming the section. It costs three round
// trips to the database.
func TestAHoldSendsAsManyStatementsForFourSeatsAsForOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, st, counter := countedStore(t, 2)
	ev := onSaleEvent(t, st, "evt_statements_", 2, 10, 0)
	hold := func(user string, seats ...string) (store.Hold, int64, int64) {
		t.Helper()
		counter.Reset()
		h, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: user + ev,
			EventID: ev, SeatIDs: seats})
		require.NoError(t, err)
		return h, counter.Count(), counter.Trips()
	}
	_, forOne, _ := hold("fan_one_", seatOf(ev, 0)) // prepares the statements
	four, forFour, trips := hold("fan_four_", seatOf(ev, 14), seatOf(ev, 2), seatOf(ev, 13), seatOf(ev, 1))
	require.Equal(t, forOne, forFour, "statements for one seat, then for four")
	require.LessOrEqual(t, forOne, int64(9), "statements of a one-seat hold")
	// The checks with the take, the writes with the key's record, the
	// commit: the take waits for no check's answer, since a refusal rolls
	// it back.
	require.Equal(t, int64(3), trips, "round trips of a hold")

	rows, err := pool.Query(ctx, `SELECT seat_id, price_at_lock FROM reservation_items WHERE reservation_id = $1 ORDER BY id`, four.ID)
	require.NoError(t, err)
	type item struct {
		Seat  string
		Price int64
	}
	items, err := pgx.CollectRows(rows, pgx.RowToStructByPos[item])
	require.NoError(t, err)
	want := []string{seatOf(ev, 1), seatOf(ev, 2), seatOf(ev, 13), seatOf(ev, 14)}
	var sum int64
	for i, it := range items {
		require.Equal(t, want[i], it.Seat, "item %d", i)
		require.Equal(t, four.Items[i].Price.Amount, it.Price)
		sum += it.Price
	}
	require.Len(t, items, 4)
	var total, fees, tax int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT total, fees, tax FROM reservations WHERE id = $1`, four.ID).Scan(&total, &fees, &tax))
	require.Equal(t, four.Total.Amount, total)
	require.Equal(t, sum+fees, total, "prices include tax here: the total is the items and the fees")

	var key string
	var payload []byte
	require.NoError(t, pool.QueryRow(ctx, `SELECT key, payload::text FROM outbox WHERE topic = $1 AND payload->>'event_id' = $2
		ORDER BY id DESC LIMIT 1`, store.TopicInventoryChanged, ev).Scan(&key, &payload))
	var body struct {
		EventID    string   `json:"event_id"`
		SectionIDs []string `json:"section_ids"`
	}
	require.NoError(t, json.Unmarshal(payload, &body))
	require.Equal(t, "sec_"+ev, key)
	require.Equal(t, []string{"sec_" + ev}, body.SectionIDs)
	var changes int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE payload->>'event_id' = $1`, ev).Scan(&changes))
	require.Equal(t, 2, changes, "one outbox row a hold")
}

// A hold of two seats writes each of its rows once: the reservation is
// inserted with its total (the seats name it before it is written, checked
// at commit), never updated after; the sale then updates the reservation
// and the seats once each and writes no outbox row, since a held seat and
// a sold one are both taken.
func TestAHoldWritesItsReservationOnceAndItsSaleNoOutboxRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testenv.FreshDB(t) // its own database: the trigger counts every write
	st := store.New(pool, store.Options{})
	ev := onSaleEvent(t, st, "evt_rowwrites_", 2, 10, 0)
	writes := testenv.CountRowWrites(t, pool, "reservations", "reservation_items", "seats", "outbox", "users", "section_taken")
	h, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "fan_rw_" + ev,
		EventID: ev, SeatIDs: []string{seatOf(ev, 3), seatOf(ev, 4)}})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"reservations": 1, "reservation_items": 2, "seats": 2, "outbox": 1, "users": 1,
		"section_taken": 1}, writes(), "the hold's row writes")
	var total int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT total FROM reservations WHERE id = $1`, h.ID).Scan(&total))
	require.Equal(t, h.Total.Amount, total)
	require.Positive(t, total)

	ok, err := st.Bookings.ConfirmSale(ctx, h.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, map[string]int{"reservations": 2, "reservation_items": 2, "seats": 4, "outbox": 1, "users": 1,
		"section_taken": 1}, writes(), "after the sale")
}

// A hold runs the generic plans of its statements, planned once a
// connection: left to choose, PostgreSQL planned the take afresh on every
// hold, since its generic plan's estimate never won. A refusal's
// alternatives, whose best plan depends on the seats, are planned for them
// every time still.
func TestAHoldPlansItsTakeOnceAConnectionAndARefusalsAlternativesForTheirSeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// One connection: the prepared statements read are the holds' own.
	pool, st, _ := countedStore(t, 1)
	ev := onSaleEvent(t, st, "evt_plans_", 2, 10, 0)
	const holds = 8 // past the five custom plans PostgreSQL tries before it compares
	for i := range holds {
		_, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: fmt.Sprintf("fan_plan_%d_%s", i, ev),
			EventID: ev, SeatIDs: []string{seatOf(ev, i)}})
		require.NoError(t, err)
	}
	_, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "fan_plan_late_" + ev,
		EventID: ev, SeatIDs: []string{seatOf(ev, 0)}})
	var refused *store.SeatUnavailableError
	require.ErrorAs(t, err, &refused)
	require.NotEmpty(t, refused.Alternatives)

	plans := func(prefix string) (generic, custom int64) {
		t.Helper()
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)
			FROM pg_prepared_statements WHERE statement LIKE $1 || '%'`, prefix).Scan(&generic, &custom))
		return generic, custom
	}
	generic, custom := plans("WITH taken AS (UPDATE seats")
	require.Equal(t, int64(holds+1), generic, "the take's generic plans")
	require.Zero(t, custom, "the take's custom plans")
	generic, custom = plans("WITH ref AS")
	require.Zero(t, generic, "the alternatives' generic plans")
	require.Positive(t, custom, "the alternatives' custom plans")
}

// A booking's page reads in one round trip, with the saga's terms of it:
// the view's queries, LoadBooking's and the BEGIN and COMMIT of their
// snapshot are pipelined. Read as a transaction of its own, it cost a round
// trip a query and two more, and LoadBooking one after it.
func TestABookingReadsWithItsTermsInOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, st, counter := countedStore(t, 1)
	ev := onSaleEvent(t, st, "evt_viewtrips_", 1, 10, 0)
	user := "fan_viewtrips_" + ev
	h, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: user,
		EventID: ev, SeatIDs: []string{seatOf(ev, 2), seatOf(ev, 1)}})
	require.NoError(t, err)

	_, _, err = st.Bookings.BookingWithTerms(ctx, h.ID, user) // prepares the statements on the connection
	require.NoError(t, err)
	counter.Reset()
	v, info, err := st.Bookings.BookingWithTerms(ctx, h.ID, user)
	require.NoError(t, err)
	require.Equal(t, int64(1), counter.Trips(), "round trips of a booking's read with its terms")

	require.Equal(t, h.ID, v.Hold.ID)
	require.Equal(t, h.Total, v.Hold.Total)
	require.Len(t, v.Hold.Items, 2)
	require.Equal(t, seatOf(ev, 1), v.Hold.Items[0].SeatID, "items in seat order")
	require.Equal(t, []store.Voucher{}, v.Vouchers)
	want, err := st.Bookings.LoadBooking(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, want, info)

	counter.Reset()
	_, err = st.Bookings.Booking(ctx, h.ID, user)
	require.NoError(t, err)
	require.Equal(t, int64(1), counter.Trips(), "round trips of a booking's read")

	_, _, err = st.Bookings.BookingWithTerms(ctx, h.ID, "someone_else")
	require.ErrorIs(t, err, store.ErrNotFound, "another fan's booking")
	_, _, err = st.Bookings.BookingWithTerms(ctx, uuid.New(), user)
	require.ErrorIs(t, err, store.ErrNotFound, "a booking that does not exist")
	counter.Reset()
	_, _, err = st.Bookings.BookingWithTerms(ctx, h.ID, user)
	require.NoError(t, err)
	require.Equal(t, int64(1), counter.Trips(), "a read after a missing booking's: its statements still prepared")
	var status byte
	c, err := pool.Acquire(ctx)
	require.NoError(t, err)
	status = c.Conn().PgConn().TxStatus()
	c.Release()
	require.Equal(t, byte('I'), status, "the connection is back idle, its snapshot committed")
}

// A read in one snapshot whose query fails is rolled back: the
// connection goes back to the pool idle, not closed, and serves the next
// read.
func TestAFailedReadInOneSnapshotLeavesItsConnectionIdle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _, _ := countedStore(t, 1)
	var pid int
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	b := &pgx.Batch{}
	b.Queue(`SELECT 1`)
	b.Queue(`SELECT 1 / 0`)
	b.Queue(`SELECT 2`)
	err := store.ReadInSnapshot(ctx, pool, b)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "22012", pgErr.Code, "division by zero")
	var again int
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&again))
	require.Equal(t, pid, again, "the same connection, kept")
}

// A fan whose own hold has expired, unswept, holds its seats again: the
// expired hold ends first and the new cart takes them. The take that went
// with the checks missed them (they were still the expired hold's), so the
// attempt is made again with the take after the ending.
func TestAFansExpiredHoldGivesItsSeatsToTheFansNextCart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	st := store.New(pool, store.Options{})
	ev := onSaleEvent(t, st, "evt_ownexpired_", 1, 10, 0)
	user := "fan_ownexpired_" + ev
	first, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: user,
		EventID: ev, SeatIDs: []string{seatOf(ev, 3)}})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1`, first.ID)
	require.NoError(t, err)

	next, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: user,
		EventID: ev, SeatIDs: []string{seatOf(ev, 3), seatOf(ev, 4)}})
	require.NoError(t, err)
	require.Equal(t, []string{seatOf(ev, 3), seatOf(ev, 4)}, next.SeatIDs())
	var status string
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM reservations WHERE id = $1`, first.ID).Scan(&status))
	require.Equal(t, "EXPIRED", status)
	var owners int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM seats WHERE id = $1 AND reservation_id = $2 AND status = 'HELD'`,
		seatOf(ev, 3), next.ID).Scan(&owners))
	require.Equal(t, 1, owners, "the seat is the next cart's")
}

// countedStore is a store over a pool of its own with maxConns connections
// (one: every statement read back is the test's own), whose statements
// and round trips the counter counts.
func countedStore(t *testing.T, maxConns int32) (*pgxpool.Pool, *store.Store, *testenv.QueryCounter) {
	t.Helper()
	counter := &testenv.QueryCounter{}
	pool, err := store.OpenPool(context.Background(), testenv.DatabaseURL(t), store.PoolOptions{MaxConns: maxConns, Tracer: counter})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, store.New(pool, store.Options{}), counter
}
