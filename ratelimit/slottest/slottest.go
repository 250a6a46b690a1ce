// Package slottest checks, in tests, that Redis scripts and transactions keep
// their keys in one Redis Cluster slot. A cluster refuses a call whose keys
// cross slots (CROSSSLOT) while the single server the tests run on accepts
// it, so each package that sends scripts (the rate limits, the seat hints,
// the seat-map cache, the waiting room) drives them through a recording
// client and checks what it noted.
package slottest

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/internal/redisslot"
)

// Record returns a client of the test Redis that reports every script and
// transaction to the returned recorder, and the key prefix of the test. The
// client is closed when the test ends.
func Record(t testing.TB) (*redis.Client, string, *redisslot.Recorder) {
	t.Helper()
	shared, prefix := testenv.Redis(t)
	rdb, rec := redisslot.Record(shared)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, prefix, rec
}

// RequireEachRanInOneSlot fails t unless no call the recorder saw crossed
// slots and every script of hashes (name to SHA1) ran: a script the test
// never reached would pass unchecked.
func RequireEachRanInOneSlot(t testing.TB, rec *redisslot.Recorder, hashes map[string]string) {
	t.Helper()
	require.Empty(t, rec.Crossed())
	for name, sha := range hashes {
		require.True(t, rec.Ran(sha), "the %s script ran", name)
	}
}
