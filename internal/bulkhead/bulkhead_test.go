package bulkhead_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/internal/bulkhead"
)

// occupy runs a caller in b that holds its slot until the returned release
// is called, and returns once the caller is inside.
func occupy(t *testing.T, b *bulkhead.Bulkhead) (release func()) {
	t.Helper()
	inside, done := make(chan struct{}), make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		finished <- b.Do(context.Background(), func() error { close(inside); <-done; return nil })
	}()
	<-inside
	return func() { close(done); require.NoError(t, <-finished) }
}

func TestACallerFindingTheSlotsTakenAndTheQueueFullIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	b := bulkhead.New("suggest", bulkhead.Options{Slots: 1, Queue: 0, Wait: time.Hour, RetryAfter: 2 * time.Second})
	release := occupy(t, b)
	defer release()
	ran := false
	err := b.Do(context.Background(), func() error { ran = true; return nil })
	var full *bulkhead.FullError
	require.ErrorAs(t, err, &full)
	require.False(t, ran)
	require.Equal(t, bulkhead.FullError{Class: "suggest", RetryAfter: 2 * time.Second}, *full)
	require.EqualValues(t, 1, b.Refused())
}

func TestAQueuedCallerIsRefusedWhenItsWaitRunsOut(t *testing.T) {
	t.Parallel()
	b := bulkhead.New("search", bulkhead.Options{Slots: 1, Queue: 1, Wait: time.Millisecond})
	release := occupy(t, b)
	defer release()
	err := b.Do(context.Background(), func() error { return nil })
	var full *bulkhead.FullError
	require.ErrorAs(t, err, &full)
	require.True(t, full.Waited)
	require.Equal(t, time.Second, full.RetryAfter, "the default Retry-After")
}

func TestAQueuedCallerRunsOnceASlotIsFreed(t *testing.T) {
	t.Parallel()
	b := bulkhead.New("event", bulkhead.Options{Slots: 1, Queue: 1, Wait: time.Hour})
	release := occupy(t, b)
	ran := make(chan error, 1)
	go func() { ran <- b.Do(context.Background(), func() error { return nil }) }()
	release()
	require.NoError(t, <-ran)
}

func TestAWaitingCallerLeavesWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	b := bulkhead.New("event", bulkhead.Options{Slots: 1, Queue: 1, Wait: time.Hour})
	release := occupy(t, b)
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := b.Do(ctx, func() error { return nil })
	require.True(t, errors.Is(err, context.Canceled))
}

func TestANilBulkheadBoundsNothing(t *testing.T) {
	t.Parallel()
	var b *bulkhead.Bulkhead
	require.NoError(t, b.Do(context.Background(), func() error { return nil }))
	require.Zero(t, b.Refused())
}
