package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/ratelimit/slottest"
)

func TestTheBurstPassesAndTheNextWaitsForItsTurn(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	l := ratelimit.New(rdb, prefix+"rl:"+testenv.RandomSuffix()+":", ratelimit.Limit{Count: 60, Per: time.Minute, Burst: 3})
	ctx := context.Background()
	for i := range 3 {
		ok, _ := l.Allow(ctx, "fan")
		require.True(t, ok, "burst call %d", i)
	}
	ok, wait := l.Allow(ctx, "fan")
	require.False(t, ok)
	require.Greater(t, wait, time.Duration(0))
	require.LessOrEqual(t, wait, time.Second)
	ok, _ = l.Allow(ctx, "other fan")
	require.True(t, ok, "keys are limited apart")
	require.Equal(t, 1, ratelimit.RetryAfterSeconds(wait))
}

func TestWithRedisDownTheLimitStillHolds(t *testing.T) {
	t.Parallel()
	// One dial a call, as system.Connect configures it: with go-redis's
	// five dials and their pauses, three calls outlast the limit's
	// one-second emission interval on a loaded machine.
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond, MaxRetries: -1, DialerRetries: 1})
	l := ratelimit.New(dead, "rl:", ratelimit.Limit{Count: 60, Per: time.Minute, Burst: 2})
	ctx := context.Background()
	ok1, _ := l.Allow(ctx, "fan")
	ok2, _ := l.Allow(ctx, "fan")
	ok3, wait := l.Allow(ctx, "fan")
	require.True(t, ok1)
	require.True(t, ok2)
	require.False(t, ok3, "fails closed: the process's own limiter refuses")
	require.Greater(t, wait, time.Duration(0))
}

func TestAGuardedBodyRunsOnlyWithinTheLimit(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	l := ratelimit.New(rdb, prefix+"rl:"+testenv.RandomSuffix()+":", ratelimit.Limit{Count: 60, Per: time.Minute, Burst: 2})
	counter := prefix + "guarded:" + testenv.RandomSuffix()
	g := ratelimit.NewGuarded(`return {redis.call('INCRBY', keys[1], argv[1])}`)
	ctx := context.Background()
	for i := range 2 {
		ok, _, res, err := l.Guard(ctx, g, "fan", []string{counter}, 5)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, []int64{int64(5 * (i + 1))}, res)
	}
	ok, wait, res, err := l.Guard(ctx, g, "fan", []string{counter}, 5)
	require.NoError(t, err)
	require.False(t, ok)
	require.Positive(t, wait)
	require.Nil(t, res)
	require.Equal(t, "10", rdb.Get(ctx, counter).Val(), "the refused call ran no body")
	ok, _ = l.Allow(ctx, "fan")
	require.False(t, ok, "Allow and Guard share one budget")
}

func TestEveryLimitScriptTouchesOneClusterSlot(t *testing.T) {
	t.Parallel()
	rdb, prefix, rec := slottest.Record(t)
	ctx := context.Background()
	l := ratelimit.New(rdb, prefix+"rl:slots:"+testenv.RandomSuffix()+":", ratelimit.Limit{Count: 1000, Per: time.Minute, Burst: 1000})
	g := ratelimit.NewGuarded(`for _, k in ipairs(keys) do redis.call('SET', k, argv[1], 'PX', 60000) end return {#keys}`)
	event := "{evt_" + testenv.RandomSuffix() + "}"

	ok, _ := l.Allow(ctx, "asha")
	require.True(t, ok)
	ok, _, out, err := l.Guard(ctx, g, "asha", []string{prefix + "a:" + event + ":1", prefix + "a:" + event + ":2"}, "x")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []int64{2}, out, "the body ran after the limit, in its own slot")

	// A limit keyed inside the event's slot takes one round trip.
	inSlot := ratelimit.New(rdb, prefix+"rl:"+event+":", ratelimit.Limit{Count: 1000, Per: time.Minute, Burst: 1000})
	ok, _, out, err = inSlot.Guard(ctx, g, "asha", []string{prefix + "b:" + event + ":1"}, "y")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []int64{1}, out)

	limit, guarded, body := g.Hashes()
	slottest.RequireEachRanInOneSlot(t, rec, map[string]string{"limit": limit, "guarded": guarded, "body alone": body})
}

func TestARefusedGuardRunsNoBodyWhenTheKeysAreApart(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	l := ratelimit.New(rdb, prefix+"rl:apart:"+testenv.RandomSuffix()+":", ratelimit.Limit{Count: 1, Per: time.Minute, Burst: 1})
	g := ratelimit.NewGuarded(`redis.call('INCR', keys[1]) return {1}`)
	counter := prefix + "apart:{evt_" + testenv.RandomSuffix() + "}:n"
	ok, _, _, err := l.Guard(ctx, g, "asha", []string{counter})
	require.NoError(t, err)
	require.True(t, ok)
	ok, wait, _, err := l.Guard(ctx, g, "asha", []string{counter})
	require.NoError(t, err)
	require.False(t, ok)
	require.Positive(t, wait)
	require.Equal(t, "1", rdb.Get(ctx, counter).Val(), "the refused call ran no body")
}
