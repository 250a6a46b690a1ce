package seatmap_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/internal/redisslot"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// A fill, a failed fill and an invalidation send the cache's scripts and its
// one transaction: each must name keys of one Redis Cluster slot.
func TestEveryCacheScriptAndTransactionTouchesOneClusterSlot(t *testing.T) {
	t.Parallel()
	shared, prefix := testenv.Redis(t)
	rdb, rec := redisslot.Record(shared)
	defer rdb.Close()
	event := "evt_" + testenv.RandomSuffix()
	var failing atomic.Bool
	failing.Store(true)
	c := seatmap.NewCache(rdb, prefix+testenv.RandomSuffix()+":", func(_ context.Context, ev, sec string) (store.SectionSeats, error) {
		if failing.Load() {
			return store.SectionSeats{}, errors.New("the database is away")
		}
		return store.SectionSeats{EventID: ev, SectionID: sec, Kind: vocab.SectionSeated, Currency: "EUR",
			Seats: []store.SeatState{{ID: "s1", Row: "A", Number: 1, Status: vocab.SeatAvailable}}}, nil
	}, seatmap.CacheOptions{})
	ctx := context.Background()

	_, err := c.Get(ctx, event, "floor", seatmap.FormatJSON)
	require.ErrorIs(t, err, seatmap.ErrUnavailable, "a failed fill gives its lease back")
	failing.Store(false)
	_, err = c.Get(ctx, event, "floor", seatmap.FormatJSON)
	require.NoError(t, err)
	require.NoError(t, c.Invalidate(ctx, event, "floor"))

	require.Equal(t, 1, rec.Transactions(), "the invalidation's transaction was seen")
	require.Empty(t, rec.Crossed())
	for name, sha := range seatmap.ScriptHashes() {
		require.True(t, rec.Ran(sha), "the %s script ran", name)
	}
}
