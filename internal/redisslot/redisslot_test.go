package redisslot_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/internal/redisslot"
)

// The expected slots are what CLUSTER KEYSLOT answers.
func TestSlotsAreTheClustersOwn(t *testing.T) {
	t.Parallel()
	for key, slot := range map[string]int{
		"foo":                  12182,
		"123456789":            12739,
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"foo{}{bar}":           8363,
		"foo{{bar}}zap":        4015,
		"foo{bar}{zap}":        5061,
		"":                     0,
	} {
		require.Equal(t, slot, redisslot.Slot(key), key)
	}
}

func TestKeysOfOneEventShareASlot(t *testing.T) {
	t.Parallel()
	require.True(t, redisslot.Same("wr:{evt_1}:q", "hold:{evt_1}:seat-9", "test:x:seatmap:{evt_1}:s:gen"))
	require.False(t, redisslot.Same("rl:hold:asha", "hold:{evt_1}:seat-9"))
	require.True(t, redisslot.Same())
}
