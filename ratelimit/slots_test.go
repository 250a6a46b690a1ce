package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/internal/redisslot"
	"github.com/encore-tickets/encore/ratelimit"
)

func TestEveryLimitScriptTouchesOneClusterSlot(t *testing.T) {
	t.Parallel()
	shared, prefix := testenv.Redis(t)
	rdb, rec := redisslot.Record(shared)
	defer rdb.Close()
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

	require.Empty(t, rec.Crossed())
	limit, guarded, body := g.Hashes()
	for name, sha := range map[string]string{"limit": limit, "guarded": guarded, "body alone": body} {
		require.True(t, rec.Ran(sha), "the %s script ran", name)
	}
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
