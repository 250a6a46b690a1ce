package seathint_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/ratelimit/slottest"
	"github.com/encore-tickets/encore/seathint"
)

func TestACartIsHintedWholeOrNotAtAll(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	h := seathint.New(rdb, prefix)
	ctx := context.Background()
	evt := "evt_" + testenv.RandomSuffix() // its own keys, under -count and t.Parallel
	require.NoError(t, h.Hold(ctx, evt, []string{"s1", "s2"}, "res-a", time.Minute))
	err := h.Hold(ctx, evt, []string{"s3", "s2", "s4"}, "res-b", time.Minute)
	var c *seathint.ContendedError
	require.ErrorAs(t, err, &c)
	require.Equal(t, []string{"s2"}, c.SeatIDs)
	require.Zero(t, rdb.Exists(ctx, h.Key(evt, "s3"), h.Key(evt, "s4")).Val(), "nothing of the refused cart was written")
	require.NoError(t, h.Hold(ctx, evt, []string{"s1", "s2"}, "res-a", time.Minute), "the owner may hint again")
}

func TestAReleaseDeletesOnlyTheOwnersHints(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	h := seathint.New(rdb, prefix)
	ctx := context.Background()
	evt2 := "evt_" + testenv.RandomSuffix()
	require.NoError(t, h.Hold(ctx, evt2, []string{"s1"}, "old", time.Minute))
	require.NoError(t, h.Release(ctx, evt2, []string{"s1"}, "old"))
	require.NoError(t, h.Hold(ctx, evt2, []string{"s1"}, "new", time.Minute))
	// A late release of the old reservation must not free the new owner's seat.
	require.NoError(t, h.Release(ctx, evt2, []string{"s1"}, "old"))
	require.Equal(t, "new", rdb.Get(ctx, h.Key(evt2, "s1")).Val())
}

func TestKeysShareTheEventsHashSlot(t *testing.T) {
	t.Parallel()
	h := seathint.New(nil, "")
	require.Equal(t, "hold:{evt_9}:sec-A-1", h.Key("evt_9", "sec-A-1"))
}

func TestARateLimitedCartIsHintedNothingInTheSameRoundTrip(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	h := seathint.New(rdb, prefix)
	limiter := ratelimit.New(rdb, prefix+"rl:"+testenv.RandomSuffix()+":", ratelimit.Limit{Count: 1, Per: time.Minute, Burst: 1})
	ctx := context.Background()
	evt := "evt_" + testenv.RandomSuffix()
	ok, _, err := h.HoldWithin(ctx, limiter, "fan", evt, []string{"s1", "s2"}, "res-a", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "res-a", rdb.Get(ctx, h.Key(evt, "s2")).Val())

	ok, wait, err := h.HoldWithin(ctx, limiter, "fan", evt, []string{"s3"}, "res-b", time.Minute)
	require.NoError(t, err)
	require.False(t, ok)
	require.Positive(t, wait)
	require.Zero(t, rdb.Exists(ctx, h.Key(evt, "s3")).Val(), "the rate-limited cart left no hint")

	ok, _, err = h.HoldWithin(ctx, limiter, "other fan", evt, []string{"s2", "s4"}, "res-c", time.Minute)
	require.True(t, ok)
	var c *seathint.ContendedError
	require.ErrorAs(t, err, &c)
	require.Equal(t, []string{"s2"}, c.SeatIDs)
	require.Zero(t, rdb.Exists(ctx, h.Key(evt, "s4")).Val(), "a contended cart is still hinted whole or not at all")
}

func TestWithRedisDownTheLimitAnswersAndNothingIsHinted(t *testing.T) {
	t.Parallel()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond, MaxRetries: -1, DialerRetries: 1})
	h := seathint.New(dead, "")
	limiter := ratelimit.New(dead, "rl:", ratelimit.Limit{Count: 60, Per: time.Minute, Burst: 1})
	ok, _, err := h.HoldWithin(context.Background(), limiter, "fan", "evt", []string{"s1"}, "res", time.Minute)
	require.Error(t, err, "the caller learns that no hint was written")
	require.True(t, ok)
	ok, _, err = h.HoldWithin(context.Background(), limiter, "fan", "evt", []string{"s1"}, "res", time.Minute)
	require.Error(t, err)
	require.False(t, ok, "the process's own limit still holds")
}

// An account's limit lives outside the event's slot, so the limited hold
// must reach Redis as two scripts of one slot each, never one of two.
func TestEveryHintScriptTouchesOneClusterSlot(t *testing.T) {
	t.Parallel()
	rdb, prefix, rec := slottest.Record(t)
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

	hashes := seathint.ScriptHashes()
	require.False(t, rec.Ran(hashes["limited hold"]), "the limit and the seats are in different slots: never one script")
	delete(hashes, "limited hold")
	slottest.RequireEachRanInOneSlot(t, rec, hashes)
}
