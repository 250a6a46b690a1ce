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
