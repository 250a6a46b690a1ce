package waitingroom_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/internal/redisslot"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitingroom"
)

// A Redis Cluster runs a script only when its keys share one slot; one
// server runs any. So this drives every script of the room through its real
// callers on one server and checks the keys each call names.
func TestEveryRoomScriptTouchesOneClusterSlot(t *testing.T) {
	t.Parallel()
	shared, prefix := testenv.Redis(t)
	rdb, rec := redisslot.Record(shared)
	defer rdb.Close()
	inv := newFake()
	event := inv.add(time.Now().Add(-time.Minute))
	r := newRoomOn(t, rdb, prefix+testenv.RandomSuffix()+":", inv, waitingroom.Options{Capacity: 10})
	ctx := context.Background()
	asha, badu := fan(1), fan(2)

	_, err := r.Admit(ctx, asha, event, "203.0.113.7", waitingroom.Proof{}) // limits, risk, join
	require.NoError(t, err)
	_, err = r.Line().Join(ctx, badu, event, 0)
	require.NoError(t, err)
	require.Equal(t, []string{asha.UserID, badu.UserID}, users(tick(t, r, event, "owner-1")))
	st, err := r.Line().Status(ctx, asha, event)
	require.NoError(t, err)
	require.Equal(t, waitingroom.StatusAdmitted, st.Status)
	require.NoError(t, r.Passes().Check(ctx, asha, event, st.Pass))
	require.NoError(t, r.Passes().Extend(ctx, asha, event, time.Now().Add(time.Minute)))
	inv.mu.Lock()
	inv.outcomes[asha.UserID] = store.HoldOutcome{Paid: true}
	inv.mu.Unlock()
	require.NoError(t, r.Admitter().Settle(ctx, event))
	_, err = r.Passes().Offer(ctx, asha, event, 7, time.Now().Add(time.Minute))
	require.NoError(t, err)
	revoked, err := r.Revoke(ctx, event, badu.UserID)
	require.NoError(t, err)
	require.True(t, revoked)
	require.NoError(t, r.MarkSuspicious(ctx, event, badu.UserID))

	require.Empty(t, rec.Crossed())
	for name, sha := range waitingroom.ScriptHashes() {
		require.True(t, rec.Ran(sha), "the %s script ran", name)
	}
}
