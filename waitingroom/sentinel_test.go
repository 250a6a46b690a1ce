package waitingroom_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/internal/redisurl"
	"github.com/encore-tickets/encore/waitingroom"
)

// Through Sentinel the room uses one master; when it dies the sentinel
// promotes the replica and the client follows it. As on a cluster, the test
// waits for the replica to have every write before the kill.
func TestTheWaitingRoomFollowsTheMasterSentinelPromotesAfterTheOldOneDies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := devstack.StartRedisSentinel(ctx, t.TempDir(), time.Second)
	if errors.Is(err, devstack.ErrNotInstalled) {
		t.Skipf("no redis-server: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	rdb, err := redisurl.Open(s.URL(), redisurl.Timeouts{Dial: 500 * time.Millisecond, Read: time.Second, Write: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	_, isFailover := rdb.(*redis.Client)
	require.True(t, isFailover, "a Sentinel URL opens a failover client")

	inv := newFake()
	event := inv.add(time.Now().Add(-time.Minute))
	room := newRoomOn(t, rdb, "sen:", inv, waitingroom.Options{Capacity: 100, Batch: 100})
	first := fan(1)
	_, err = room.Line().Join(ctx, first, event, 0)
	require.NoError(t, err)
	require.Equal(t, []string{first.UserID}, users(tick(t, room, event, "admitter")))
	st, err := room.Line().Status(ctx, first, event)
	require.NoError(t, err)
	require.NoError(t, room.Passes().Check(ctx, first, event, st.Pass))

	old, err := s.Master(ctx)
	require.NoError(t, err)
	waitReplicated(t, ctx, old)
	start := time.Now()
	require.NoError(t, s.KillMaster())
	require.Eventually(t, func() bool {
		m, err := s.Master(ctx)
		return err == nil && m != old
	}, 30*time.Second, 100*time.Millisecond, "the sentinel promoted the replica")
	var lastErr error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if lastErr = room.Passes().Check(ctx, first, event, st.Pass); lastErr == nil {
			break
		}
	}
	require.NoError(t, lastErr, "the admission replicated before the kill survives on the new master")
	t.Logf("the room worked again %s after the kill", time.Since(start).Round(time.Millisecond))

	second := fan(2)
	_, err = room.Line().Join(ctx, second, event, 0)
	require.NoError(t, err)
	require.Equal(t, []string{second.UserID}, users(tick(t, room, event, "admitter")))
}
