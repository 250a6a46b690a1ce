package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/pricing"
	"github.com/encore-tickets/encore/store"
)

// seatOf is the nth seat (from 0) of onSaleEvent's seated section, ten a
// row, then B-1.
func seatOf(ev string, n int) string { return fmt.Sprintf("sec_%s-%c-%d", ev, 'A'+rune(n/10), n%10+1) }

// explainedBuffers runs sql under EXPLAIN (ANALYZE, BUFFERS) on q and returns
// the shared buffers its plan visited, and the plan for a failure message.
func explainedBuffers(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sql string, args ...any) (int, string) {
	t.Helper()
	var raw []byte
	require.NoError(t, q.QueryRow(context.Background(), `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+sql, args...).Scan(&raw))
	var plan []struct {
		Plan struct {
			SharedHit  int `json:"Shared Hit Blocks"`
			SharedRead int `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(raw, &plan))
	require.Len(t, plan, 1)
	return plan[0].Plan.SharedHit + plan[0].Plan.SharedRead, string(raw)
}

// takenCounts is a section's taken seats as surge pricing reads them (the
// sum of its section_taken shards) and as the seats say.
func takenCounts(t *testing.T, st *store.Store, section string) (counted, seats int) {
	t.Helper()
	require.NoError(t, st.Pool().QueryRow(context.Background(), `
		SELECT (SELECT coalesce(sum(taken), 0) FROM section_taken WHERE section_id = $1),
		       (SELECT count(*) FROM seats WHERE section_id = $1 AND reservation_id IS NOT NULL)`, section).Scan(&counted, &seats))
	return counted, seats
}

// Every way a seat gets or loses an owner, many at once on one section (holds
// colliding on the same seats, releases, sales, cancelled sales, expiry swept
// and lazy), leaves the count surge pricing reads equal to the seats that
// name a reservation; the audit says so too.
func TestASectionsTakenCountFollowsEveryChangeOfItsSeatsOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Its own database: the sweep ends every expired hold it finds.
	pool, _ := testenv.FreshDB(t)
	st := store.New(pool, store.Options{})
	ev := onSaleEvent(t, st, "evt_taken_", 3, 10, 0)
	section := "sec_" + ev

	// 60 fans at once, each two random seats of 30: most collide.
	held := make([]uuid.UUID, 60)
	var wg sync.WaitGroup
	for i := range held {
		wg.Go(func() {
			a := rand.IntN(30)
			b := (a + 1 + rand.IntN(29)) % 30
			h, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(),
				UserID: fmt.Sprintf("fan_taken_%d_%s", i, ev), EventID: ev, SeatIDs: []string{seatOf(ev, a), seatOf(ev, b)}})
			if err == nil {
				held[i] = h.ID
			}
		})
	}
	wg.Wait()
	var live []uuid.UUID
	for _, id := range held {
		if id != uuid.Nil {
			live = append(live, id)
		}
	}
	require.GreaterOrEqual(t, len(live), 5, "at least five holds should have found two free seats")
	counted, seats := takenCounts(t, st, section)
	require.Equal(t, seats, counted, "after the holds")
	require.Equal(t, 2*len(live), seats)

	// The fifth hold expires and a new hold takes its seats, ending it
	// lazily; then at once: the first sold, the second sold then cancelled,
	// the third released, the fourth expired and swept. (The lazy ending
	// runs alone: a hold that meets a sweep of its seats in flight is
	// refused, as a fan's would be, and asks again.)
	expire := func(id uuid.UUID) {
		t.Helper()
		_, err := st.Pool().Exec(ctx, `UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
		require.NoError(t, err)
	}
	expire(live[4])
	lazy, err := st.Holds.GetHold(ctx, live[4], "")
	require.NoError(t, err)
	_, _, err = st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "fan_taken_lazy_" + ev,
		EventID: ev, SeatIDs: lazy.SeatIDs()})
	require.NoError(t, err)
	expire(live[3])
	errs := make(chan error, 4)
	for i, step := range []func() error{
		func() error { _, err := st.Bookings.ConfirmSale(ctx, live[0]); return err },
		func() error {
			if _, err := st.Bookings.ConfirmSale(ctx, live[1]); err != nil {
				return err
			}
			_, err := st.Bookings.CancelPaid(ctx, live[1])
			return err
		},
		func() error { _, err := st.Holds.Release(ctx, live[2], ""); return err },
		func() error { _, err := st.Holds.SweepExpired(ctx, 1000); return err },
	} {
		wg.Go(func() {
			if err := step(); err != nil {
				errs <- fmt.Errorf("step %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	counted, seats = takenCounts(t, st, section)
	require.Equal(t, seats, counted, "after sales, a cancelled sale, a release and expiry")
	require.Equal(t, 2*(len(live)-3), seats, "three holds gave their seats back; the lazily ended one's went to a new hold")

	rep, err := st.Holds.Audit(ctx, ev, time.Hour)
	require.NoError(t, err)
	require.Zero(t, rep.SeatedMiscounted, rep.String())

	// A count gone wrong (here written by hand) is what the audit exists to
	// find.
	_, err = st.Pool().Exec(ctx, `UPDATE section_taken SET taken = taken + 1 WHERE section_id = $1 AND shard = (
		SELECT min(shard) FROM section_taken WHERE section_id = $1)`, section)
	require.NoError(t, err)
	rep, err = st.Holds.Audit(ctx, ev, time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 1, rep.SeatedMiscounted, rep.String())
}

// A hold's surge read costs a few buffers however full its section is (4
// here; counting the section's taken seats visited 45 on this section, and
// about 300 on a 5,000-seat section half sold under a sale's churn), and the price it freezes follows the occupancy: the
// seat taken beyond half the section is priced half full.
func TestTheSurgeReadCostsAFewBuffersHoweverFullTheSectionAndPricesByItsOccupancy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(testenv.DB(t), store.Options{})
	ev := onSaleEvent(t, st, "evt_surge_", 40, 50, 0)
	section := "sec_" + ev
	// One organiser's reservation takes 1,500 of the 2,000 seats in one
	// statement, as a staff allocation would.
	owner := uuid.New()
	_, err := st.Pool().Exec(ctx, `INSERT INTO users (id) VALUES ('fan_surge_bulk') ON CONFLICT DO NOTHING`)
	require.NoError(t, err)
	_, err = st.Pool().Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, total, currency)
		VALUES ($1, 'fan_surge_bulk', $2, 'PENDING_PAYMENT', now() + interval '1 hour', 0, 'EUR')`, owner, ev)
	require.NoError(t, err)
	_, err = st.Pool().Exec(ctx, `UPDATE seats SET status = 'HELD', reservation_id = $1 WHERE id IN (
		SELECT id FROM seats WHERE section_id = $2 ORDER BY id LIMIT 1500)`, owner, section)
	require.NoError(t, err)
	counted, seats := takenCounts(t, st, section)
	require.Equal(t, 1500, seats)
	require.Equal(t, seats, counted)

	buffers, plan := explainedBuffers(t, st.Pool(), store.SurgeBySection, []string{section})
	require.Less(t, buffers, 12, "the surge read of a section with 1,500 taken seats visited this many buffers: %s", plan)

	var free string
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT id FROM seats WHERE section_id = $1 AND reservation_id IS NULL ORDER BY id LIMIT 1`,
		section).Scan(&free))
	h := holdSeat(t, st, ev, "fan_surge_one_"+ev, free)
	var surge int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT surge_bps FROM reservation_items WHERE reservation_id = $1`, h).Scan(&surge))
	require.Equal(t, pricing.Multiplier(1501, 2000, time.Now().AddDate(0, 1, 0), time.Now()), surge)
	require.Equal(t, pricing.HalfFullBps, surge, "1,501 of 2,000 seats taken is over half full")
}

// A connection plans the fan's pending-hold lookup once for good (a prepared
// statement's generic plan, forced here rather than waited for); planned on
// a sale's empty, never-analysed table, it must still read a few index
// entries once the sale has filled the table. It scanned every pending hold
// through the expiry index (63 buffers here, 900 a hold after 4,000 holds of
// a running stack) before the index bound every column (migration 0047);
// it now reads the fan's rows of the event by the fan's index alone (see
// TestAFansOwnLookupsNeverReadThroughTheEventsIndexes for statistics that
// predate the sale).
func TestTheFansPendingHoldLookupPlannedOnAnEmptyTableStaysALookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testenv.FreshDB(t)
	st := store.New(pool, store.Options{})
	ev := onSaleEvent(t, st, "evt_plan_", 1, 1, 0)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)
	defer conn.Exec(ctx, `RESET plan_cache_mode; DEALLOCATE ALL`) //nolint:errcheck // the connection is the test's
	_, err = conn.Exec(ctx, `PREPARE own_pending(text, text) AS `+store.OwnPendingSQL)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `EXECUTE own_pending('fan_plan_first', '`+ev+`')`)
	require.NoError(t, err)

	// The sale fills the table: 3,000 fans each with a pending hold.
	_, err = pool.Exec(ctx, `INSERT INTO users (id) SELECT 'fan_plan_' || g FROM generate_series(1, 3000) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, total, currency)
		SELECT gen_random_uuid(), 'fan_plan_' || g, $1, 'PENDING_PAYMENT', now() + interval '10 minutes', 0, 'EUR'
		FROM generate_series(1, 3000) g`, ev)
	require.NoError(t, err)

	buffers, plan := explainedBuffers(t, conn, `EXECUTE own_pending('fan_plan_new', '`+ev+`')`)
	require.Less(t, buffers, 8, "the lookup among 3,000 pending holds: %s", plan)
}
