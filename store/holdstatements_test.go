package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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

// A seat's status changes on every hold, sale and release, so none of those
// updates is HOT: each writes an entry in every index of seats whose
// predicate the new row meets. A held and a sold seat meet three (its key,
// its place, its reservation), a free one three (its key, its place, the
// free seats by number), a blocked one three; migration 0050 dropped the
// (section_id, status) index that every one of them also wrote.
func TestASeatsChangeOfStatusWritesThreeIndexEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	st := store.New(pool, store.Options{})
	ev := onSaleEvent(t, st, "evt_seatidx_", 1, 10, 0)
	h, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "fan_idx_" + ev,
		EventID: ev, SeatIDs: []string{seatOf(ev, 1)}})
	require.NoError(t, err)
	rows, err := pool.Query(ctx, `SELECT c.relname, coalesce(pg_get_expr(i.indpred, i.indrelid), 'true')
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'seats'::regclass`)
	require.NoError(t, err)
	predicates, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Name, Predicate string }])
	require.NoError(t, err)
	written := func(seat, status string, reservation *uuid.UUID) []string {
		t.Helper()
		var out []string
		for _, p := range predicates {
			// The predicate on the seat's row as it would be: the index gets
			// an entry when it holds.
			var meets bool
			require.NoError(t, pool.QueryRow(ctx, `SELECT `+p.Predicate+` FROM (SELECT s.id, s.event_id, s.section_id,
				s.row_label, s.number, $2::text AS status, $3::uuid AS reservation_id FROM seats s WHERE s.id = $1) seats`,
				seat, status, reservation).Scan(&meets), p.Name)
			if meets {
				out = append(out, p.Name)
			}
		}
		return out
	}
	for _, c := range []struct {
		status      string
		reservation *uuid.UUID
	}{{"HELD", &h.ID}, {"SOLD", &h.ID}, {"AVAILABLE", nil}, {"BLOCKED", nil}} {
		require.Len(t, written(seatOf(ev, 1), c.status, c.reservation), 3, "the indexes a %s seat is written to", c.status)
	}
}

// A hold runs the generic plans of its statements, planned once a
// connection: left to choose, PostgreSQL planned the take afresh on every
// hold, since its generic plan's estimate never won. A refusal's
// alternatives run theirs too, inside the hold's transaction and outside
// it (the seat hints' refusal): planned afresh every time, they cost a
// refusal more than their execution (0.9 ms against 0.75 ms on a stadium
// section).
func TestAHoldAndARefusalsAlternativesRunTheirGenericPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// One connection: the prepared statements read are the holds' own.
	pool, st, _ := countedStore(t, 1)
	ev := onSaleEvent(t, st, "evt_plans_", 2, 10, 0)
	const holds = pastCustomPlans
	for i := range holds {
		_, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: fmt.Sprintf("fan_plan_%d_%s", i, ev),
			EventID: ev, SeatIDs: []string{seatOf(ev, i)}})
		require.NoError(t, err)
	}
	for i := range 2 {
		_, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: fmt.Sprintf("fan_plan_late_%d_%s", i, ev),
			EventID: ev, SeatIDs: []string{seatOf(ev, i)}})
		var refused *store.SeatUnavailableError
		require.ErrorAs(t, err, &refused)
		require.NotEmpty(t, refused.Alternatives)
	}

	plans := func(prefix string) (generic, custom int64) { return preparedPlans(t, pool, prefix) }
	generic, custom := plans("WITH taken AS (UPDATE seats")
	require.Equal(t, int64(holds+2), generic, "the take's generic plans")
	require.Zero(t, custom, "the take's custom plans")
	generic, custom = plans("WITH ref AS")
	require.Equal(t, int64(2), generic, "the alternatives' generic plans in the hold's transaction")
	require.Zero(t, custom, "the alternatives' custom plans in the hold's transaction")

	for range holds {
		alts, err := st.Holds.Alternatives(ctx, ev, []string{seatOf(ev, 3)}, []string{seatOf(ev, 3)}, 1)
		require.NoError(t, err)
		require.Len(t, alts, 6)
	}
	generic, custom = plans("WITH ref AS")
	require.Equal(t, int64(2+holds), generic, "the alternatives' generic plans, then outside a transaction")
	require.Zero(t, custom, "the alternatives' custom plans outside a transaction")
}

// A hold's pre-check runs its generic plan, planned once a connection, and
// costs one round trip with the setting that picks it. Left to choose,
// PostgreSQL planned it afresh for 2,500 of 6,000 holds of a fresh stack.
func TestAPreCheckRunsItsGenericPlanInOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, st, counter := countedStore(t, 1)
	ev := onSaleEvent(t, st, "evt_precheck_", 2, 10, 0)
	const checks = pastCustomPlans
	for i := range checks {
		counter.Reset()
		_, err := st.Holds.PreCheck(ctx, fmt.Sprintf("fan_pre_%d", i), ev, 1)
		require.NoError(t, err)
		require.Equal(t, int64(1), counter.Trips(), "round trips of a pre-check")
	}
	generic, custom := preparedPlans(t, pool, store.PreCheckSQL)
	require.Equal(t, int64(checks), generic, "the pre-check's generic plans")
	require.Zero(t, custom, "the pre-check's custom plans")

	draft := onSaleEvent(t, st, "evt_predraft_", 1, 10, 0)
	_, err := pool.Exec(ctx, `UPDATE events SET status = 'DRAFT' WHERE id = $1`, draft)
	require.NoError(t, err)
	for name, id := range map[string]string{"an event that does not exist": "evt_no_such_" + ev, "a draft": draft} {
		_, err := st.Holds.PreCheck(ctx, "fan_pre_0", id, 1)
		var invalid *store.InvalidError
		require.ErrorAs(t, err, &invalid, name)
		require.Equal(t, "event_id", invalid.Field, name)
	}
}

// A seat refused is answered with its alternatives in one round trip after
// the take's: the question whether an expired hold has the seats, their
// existence and the alternatives go together, on the plans the transaction
// already runs. Before, the question, the existence, the plan setting and
// the alternatives were a round trip each.
func TestARefusedSeatIsAnsweredWithItsAlternativesInOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st, counter := countedStore(t, 1)
	ev := onSaleEvent(t, st, "evt_refusaltrips_", 2, 10, 0)
	_, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "fan_first_" + ev,
		EventID: ev, SeatIDs: []string{seatOf(ev, 4), seatOf(ev, 5)}})
	require.NoError(t, err)
	refuse := func(seats ...string) (*store.SeatUnavailableError, int64) {
		t.Helper()
		counter.Reset()
		_, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "fan_late_" + ev,
			EventID: ev, SeatIDs: seats})
		var refused *store.SeatUnavailableError
		require.ErrorAs(t, err, &refused)
		return refused, counter.Trips()
	}
	refuse(seatOf(ev, 5)) // prepares the statements
	refused, trips := refuse(seatOf(ev, 5), seatOf(ev, 6))
	require.Equal(t, []string{seatOf(ev, 5)}, refused.SeatIDs)
	require.Equal(t, []string{seatOf(ev, 3), seatOf(ev, 7), seatOf(ev, 2), seatOf(ev, 8), seatOf(ev, 1), seatOf(ev, 9)},
		refused.Alternatives, "the row's free seats by distance from the refused one, the cart's own left out")
	// The checks with the take, the refusal's reads, the rollback.
	require.Equal(t, int64(3), trips, "round trips of a refused hold")

	_, _, err = st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "fan_late_" + ev,
		EventID: ev, SeatIDs: []string{seatOf(ev, 5), "sec_" + ev + "-Z-99"}})
	var invalid *store.InvalidError
	require.ErrorAs(t, err, &invalid, "a seat that does not exist is named, not offered alternatives")
	require.Equal(t, "seat_ids", invalid.Field)
	require.Contains(t, invalid.Message, "-Z-99")
}

// A refused seat's alternatives read its row alone when the row has free
// seats enough: the other rows' scan (every row of the section, within
// three seat numbers) runs only when the row's free seats are too few.
// The scan is found by its filter, whichever index it goes through.
func TestAlternativesReadTheRowAloneWhenItHasFreeSeatsEnough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(testenv.DB(t), store.Options{})
	ev := onSaleEvent(t, st, "evt_altrow_", 20, 10, 0)
	otherRowsLoops := func(unavailable string, limit int) int {
		t.Helper()
		var raw []byte
		require.NoError(t, st.Pool().QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+store.AlternativesNear,
			ev, []string{unavailable}, []string{unavailable}, limit, 3).Scan(&raw))
		var plan []struct{ Plan planNode }
		require.NoError(t, json.Unmarshal(raw, &plan))
		require.Len(t, plan, 1)
		loops, found := plan[0].Plan.loopsOf("row_label <> ")
		require.True(t, found, "the other rows' scan is in the plan: %s", raw)
		return loops
	}
	require.Zero(t, otherRowsLoops(seatOf(ev, 55), 6), "the other rows' scan when the row has 9 free seats for 6")
	require.Positive(t, otherRowsLoops(seatOf(ev, 55), 12), "the other rows' scan when the row has 9 free seats for 12")
}

// A fan's pending hold, purchase limit and unpaid room-nights are looked up
// through the fan's index (reservations_user_event), never through one that
// reads every live hold of the event (reservations_event_status) or of every
// event (reservations_pending_expiry) on every hold, nor by a scan of the
// table. The test reads the plans three ways: as planned for the fan;
// generic (as a hold's transaction runs them) on statistics taken while no
// hold was pending, as before a sale opens, where the flat lookup of the
// fan's pending hold that the hold used to send goes through every pending
// hold of the database (checked here, so the statistics are known to set the
// trap); and with the fan's index taken away (in a transaction rolled back,
// on a database of its own, whose autovacuum is off so only the test
// analyses), where a lookup that left the planner the event's indexes takes
// one of them, as the planner did on a fresh database's first sale while its
// statistics lagged (2,400 buffers a lookup after 3,000 holds).
func TestAFansOwnLookupsNeverReadThroughTheEventsIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testenv.FreshDB(t)
	_, err := pool.Exec(ctx, `ALTER TABLE reservations SET (autovacuum_enabled = off)`)
	require.NoError(t, err)
	st := store.New(pool, store.Options{})
	ev := onSaleEvent(t, st, "evt_fanled_", 2, 10, 0)
	for i := range 12 {
		_, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: fmt.Sprintf("fan_led_%d", i),
			EventID: ev, SeatIDs: []string{seatOf(ev, i)}})
		require.NoError(t, err)
	}
	// Each lookup with its second parameter's type and value (the first is
	// the fan).
	type lookup struct{ sql, second, value string }
	lookups := map[string]lookup{
		"pre-check":     {store.PreCheckSQL, "text", ev},
		"limit":         {store.CheckLimitSQL, "text", ev},
		"own pending":   {store.OwnPendingSQL, "text", ev},
		"unpaid nights": {store.UnpaidNightsSQL, "uuid", uuid.NewString()},
	}
	type querier interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}
	// explain lists the indexes the plan reads and the tables it scans whole.
	explain := func(q querier, sql, name string, args ...any) ([]string, string) {
		t.Helper()
		var raw []byte
		require.NoError(t, q.QueryRow(ctx, sql, args...).Scan(&raw), name)
		var plan []struct{ Plan planNode }
		require.NoError(t, json.Unmarshal(raw, &plan), name)
		require.Len(t, plan, 1)
		return append(plan[0].Plan.indexes(), plan[0].Plan.seqScans()...), string(raw)
	}
	forTheFan := func(q querier, name string) ([]string, string) {
		l := lookups[name]
		return explain(q, `EXPLAIN (FORMAT JSON) `+l.sql, name, "fan_led_3", l.value)
	}
	neverTheEvents := func(used []string, raw, name, when string) {
		t.Helper()
		require.NotContains(t, used, "reservations_event_status", "%s %s: %s", name, when, raw)
		require.NotContains(t, used, "reservations_pending_expiry", "%s %s: %s", name, when, raw)
	}
	for name := range lookups {
		used, raw := forTheFan(pool, name)
		require.Contains(t, used, "reservations_user_event", "%s reads the fan's index: %s", name, raw)
	}

	// A sale's first minutes: 3,000 fans' holds pending, on statistics
	// taken while none was.
	_, err = pool.Exec(ctx, `INSERT INTO users (id) SELECT 'fan_crowd_' || g FROM generate_series(1, 3000) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency)
		SELECT gen_random_uuid(), 'fan_crowd_' || g, $1, 'CANCELLED', now(), now(), 0, 'EUR' FROM generate_series(1, 3000) g`, ev)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE reservations SET status = 'CANCELLED', ended_at = now() WHERE event_id = $1 AND status = 'PENDING_PAYMENT'`, ev)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE reservations`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE reservations SET status = 'PENDING_PAYMENT', ended_at = NULL, expires_at = now() + interval '10 minutes'
		WHERE event_id = $1`, ev)
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)
	generic := func(name string, l lookup) ([]string, string) {
		t.Helper()
		stmt := "lookup_" + strings.NewReplacer(" ", "_", "-", "_").Replace(name)
		_, err := tx.Exec(ctx, `PREPARE `+stmt+` (text, `+l.second+`) AS `+l.sql)
		require.NoError(t, err, name)
		defer func() { _, err = tx.Exec(ctx, `DEALLOCATE `+stmt); require.NoError(t, err, name) }()
		return explain(tx, `EXPLAIN (FORMAT JSON) EXECUTE `+stmt+`('fan_led_3', '`+l.value+`')`, name)
	}
	used, raw := generic("flat pending", lookup{`SELECT id, expires_at <= now() FROM reservations
		WHERE user_id = $1 AND event_id = $2 AND status = 'PENDING_PAYMENT' FOR UPDATE`, "text", ev})
	require.Contains(t, used, "reservations_pending_expiry", "the statistics plan the flat lookup through every pending hold: %s", raw)
	for name, l := range lookups {
		used, raw := generic(name, l)
		require.Contains(t, used, "reservations_user_event", "%s reads the fan's index on its generic plan: %s", name, raw)
		require.NotContains(t, used, "reservations", "%s scans the reservations on its generic plan: %s", name, raw)
		neverTheEvents(used, raw, name, "on its generic plan, planned on statistics without pending holds")
	}

	_, err = tx.Exec(ctx, `DROP INDEX reservations_user_event`)
	require.NoError(t, err)
	for name := range lookups {
		used, raw := forTheFan(tx, name)
		neverTheEvents(used, raw, name, "without the fan's index")
	}
}

// pastCustomPlans runs a statement past the five custom plans PostgreSQL
// tries on a connection before it compares them with the generic one.
const pastCustomPlans = 8

// preparedPlans counts the generic and custom plans of the statements
// prepared on pool's connection (a pool of one) whose text begins with
// prefix.
func preparedPlans(t *testing.T, pool *pgxpool.Pool, prefix string) (generic, custom int64) {
	t.Helper()
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)
		FROM pg_prepared_statements WHERE starts_with(statement, $1)`, prefix).Scan(&generic, &custom))
	return generic, custom
}

// planNode is a node of EXPLAIN's JSON plan, with its children.
type planNode struct {
	NodeType   string     `json:"Node Type"`
	Relation   string     `json:"Relation Name"`
	IndexName  string     `json:"Index Name"`
	IndexCond  string     `json:"Index Cond"`
	Filter     string     `json:"Filter"`
	JoinFilter string     `json:"Join Filter"`
	Loops      int        `json:"Actual Loops"`
	Plans      []planNode `json:"Plans"`
}

// indexes lists the indexes the plan reads.
func (n planNode) indexes() []string {
	var out []string
	if n.IndexName != "" {
		out = append(out, n.IndexName)
	}
	for _, c := range n.Plans {
		out = append(out, c.indexes()...)
	}
	return out
}

// seqScans lists the tables the plan scans whole.
func (n planNode) seqScans() []string {
	var out []string
	if n.NodeType == "Seq Scan" {
		out = append(out, n.Relation)
	}
	for _, c := range n.Plans {
		out = append(out, c.seqScans()...)
	}
	return out
}

// loopsOf is how often the plan's scan whose condition or filter has cond
// ran (0: never executed), whichever index the planner chose for it.
func (n planNode) loopsOf(cond string) (int, bool) {
	if strings.Contains(n.IndexCond, cond) || strings.Contains(n.Filter, cond) || strings.Contains(n.JoinFilter, cond) {
		return n.Loops, true
	}
	for _, c := range n.Plans {
		if loops, ok := c.loopsOf(cond); ok {
			return loops, true
		}
	}
	return 0, false
}

// A booking's page reads on generic plans, planned once a connection, each
// part of it by the booking's key: with "= ANY($1)" of one ID, PostgreSQL
// planned each of its parts afresh on every read (1,211 plans for 1,200
// reads in a bookings run, about a millisecond of planning a read), and an
// array of unknown length may be planned as a scan of the table.
func TestABookingsPageReadsOnGenericPlansByTheBookingsKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, st, _ := countedStore(t, 1)
	ev := onSaleEvent(t, st, "evt_viewplans_", 1, 10, 0)
	user := "fan_viewplans_" + ev
	h, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: user,
		EventID: ev, SeatIDs: []string{seatOf(ev, 1)}})
	require.NoError(t, err)
	const reads = pastCustomPlans
	for range reads {
		v, _, err := st.Bookings.BookingWithTerms(ctx, h.ID, user)
		require.NoError(t, err)
		require.Len(t, v.Hold.Items, 1)
	}
	parts := map[string]bool{"SELECT i.reservation_id": true, "SELECT t.reservation_id": true, "SELECT reservation_id, stay": true,
		"SELECT reservation_id, id, property_id": true, "SELECT r.id, d.dispute_id": false}
	for part, byKey := range parts {
		generic, custom := preparedPlans(t, pool, part)
		require.Equal(t, int64(reads), generic, "%s: generic plans", part)
		require.Zero(t, custom, "%s: custom plans", part)
		var sql string
		require.NoError(t, pool.QueryRow(ctx, `SELECT statement FROM pg_prepared_statements WHERE starts_with(statement, $1)`,
			part).Scan(&sql))
		if byKey {
			require.Contains(t, sql, "reservation_id = $1 ORDER BY", "%s reads by the booking's key", part)
		}
	}
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
