package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/store"
)

// typedEvent is a ticket event (seats of category "standard" at 10.00)
// with ticket types adult (the event's prices) and child at 6.00 (at most
// two per order), a 1.50 service fee per ticket, and its organisation's
// tax at rateBp (included in prices or not).
func typedEvent(t *testing.T, rateBp int, included bool) ticketEvent {
	t.Helper()
	ctx := context.Background()
	e := newTicketEvent(t)
	org := "org_" + e.ev
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO organisations (id, legal_name, tax_rate_bp, prices_include_tax) VALUES ($1, 'T BV', $2, $3)`, []any{org, rateBp, included}},
		{`UPDATE events SET org_id = $2, service_fee = 150 WHERE id = $1`, []any{e.ev, org}},
		{`INSERT INTO ticket_types (event_id, id, name, position) VALUES ($1, 'adult', 'Adult', 0)`, []any{e.ev}},
		{`INSERT INTO ticket_types (event_id, id, name, position, max_per_order) VALUES ($1, 'child', 'Child', 1, 2)`, []any{e.ev}},
		{`INSERT INTO ticket_type_prices (event_id, type_id, category, amount) VALUES ($1, 'child', 'standard', 600)`, []any{e.ev}},
	} {
		_, err := e.st.Pool().Exec(ctx, q.sql, q.args...)
		require.NoError(t, err, q.sql)
	}
	return e
}

func (e ticketEvent) holdTyped(user string, types map[string]string, seats ...int) (store.Hold, error) {
	ids := make([]string, len(seats))
	for i, n := range seats {
		ids[i] = e.seat(n)
	}
	h, _, err := e.st.Holds.CreateHold(context.Background(), store.HoldRequest{ReservationID: uuid.New(), UserID: user,
		EventID: e.ev, SeatIDs: slices.Sorted(slices.Values(ids)), TicketTypes: types})
	return h, err
}

func TestAHoldPricesEachSeatByItsTicketTypeWithTheFeeAndTaxApart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		included  bool
		wantTax   int64
		wantTotal int64
	}{
		// Lines 10.00 + 6.00, fees 2 x 1.50: 19.00 gross, of which 21 % VAT is 3.30.
		{"with tax included in the prices", true, 330, 1900},
		// 19.00 net plus 21 % VAT, 3.99: 22.99.
		{"with tax added to the prices", false, 399, 2299},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := typedEvent(t, 2100, tc.included)
			h, err := e.holdTyped("fan_"+e.ev, map[string]string{e.seat(2): "child"}, 1, 2)
			require.NoError(t, err)
			require.Len(t, h.Items, 2)
			byType := map[string]store.Item{}
			for _, it := range h.Items {
				byType[it.TicketType] = it
			}
			require.Equal(t, int64(1000), byType["adult"].Price.Amount, "a seat naming no type is the first type, at the event's price")
			require.Equal(t, int64(600), byType["child"].Price.Amount)
			require.Equal(t, int64(150), byType["child"].Fee)
			require.Equal(t, int64(300), h.Fees)
			require.Equal(t, tc.wantTax, h.Tax)
			require.Equal(t, 2100, h.TaxRateBp)
			require.Equal(t, tc.wantTotal, h.Total.Amount)

			read, err := e.st.Holds.GetHold(context.Background(), h.ID, "")
			require.NoError(t, err)
			require.Equal(t, h.Total, read.Total)
			require.Equal(t, h.Fees, read.Fees)
			require.Equal(t, h.Tax, read.Tax)
		})
	}
}

func TestATicketTypeTheEventDoesNotHaveOrPastItsLimitIsRefusedNamingTheSeat(t *testing.T) {
	t.Parallel()
	e := typedEvent(t, 0, true)
	_, err := e.holdTyped("fan_"+e.ev, map[string]string{e.seat(1): "senior"}, 1)
	var inv *store.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "ticket_types."+e.seat(1), inv.Field)

	_, err = e.holdTyped("fan2_"+e.ev, map[string]string{e.seat(1): "child", e.seat(2): "child", e.seat(3): "child"}, 1, 2, 3)
	require.ErrorAs(t, err, &inv)
	require.Contains(t, inv.Message, "at most 2 tickets of type child")
	require.Zero(t, e.count(`SELECT count(*) FROM seats WHERE event_id = $1 AND status <> 'AVAILABLE'`, e.ev), "a refused cart holds nothing")
}

// TestPricesPerTypeAreFrozenAtHoldTimeWhileTheOrganiserChangesThem: holds
// of child tickets race a change of the child price; each hold's line is
// the price its transaction read (one of the two), its stored line and
// total agree with its answer, and a hold taken before the change keeps
// its price after it.
func TestPricesPerTypeAreFrozenAtHoldTimeWhileTheOrganiserChangesThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := typedEvent(t, 0, true)
	before, err := e.holdTyped("early_"+e.ev, map[string]string{e.seat(5): "child"}, 5)
	require.NoError(t, err)
	var wg sync.WaitGroup
	holds := make([]store.Hold, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holds[i], errs[i] = e.holdTyped("fan_"+e.ev+"_"+string(rune('a'+i)), map[string]string{e.seat(i + 1): "child"}, i+1)
		}()
	}
	_, err = e.st.Pool().Exec(ctx, `UPDATE ticket_type_prices SET amount = 700 WHERE event_id = $1 AND type_id = 'child'`, e.ev)
	require.NoError(t, err)
	wg.Wait()
	for i, h := range holds {
		require.NoError(t, errs[i])
		// The line's base is the type's price its transaction read; the
		// section's surge may come on top.
		require.Contains(t, []int64{600, 700}, h.Items[0].Base)
		price := h.Items[0].Price.Amount
		var stored, total int64
		require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT i.price_at_lock, r.total FROM reservation_items i JOIN reservations r ON r.id = i.reservation_id
			WHERE r.id = $1`, h.ID).Scan(&stored, &total))
		require.Equal(t, price, stored)
		require.Equal(t, price+150, total)
	}
	again, err := e.st.Holds.GetHold(ctx, before.ID, "")
	require.NoError(t, err)
	require.Equal(t, int64(600), again.Items[0].Base, "a hold keeps the price it was taken at")
	require.Equal(t, before.Items[0].Price, again.Items[0].Price)
}

func (e ticketEvent) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.st.Pool().QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}
