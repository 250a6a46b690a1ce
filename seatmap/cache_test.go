package seatmap_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/ratelimit/slottest"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

func TestBitmapRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		statuses []vocab.SeatStatus
		want     []byte
	}{
		{"empty", nil, []byte{}},
		{"one of each, most significant pair first", vocab.SeatStatuses, []byte{0b00_01_10_11}},
		{"partial last byte", []vocab.SeatStatus{"BLOCKED", "AVAILABLE", "AVAILABLE", "AVAILABLE", "SOLD"},
			[]byte{0b11_00_00_00, 0b10_00_00_00}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := seatmap.EncodeBitmap(tc.statuses)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			back, err := seatmap.DecodeBitmap(got, len(tc.statuses))
			require.NoError(t, err)
			require.Equal(t, len(tc.statuses), len(back))
			for i := range back {
				require.Equal(t, tc.statuses[i], back[i])
			}
		})
	}
	_, err := seatmap.EncodeBitmap([]vocab.SeatStatus{"LOST"})
	require.Error(t, err)
	_, err = seatmap.DecodeBitmap([]byte{0}, 5)
	require.Error(t, err)
}

// A 50,000-seat section: the bitmap is exactly 12,500 bytes and decodes to
// the statuses of the JSON snapshot, seat by seat in the same order.
func TestFiftyThousandSeatBitmapIs12500BytesAndMatchesJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100, 500)
	ctx := context.Background()
	// Some of every status: held and sold seats name a reservation.
	h := e.hold(e.section() + "-A-1")
	_, err := e.pool.Exec(ctx, `UPDATE seats SET status = 'SOLD', reservation_id = $2
		WHERE section_id = $1 AND row_label = 'B' AND number <= 250`, e.section(), h.ID)
	require.NoError(t, err)
	_, err = e.pool.Exec(ctx, `UPDATE seats SET status = 'HELD', reservation_id = $2
		WHERE section_id = $1 AND row_label = 'AA' AND number % 3 = 0`, e.section(), h.ID)
	require.NoError(t, err)
	_, err = e.pool.Exec(ctx, `UPDATE seats SET status = 'BLOCKED' WHERE section_id = $1 AND number = 500`, e.section())
	require.NoError(t, err)

	c := e.cache(seatmap.CacheOptions{TTL: 10 * time.Second})
	bin, err := c.Get(ctx, e.eventID, e.section(), seatmap.FormatBitmap)
	require.NoError(t, err)
	require.Len(t, bin.Body, 12500)
	require.Equal(t, 50000, bin.SeatCount)

	js, err := c.Get(ctx, e.eventID, e.section(), seatmap.FormatJSON)
	require.NoError(t, err)
	var snap seatmap.SnapshotJSON
	require.NoError(t, json.Unmarshal(js.Body, &snap))
	require.Len(t, snap.Seats, 50000)
	statuses, err := seatmap.DecodeBitmap(bin.Body, bin.SeatCount)
	require.NoError(t, err)
	counts := map[vocab.SeatStatus]int{}
	for i, s := range snap.Seats {
		require.Equal(t, vocab.SeatStatus(s.Status), statuses[i], "seat %d (%s)", i, s.ID)
		counts[statuses[i]]++
	}
	require.Equal(t, map[vocab.SeatStatus]int{"AVAILABLE": 50000 - 167 - 250 - 100, "HELD": 1 + 166,
		"SOLD": 250, "BLOCKED": 100}, counts)
	// Layout order: rows A..Z, AA.., then seat number.
	require.Equal(t, e.section()+"-A-1", snap.Seats[0].ID)
	require.Equal(t, e.section()+"-Z-500", snap.Seats[26*500-1].ID)
	require.Equal(t, e.section()+"-AA-1", snap.Seats[26*500].ID)
	require.Equal(t, int64(5000), snap.Seats[0].Price.Amount)
}

// countingLoader counts database loads and can hold them back.
type countingLoader struct {
	load  seatmap.Loader
	calls atomic.Int64
	delay time.Duration
}

func (l *countingLoader) Load(ctx context.Context, eventID, sectionID string) (store.SectionSeats, error) {
	l.calls.Add(1)
	// A slow query is the scenario, not a wait for something: callers keep
	// arriving while the load takes its time.
	time.Sleep(l.delay)
	return l.load(ctx, eventID, sectionID)
}

// 1,000 concurrent misses on one cold section, spread over processes (each
// with its own cache and so its own in-process collapsing): the fill lease
// lets one of them read the database; the rest wait for its result.
func TestThousandConcurrentMissesCauseAHandfulOfQueries(t *testing.T) {
	// Not parallel: a thousand callers load the machine enough on their
	// own; beside the package's other tests the reader's statements time out.
	cases := []struct {
		processes, callersEach int
		format                 seatmap.Format
	}{
		{1, 1000, seatmap.FormatBitmap},
		{4, 250, seatmap.FormatBitmap},
		{8, 125, seatmap.FormatJSON},
	}
	e := newEnv(t, 100, 500)
	// Serial: the cases count the queries of the env's one reader pool.
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%dx%d_%s", tc.processes, tc.callersEach, tc.format), func(t *testing.T) {
			ctx := context.Background()
			loader := &countingLoader{load: e.reader.SectionSeats, delay: 20 * time.Millisecond}
			before := e.queries.Count()
			var caches []*seatmap.Cache
			for range tc.processes {
				// A distinct prefix per case keeps the section cold. Wait is
				// generous: on a loaded machine a thousand goroutines take
				// seconds to be scheduled, and the test counts queries, not time.
				// The lease outlives a fill that slow too: an expired lease
				// lets a second process fill, as it should when a filler dies.
				caches = append(caches, seatmap.NewCache(e.rdb, fmt.Sprintf("%scase%d:", e.prefix, i), loader.Load,
					seatmap.CacheOptions{TTL: 10 * time.Second, Wait: 30 * time.Second, LeaseTTL: 30 * time.Second}))
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			etags := make(chan string, tc.processes*tc.callersEach)
			errs := make(chan error, tc.processes*tc.callersEach)
			for _, c := range caches {
				for range tc.callersEach {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						got, err := c.Get(ctx, e.eventID, e.section(), tc.format)
						if err != nil {
							errs <- err
							return
						}
						etags <- got.ETag
					}()
				}
			}
			close(start)
			wg.Wait()
			close(errs)
			close(etags)
			for err := range errs {
				require.NoError(t, err)
			}
			distinct := map[string]bool{}
			for tag := range etags {
				distinct[tag] = true
			}
			require.Len(t, distinct, 1, "every caller got the same snapshot")
			queries := e.queries.Count() - before
			t.Logf("%d callers in %d processes: %d loads, %d seat-map queries", tc.processes*tc.callersEach,
				tc.processes, loader.calls.Load(), queries)
			require.LessOrEqual(t, queries, int64(3))
			require.Equal(t, loader.calls.Load(), queries)
		})
	}
}

// A lease held by someone else is neither stolen nor deleted: the request
// waits briefly and gives up with the retryable ErrUnavailable.
func TestForeignLeaseMeansWaitThenUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 10)
	ctx := context.Background()
	c := e.cache(seatmap.CacheOptions{Wait: 150 * time.Millisecond})
	lease := e.prefix + "seatmap:{" + e.eventID + "}:" + e.section() + ":lease"
	require.NoError(t, e.rdb.Set(ctx, lease, "someone-else", 5*time.Second).Err())
	_, err := c.Get(ctx, e.eventID, e.section(), seatmap.FormatBitmap)
	require.ErrorIs(t, err, seatmap.ErrUnavailable)
	v, err := e.rdb.Get(ctx, lease).Result()
	require.NoError(t, err)
	require.Equal(t, "someone-else", v)

	// Once the owner is done, the next request fills.
	require.NoError(t, e.rdb.Del(ctx, lease).Err())
	got, err := c.Get(ctx, e.eventID, e.section(), seatmap.FormatBitmap)
	require.NoError(t, err)
	require.Equal(t, 20, got.SeatCount)
	n, err := e.rdb.Exists(ctx, lease).Result()
	require.NoError(t, err)
	require.Zero(t, n, "the filler released its own lease")
}

// A fill that read the database before an invalidation must not store its
// now stale snapshot.
func TestFillRacingAnInvalidationIsNotStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 10)
	ctx := context.Background()
	loaded := make(chan struct{})
	proceed := make(chan struct{})
	c := seatmap.NewCache(e.rdb, e.prefix, func(ctx context.Context, ev, sec string) (store.SectionSeats, error) {
		s, err := e.reader.SectionSeats(ctx, ev, sec)
		close(loaded)
		<-proceed
		return s, err
	}, seatmap.CacheOptions{TTL: 10 * time.Second})
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, e.eventID, e.section(), seatmap.FormatJSON)
		done <- err
	}()
	<-loaded
	require.NoError(t, c.Invalidate(ctx, e.eventID, e.section()))
	close(proceed)
	require.NoError(t, <-done)
	n, err := e.rdb.Exists(ctx, e.prefix+"seatmap:{"+e.eventID+"}:"+e.section()+":json").Result()
	require.NoError(t, err)
	require.Zero(t, n, "the stale fill was not cached")
}

func TestUnknownSectionIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 4)
	c := e.cache(seatmap.CacheOptions{})
	for range 2 { // the second answer comes from the cached miss
		_, err := c.Get(context.Background(), e.eventID, "no_such_section", seatmap.FormatJSON)
		require.True(t, errors.Is(err, store.ErrNotFound), "got %v", err)
	}
	got, err := c.Get(context.Background(), e.eventID, e.eventID+"_ga", seatmap.FormatBitmap)
	require.NoError(t, err)
	require.Zero(t, got.SeatCount)
}

// The process-local copy answers without Redis while its section is
// watched, and every process drops its copy the moment the invalidation
// arrives: the next read sees the change.
func TestLocalCopiesAreDroppedByTheInvalidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 10)
	ctx := context.Background()
	var caches []*seatmap.Cache
	var loaders []*countingLoader
	for range 2 { // two processes, each with its hub
		h := startHub(t, e, seatmap.HubOptions{})
		l := &countingLoader{load: e.reader.SectionSeats}
		c := seatmap.NewCache(e.rdb, e.prefix, l.Load, seatmap.CacheOptions{TTL: time.Minute})
		c.UseLocal(h, time.Minute)
		require.Eventually(t, func() bool {
			return h.Watch(ctx, e.eventID, e.section(), time.Now()) == nil
		}, 2*time.Second, 5*time.Millisecond, "the hub runs")
		caches, loaders = append(caches, c), append(loaders, l)
	}
	first, err := caches[0].Get(ctx, e.eventID, e.section(), seatmap.FormatBitmap)
	require.NoError(t, err)
	for _, c := range caches {
		got, err := c.Get(ctx, e.eventID, e.section(), seatmap.FormatBitmap)
		require.NoError(t, err)
		require.Equal(t, first.ETag, got.ETag)
	}
	// Redis loses the entry without an invalidation: the local copies answer.
	require.NoError(t, e.rdb.Del(ctx, e.prefix+"seatmap:{"+e.eventID+"}:"+e.section()+":bin").Err())
	for _, c := range caches {
		got, err := c.Get(ctx, e.eventID, e.section(), seatmap.FormatBitmap)
		require.NoError(t, err)
		require.Equal(t, first.ETag, got.ETag)
	}
	require.Equal(t, int64(1), loaders[0].calls.Load()+loaders[1].calls.Load())

	// A hold and its invalidation: every process serves the change at once.
	e.hold(e.section() + "-A-3")
	require.NoError(t, caches[0].Invalidate(ctx, e.eventID, e.section()))
	for _, c := range caches {
		require.Eventually(t, func() bool {
			got, err := c.Get(ctx, e.eventID, e.section(), seatmap.FormatBitmap)
			return err == nil && got.ETag != first.ETag
		}, time.Second, time.Millisecond)
	}
}

// A fill, a failed fill and an invalidation send the cache's scripts and its
// one transaction: each must name keys of one Redis Cluster slot.
func TestEveryCacheScriptAndTransactionTouchesOneClusterSlot(t *testing.T) {
	t.Parallel()
	rdb, prefix, rec := slottest.Record(t)
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
	slottest.RequireEachRanInOneSlot(t, rec, seatmap.ScriptHashes())
}
