package seatmap_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/outbox"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
)

func startHub(t testing.TB, e *env, opts seatmap.HubOptions) *seatmap.Hub {
	h := seatmap.NewHub(e.rdb, e.prefix, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

func numsub(t testing.TB, e *env, c *seatmap.Cache, section string) int64 {
	res, err := e.rdb.PubSubNumSub(context.Background(), c.Channel(e.eventID, section)).Result()
	require.NoError(t, err)
	return res[c.Channel(e.eventID, section)]
}

func typeOf(t testing.TB, msg []byte) string {
	var m seatmap.Message
	require.NoError(t, json.Unmarshal(msg, &m))
	return m.Type
}

// subscribeViewers opens n live connections to url, at most parallel
// dialling at a time, each subscribed to section, and returns them with the
// first message each heard. It fails t on any error.
func subscribeViewers(t testing.TB, ctx context.Context, url, section string, n, parallel int) ([]*websocket.Conn, [][]byte) {
	t.Helper()
	conns := make([]*websocket.Conn, n)
	firsts := make([][]byte, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			conn, _, err := websocket.Dial(ctx, url, nil)
			if err != nil {
				t.Error(err)
				return
			}
			conns[i] = conn
			if err := conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":"`+section+`"}`)); err != nil {
				t.Error(err)
				return
			}
			if _, firsts[i], err = conn.Read(ctx); err != nil {
				t.Errorf("nothing heard after subscribing: %v", err)
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())
	return conns, firsts
}

// However many viewers a section has, the process holds one upstream
// subscription for it, and none once the last viewer has left.
func TestOneUpstreamSubscriptionPerSection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 4)
	ctx := context.Background()
	h := startHub(t, e, seatmap.HubOptions{})
	c := e.cache(seatmap.CacheOptions{})
	var viewers []*seatmap.Viewer
	for i := range 150 {
		v := h.NewViewer()
		section := "s1"
		if i%3 == 0 {
			section = "s2"
		}
		require.NoError(t, h.Subscribe(ctx, v, e.eventID, section))
		require.Equal(t, "reset", typeOf(t, <-v.C), "a stream starts with a reset")
		viewers = append(viewers, v)
	}
	require.Equal(t, 2, h.Sections())
	require.Equal(t, int64(1), numsub(t, e, c, "s1"))
	require.Equal(t, int64(1), numsub(t, e, c, "s2"))

	require.NoError(t, c.Invalidate(ctx, e.eventID, "s2"))
	for i, v := range viewers {
		if i%3 == 0 {
			select {
			case msg := <-v.C:
				require.Equal(t, "invalidate", typeOf(t, msg))
			case <-time.After(2 * time.Second):
				t.Fatal("no invalidation")
			}
		}
	}
	for _, v := range viewers {
		h.Leave(v)
	}
	require.Zero(t, h.Sections())
	require.Eventually(t, func() bool { return numsub(t, e, c, "s1") == 0 && numsub(t, e, c, "s2") == 0 },
		2*time.Second, 10*time.Millisecond)
}

// A viewer that stops reading fills its queue of 8 and is dropped and
// counted; the others receive every message as if it were not there.
func TestSlowViewerIsDroppedWithoutDelayingOthers(t *testing.T) {
	// Serial: it bounds the delivery latency (p99), which tests sharing the
	// CPU would measure too.
	e := newEnv(t, 1, 4)
	ctx := context.Background()
	h := startHub(t, e, seatmap.HubOptions{MinInterval: -1})
	h.Register(prometheus.NewRegistry())
	c := e.cache(seatmap.CacheOptions{})

	slow := h.NewViewer()
	require.NoError(t, h.Subscribe(ctx, slow, e.eventID, "s1")) // its reset sits in the queue, never read
	const fast, sends = 50, 20
	var wg sync.WaitGroup
	lat := make(chan time.Duration, fast*sends)
	sent := make(chan time.Time, sends)
	received := make(chan struct{}, fast*sends) // one a delivery to a fast viewer
	times := make([]time.Time, 0, sends)
	var timesMu sync.Mutex
	for range fast {
		v := h.NewViewer()
		require.NoError(t, h.Subscribe(ctx, v, e.eventID, "s1"))
		require.Equal(t, "reset", typeOf(t, <-v.C))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range sends {
				select {
				case msg := <-v.C:
					now := time.Now()
					require.Equal(t, "invalidate", typeOf(t, msg))
					timesMu.Lock()
					for len(times) <= i {
						times = append(times, <-sent)
					}
					at := times[i]
					timesMu.Unlock()
					lat <- now.Sub(at)
					received <- struct{}{}
				case <-time.After(5 * time.Second):
					t.Errorf("viewer missed invalidation %d", i)
					return
				}
			}
		}()
	}
	for i := range sends {
		// Paced like a busy section, not a burst: a burst longer than the
		// queue would (rightly) drop readers that are merely scheduled late.
		// The next invalidation goes once every fast viewer has the last.
		for j := 0; i > 0 && j < fast; j++ {
			select {
			case <-received:
			case <-time.After(5 * time.Second):
				t.Fatalf("the fast viewers did not all get invalidation %d", i-1)
			}
		}
		sent <- time.Now()
		require.NoError(t, c.Invalidate(ctx, e.eventID, "s1"))
	}
	wg.Wait()
	close(lat)
	var ds []time.Duration
	for d := range lat {
		ds = append(ds, d)
	}
	require.Len(t, ds, fast*sends)
	require.True(t, slow.Dropped(), "the slow viewer was disconnected")
	require.Equal(t, int64(1), h.SlowViewers())
	t.Logf("with a stuck viewer: %d deliveries to %d fast viewers, p50 %v, p99 %v, max %v", len(ds), fast,
		percentile(ds, 0.5), percentile(ds, 0.99), percentile(ds, 1))
	require.Less(t, percentile(ds, 0.99), 500*time.Millisecond)
	h.Leave(slow)
}

// The stream protocol over a real WebSocket: a reset first, then the
// section's invalidations, and an error message (not a dropped stream) for a
// malformed subscription.
func TestLiveStreamProtocol(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := startHub(t, e, seatmap.HubOptions{MinInterval: -1})
	srv := e.liveServer(h)
	c := e.cache(seatmap.CacheOptions{})
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	read := func() seatmap.Message {
		_, msg, err := conn.Read(ctx)
		require.NoError(t, err)
		var m seatmap.Message
		require.NoError(t, json.Unmarshal(msg, &m))
		return m
	}
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":"s1"}`)))
	require.Equal(t, seatmap.Message{Type: "reset", EventID: e.eventID, SectionID: "s1"}, read())
	for range 3 {
		require.NoError(t, c.Invalidate(ctx, e.eventID, "s1"))
		require.Equal(t, seatmap.Message{Type: "invalidate", EventID: e.eventID, SectionID: "s1"}, read())
	}
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":""}`)))
	require.Equal(t, "error", read().Type)
	require.NoError(t, c.Invalidate(ctx, e.eventID, "s1"))
	require.Equal(t, "invalidate", read().Type, "the stream survives a bad request")
	conn.Close(websocket.StatusNormalClosure, "")
	require.Eventually(t, func() bool { return h.Sections() == 0 }, 2*time.Second, 10*time.Millisecond,
		"the last viewer leaving unsubscribes")
}

// 1,000 viewers on one section; a hold commits; the relay deletes the cached
// snapshot and publishes; every viewer hears within 1 second (p99) of the
// commit.
func TestInvalidationReachesThousandViewersWithinASecondOfTheHold(t *testing.T) {
	// Serial: it bounds the latency (p99), which tests sharing the CPU would
	// measure too, and its relay publishes the whole package database's
	// outbox, the rows of the parallel tests' holds included.
	e := newEnv(t, 10, 20)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := startHub(t, e, seatmap.HubOptions{})
	srv := e.liveServer(h)
	c := e.cache(seatmap.CacheOptions{TTL: 30 * time.Second})
	// A warm cache, so the test also shows the relay deleting it.
	before, err := c.Get(ctx, e.eventID, e.section(), seatmap.FormatBitmap)
	require.NoError(t, err)

	relay := outbox.New(store.New(e.pool, store.Options{}), outbox.Options{Interval: 20 * time.Millisecond})
	relay.HandleEffects(store.TopicInventoryChanged, outbox.InventoryChanged(c.Invalidate))
	// Rows from earlier tests are not this test's business.
	_, _, err = relay.RunOnce(ctx)
	require.NoError(t, err)
	rctx, rcancel := context.WithCancel(ctx)
	relayDone := make(chan struct{})
	go func() { defer close(relayDone); relay.Run(rctx) }()
	defer func() { rcancel(); <-relayDone }()

	const viewers = 1000
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	conns, firsts := subscribeViewers(t, ctx, url, e.section(), viewers, 50)
	for _, msg := range firsts {
		require.Equal(t, "reset", typeOf(t, msg))
	}
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	require.Equal(t, 1, h.Sections())
	require.Equal(t, int64(1), numsub(t, e, c, e.section()))

	got := make([]time.Time, viewers)
	var wg sync.WaitGroup
	for i, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, msg, err := conn.Read(ctx)
			if err != nil {
				t.Errorf("viewer %d: %v", i, err)
				return
			}
			if typeOf(t, msg) == "invalidate" {
				got[i] = time.Now()
			}
		}()
	}
	e.hold(e.section() + "-C-7")
	committed := time.Now()
	wg.Wait()
	var lat []time.Duration
	for _, at := range got {
		require.False(t, at.IsZero(), "every viewer heard")
		lat = append(lat, at.Sub(committed))
	}
	p50, p99, maxLat := percentile(lat, 0.5), percentile(lat, 0.99), percentile(lat, 1)
	t.Logf("hold commit -> invalidation at %d viewers: p50 %v, p99 %v, max %v", viewers, p50, p99, maxLat)
	require.Less(t, p99, time.Second)

	after, err := c.Get(ctx, e.eventID, e.section(), seatmap.FormatBitmap)
	require.NoError(t, err)
	require.NotEqual(t, before.ETag, after.ETag, "the relay deleted the stale snapshot")
}

func TestTheHubWatchesNoMoreSectionsThanItsBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 1)
	h := startHub(t, e, seatmap.HubOptions{MaxWatched: 3})
	ctx := context.Background()
	until := time.Now().Add(time.Minute)
	require.Eventually(t, func() bool { return h.Watch(ctx, e.eventID, "made_up_0", until) == nil },
		2*time.Second, 5*time.Millisecond, "the hub runs")
	for i := 1; i < 3; i++ {
		require.NoError(t, h.Watch(ctx, e.eventID, fmt.Sprintf("made_up_%d", i), until))
	}
	for i := 3; i < 50; i++ {
		require.ErrorIs(t, h.Watch(ctx, e.eventID, fmt.Sprintf("made_up_%d", i), until), seatmap.ErrTooManyWatched)
	}
	require.NoError(t, h.Watch(ctx, e.eventID, "made_up_1", until), "an already watched section is renewed")
}
