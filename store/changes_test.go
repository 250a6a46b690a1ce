package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
)

// requireWoken waits for one wake-up on changed, well inside the 5 s after
// which a waiter reads again anyway: a wake-up that came only by that
// timer would not be a notification.
func requireWoken(t *testing.T, changed <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(4 * time.Second):
		t.Fatalf("no wake-up after %s", what)
	}
}

// requireQuiet requires no wake-up on changed for a moment.
func requireQuiet(t *testing.T, changed <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-changed:
		t.Fatalf("woken by %s", what)
	case <-time.After(300 * time.Millisecond):
	}
}

// Every write that changes what a booking's page shows wakes the page's
// waiters, and only theirs; a lost listening connection wakes every waiter
// (notifications may have been lost meanwhile) and is connected again.
func TestABookingsWaitersAreWokenByItsChangesAndByALostListener(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A database of its own: the test ends every listening connection of
	// its database, which in the package's would be other tests' too.
	pool, _ := testenv.FreshDB(t)
	st := store.New(pool, store.Options{})
	ev := onSaleEvent(t, st, "evt_chg_", 1, 4, 0)
	sec := "sec_" + ev
	mine, other := holdSeat(t, st, ev, "fan_chg_1_"+ev, sec+"-A-1"), holdSeat(t, st, ev, "fan_chg_2_"+ev, sec+"-A-2")
	changes := listening(t, st.Pool())

	changed, stop := changes.Watch(mine)
	defer stop()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := st.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	exec(`UPDATE reservations SET expires_at = expires_at + interval '1 minute' WHERE id = $1`, other)
	requireQuiet(t, changed, "another booking's change")
	exec(`UPDATE reservations SET total = total + 1 WHERE id = $1`, mine)
	requireQuiet(t, changed, "a write its page does not show after the hold")

	cases := []struct{ what, sql string }{
		{"its payment", `INSERT INTO payments (reservation_id, intent_id, amount, currency, status) VALUES ($1, 'pi_' || md5($1::uuid::text), 1000, 'EUR', 'AUTHORISED')`},
		{"its payment's capture", `UPDATE payments SET status = 'CAPTURED' WHERE reservation_id = $1`},
		{"its sale", `UPDATE reservations SET status = 'PAID', ended_at = now() WHERE id = $1`},
		{"its items", `UPDATE reservation_items SET live = live WHERE reservation_id = $1`},
	}
	for _, tc := range cases {
		exec(tc.sql, mine)
		requireWoken(t, changed, tc.what)
	}
	tx, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE reservations SET expires_at = expires_at + interval '1 minute' WHERE id = $1`, mine)
	require.NoError(t, err)
	requireQuiet(t, changed, "an uncommitted change")
	require.NoError(t, tx.Commit(ctx))
	requireWoken(t, changed, "the change's commit")

	// The listening connection dies: every waiter is woken, and the
	// listener connects again.
	var killed int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN booking_changed'`).Scan(&killed))
	require.Equal(t, 1, killed, "one listening connection")
	requireWoken(t, changed, "the listener's connection was lost")
	require.Eventually(t, changes.Listening, 10*time.Second, 10*time.Millisecond, "listening again")
	stop()
	require.Zero(t, changes.Watchers(), "a stopped watch is forgotten")
	changed, stop = changes.Watch(mine)
	defer stop()
	exec(`UPDATE reservations SET expires_at = expires_at + interval '1 minute' WHERE id = $1`, mine)
	requireWoken(t, changed, "a change after the reconnection")
}

// A pool started with ENCORE_BOOKING_CHANGES=false's parameter writes
// without notifying; another pool's writes to the same booking still wake
// its waiters.
func TestAPoolWithBookingChangesSwitchedOffWritesWithoutWakingAnyone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain := testenv.DB(t)
	quiet, err := store.OpenPool(ctx, plain.Config().ConnString(), store.PoolOptions{MaxConns: 2, QuietBookingChanges: true})
	require.NoError(t, err)
	t.Cleanup(quiet.Close)
	st := store.New(plain, store.Options{})
	ev := onSaleEvent(t, st, "evt_quiet_", 1, 2, 0)
	id := holdSeat(t, st, ev, "fan_quiet_"+ev, "sec_"+ev+"-A-1")
	changed, stop := listening(t, plain).Watch(id)
	defer stop()

	const extend = `UPDATE reservations SET expires_at = expires_at + interval '1 minute' WHERE id = $1`
	_, err = quiet.Exec(ctx, extend, id)
	require.NoError(t, err)
	requireQuiet(t, changed, "a write through the switched-off pool")
	_, err = plain.Exec(ctx, extend, id)
	require.NoError(t, err)
	requireWoken(t, changed, "a write through another pool")
}
