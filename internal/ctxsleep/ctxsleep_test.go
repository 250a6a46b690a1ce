package ctxsleep_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/internal/ctxsleep"
)

func TestASleepIsWholeUnlessItsContextEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	require.True(t, ctxsleep.Sleep(ctx, 20*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	require.True(t, ctxsleep.Sleep(ctx, 0))

	ended, cancel := context.WithCancel(ctx)
	cancel()
	start = time.Now()
	require.False(t, ctxsleep.Sleep(ended, time.Hour))
	require.Less(t, time.Since(start), time.Second)
	require.False(t, ctxsleep.Sleep(ended, 0))
}
