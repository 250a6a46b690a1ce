package seathint_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/internal/redisslot"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/seathint"
)

// An account's limit lives outside the event's slot, so the limited hold
// must reach Redis as two scripts of one slot each, never one of two.
func TestEveryHintScriptTouchesOneClusterSlot(t *testing.T) {
	t.Parallel()
	shared, prefix := testenv.Redis(t)
	rdb, rec := redisslot.Record(shared)
	defer rdb.Close()
	h := seathint.New(rdb, prefix)
	limiter := ratelimit.New(rdb, prefix+"rl:slots:"+testenv.RandomSuffix()+":", ratelimit.Limit{Count: 100, Per: time.Minute, Burst: 100})
	ctx := context.Background()
	evt := "evt_" + testenv.RandomSuffix()

	require.NoError(t, h.Hold(ctx, evt, []string{"s1", "s2"}, "res-a", time.Minute))
	ok, _, err := h.HoldWithin(ctx, limiter, "asha", evt, []string{"s3", "s4"}, "res-b", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, _, err = h.HoldWithin(ctx, limiter, "badu", evt, []string{"s4", "s5"}, "res-c", time.Minute)
	var contended *seathint.ContendedError
	require.ErrorAs(t, err, &contended, "the hint still refuses a taken seat")
	require.True(t, ok)
	require.Equal(t, []string{"s4"}, contended.SeatIDs)
	require.NoError(t, h.Release(ctx, evt, []string{"s1", "s2"}, "res-a"))

	require.Empty(t, rec.Crossed())
	for name, sha := range seathint.ScriptHashes() {
		if name == "limited hold" {
			require.False(t, rec.Ran(sha), "the limit and the seats are in different slots: never one script")
			continue
		}
		require.True(t, rec.Ran(sha), "the %s script ran", name)
	}
}
