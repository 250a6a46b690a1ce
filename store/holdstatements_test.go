package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
// prices, and one outbox row naming the section.
func TestAHoldSendsAsManyStatementsForFourSeatsAsForOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := &testenv.QueryCounter{}
	pool, err := store.OpenPool(ctx, testenv.DatabaseURL(t), store.PoolOptions{MaxConns: 2, Tracer: counter})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool, store.Options{})
	ev := onSaleEvent(t, st, "evt_statements_", 2, 10, 0)
	hold := func(user string, seats ...string) (store.Hold, int64) {
		t.Helper()
		counter.Reset()
		h, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: user + ev,
			EventID: ev, SeatIDs: seats})
		require.NoError(t, err)
		return h, counter.Count()
	}
	_, forOne := hold("fan_one_", seatOf(ev, 0))
	four, forFour := hold("fan_four_", seatOf(ev, 14), seatOf(ev, 2), seatOf(ev, 13), seatOf(ev, 1))
	require.Equal(t, forOne, forFour, "statements for one seat, then for four")
	require.LessOrEqual(t, forOne, int64(9), "statements of a one-seat hold")

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
