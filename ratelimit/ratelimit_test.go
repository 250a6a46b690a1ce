package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/ratelimit"
)

func TestMain(m *testing.M) { testenv.Main(m) }

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
