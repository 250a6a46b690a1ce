package lru

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTheCacheNeverHoldsMoreThanItsCapacity(t *testing.T) {
	t.Parallel()
	c := New[string, int](3)
	now := time.Now()
	for i := range 100 {
		c.Add(strconv.Itoa(i), i, time.Time{})
	}
	require.Equal(t, 3, c.Len())
	_, ok := c.Get("0", now)
	require.False(t, ok, "the oldest entries were evicted")
	v, ok := c.Get("99", now)
	require.True(t, ok)
	require.Equal(t, 99, v)
}

func TestTheLeastRecentlyUsedEntryIsEvictedFirst(t *testing.T) {
	t.Parallel()
	c := New[string, int](2)
	now := time.Now()
	c.Add("a", 1, time.Time{})
	c.Add("b", 2, time.Time{})
	_, _ = c.Get("a", now)
	c.Add("c", 3, time.Time{})
	_, ok := c.Get("b", now)
	require.False(t, ok)
	_, ok = c.Get("a", now)
	require.True(t, ok)
}

func TestAnExpiredEntryIsMissedButPeekStillSeesIt(t *testing.T) {
	t.Parallel()
	c := New[string, int](2)
	now := time.Now()
	c.Add("a", 1, now.Add(time.Second))
	_, ok := c.Get("a", now)
	require.True(t, ok)
	c.Add("b", 2, now.Add(time.Second))
	v, ok := c.Peek("b")
	require.True(t, ok)
	require.Equal(t, 2, v)
	_, ok = c.Get("b", now.Add(2*time.Second))
	require.False(t, ok)
	require.Equal(t, 1, c.Len())
}
