package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
)

// A transaction waiting on a row another holds gives up at the store's
// lock_timeout, whether the pool's connections start with it (the store then
// sets nothing: no statement, no round trip) or not (the store sets it in
// each transaction): a hold's and a release's alike. The statement timeout is
// 30 s here, so a wait that ends well before it is the lock timeout's.
func TestATransactionBlockedOnALockedRowGivesUpAtTheLockTimeoutWhereverItIsSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain := testenv.DB(t)
	const lock, statement = 300 * time.Millisecond, 30 * time.Second
	withTimeouts, err := store.OpenPool(ctx, plain.Config().ConnString(), store.PoolOptions{MaxConns: 4,
		LockTimeout: lock, StatementTimeout: statement})
	require.NoError(t, err)
	t.Cleanup(withTimeouts.Close)
	other, err := store.OpenPool(ctx, plain.Config().ConnString(), store.PoolOptions{MaxConns: 4,
		LockTimeout: time.Minute, StatementTimeout: statement})
	require.NoError(t, err)
	t.Cleanup(other.Close)

	for _, tc := range []struct {
		name string
		pool *pgxpool.Pool
	}{
		{"connections without timeouts", plain},
		{"connections starting with the store's", withTimeouts},
		{"connections starting with others", other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.New(tc.pool, store.Options{LockTimeout: lock, StatementTimeout: statement})
			ev := onSaleEvent(t, st, "evt_lockto_", 1, 2, 0)
			sec := "sec_" + ev
			user := "fan_lockto_" + ev
			id := holdSeat(t, st, ev, user, sec+"-A-1")

			// Another transaction holds the free seat's row and the hold's.
			blocker, err := plain.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = blocker.Rollback(ctx) }()
			_, err = blocker.Exec(ctx, `SELECT 1 FROM seats WHERE id = $1 FOR UPDATE`, sec+"-A-2")
			require.NoError(t, err)
			_, err = blocker.Exec(ctx, `SELECT 1 FROM reservations WHERE id = $1 FOR UPDATE`, id)
			require.NoError(t, err)

			began := time.Now()
			_, _, err = st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "fan_lockto_2_" + ev,
				EventID: ev, SeatIDs: []string{sec + "-A-2"}})
			require.ErrorIs(t, err, store.ErrBusy, "a hold on the locked seat")
			require.Less(t, time.Since(began), 10*time.Second, "the hold gave up at the lock timeout")
			began = time.Now()
			_, err = st.Holds.Release(ctx, id, user)
			require.Error(t, err, "a release of the locked hold")
			require.Less(t, time.Since(began), 10*time.Second, "the release gave up at the lock timeout")
		})
	}
}
