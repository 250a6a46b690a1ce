package seatmap_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/seatmap"
)

// loadClient is a keep-alive client for 64 concurrent connections.
func loadClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128}}
}

// load sends GETs from 64 goroutines over keep-alive connections for d and
// returns the requests completed.
func load(b *testing.B, client *http.Client, url string, d time.Duration) int {
	var total atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				resp, err := client.Get(url)
				if err != nil {
					b.Error(err)
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || n != 12500 {
					b.Errorf("status %d, %d bytes", resp.StatusCode, n)
					return
				}
				total.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(total.Load())
}

// BenchmarkBitmapHotCache serves a 50,000-seat section's 12,500-byte bitmap
// through the API (gin, the Redis snapshot cache, ETag headers) beside a bare
// net/http handler writing the same bytes, in the same run, from a Go load
// generator over loopback with 64 concurrent keep-alive connections. Each
// iteration measures both for one second each, alternating, so that noise
// from other work on the machine hits both alike.
func BenchmarkBitmapHotCache(b *testing.B) {
	e := newEnv(b, 100, 500)
	ctx := context.Background()
	cache := e.cache(seatmap.CacheOptions{TTL: time.Hour}) // hot for the whole run
	entry, err := cache.Get(ctx, e.eventID, e.section(), seatmap.FormatBitmap)
	require.NoError(b, err)
	require.Len(b, entry.Body, 12500)
	// As wired in encore api: a local copy for 500ms, dropped by invalidations.
	local := e.cache(seatmap.CacheOptions{TTL: time.Hour})
	local.UseLocal(startHub(b, e, seatmap.HubOptions{}), 500*time.Millisecond)

	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-Seat-Count", strconv.Itoa(entry.SeatCount))
		_, _ = w.Write(entry.Body)
	}))
	defer bare.Close()
	serve := func(c *seatmap.Cache) string {
		edge := &api.Server{Browse: &api.Browse{Cache: c}}
		srv := httptest.NewServer(edge.Handler())
		b.Cleanup(srv.Close)
		return srv.URL + "/v1/events/" + e.eventID + "/sections/" + e.section() + "/seats.bin"
	}
	redisURL, encURL := serve(cache), serve(local)

	client := loadClient()
	load(b, client, bare.URL, 200*time.Millisecond) // warm both
	load(b, client, encURL, 200*time.Millisecond)
	load(b, client, redisURL, 200*time.Millisecond)
	var bareN, encN, redisN int
	var elapsed time.Duration
	for b.Loop() {
		const d = time.Second
		bareN += load(b, client, bare.URL, d)
		encN += load(b, client, encURL, d)
		redisN += load(b, client, redisURL, d)
		elapsed += d
	}
	b.ReportMetric(float64(bareN)/elapsed.Seconds(), "bare_req/s")
	b.ReportMetric(float64(encN)/elapsed.Seconds(), "encore_req/s")
	b.ReportMetric(100*float64(encN)/float64(bareN), "%_of_bare")
	b.ReportMetric(float64(redisN)/elapsed.Seconds(), "redis_only_req/s")
	b.ReportMetric(100*float64(redisN)/float64(bareN), "redis_only_%_of_bare")
}

// The viewers' client ends run in helper processes (this test binary again,
// running TestViewerClientHelper), because one process may not hold 20,000
// sockets here (RLIMIT_NOFILE is 20,000 and cannot be raised); the server
// process holds the 10,000 server ends, the hub and Redis. Each helper
// prints "ready" once its viewers have their reset, then the arrival time
// (Unix nanoseconds) of every invalidation it receives.
const (
	helperURLEnv = "ENCORE_VIEWER_HELPER_URL"
	helperNEnv   = "ENCORE_VIEWER_HELPER_N"
)

func TestViewerClientHelper(t *testing.T) {
	t.Parallel()
	url := os.Getenv(helperURLEnv)
	if url == "" {
		t.Skip("a helper process of BenchmarkLiveViewers10k")
	}
	n, err := strconv.Atoi(os.Getenv(helperNEnv))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conns, _ := subscribeViewers(t, ctx, url, "s1", n, 100)
	arrivals := make(chan int64, n)
	for _, conn := range conns {
		go func() {
			for {
				if _, _, err := conn.Read(ctx); err != nil {
					return
				}
				arrivals <- time.Now().UnixNano()
			}
		}()
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }() // the parent closes stdin to stop us
	for {
		select {
		case at := <-arrivals:
			fmt.Fprintln(out, at)
			if len(arrivals) == 0 {
				out.Flush()
			}
		case <-ctx.Done():
			for _, conn := range conns {
				conn.CloseNow()
			}
			return
		}
	}
}

// startHelpers runs helper processes with n viewers each and returns their
// merged arrival times once all are ready.
func startHelpers(b *testing.B, url string, helpers, n int) <-chan time.Time {
	arrivals := make(chan time.Time, helpers*n)
	ready := make(chan struct{}, helpers)
	for range helpers {
		cmd := exec.Command(os.Args[0], "-test.run=^TestViewerClientHelper$", "-test.timeout=30m")
		cmd.Env = append(os.Environ(), helperURLEnv+"="+url, helperNEnv+"="+strconv.Itoa(n))
		stdin, err := cmd.StdinPipe()
		require.NoError(b, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(b, err)
		cmd.Stderr = os.Stderr
		require.NoError(b, cmd.Start())
		b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				line := sc.Text()
				if line == "ready" {
					ready <- struct{}{}
					continue
				}
				if ns, err := strconv.ParseInt(line, 10, 64); err == nil {
					arrivals <- time.Unix(0, ns)
				}
			}
		}()
	}
	for range helpers {
		select {
		case <-ready:
		case <-time.After(5 * time.Minute):
			b.Fatal("viewer helpers did not connect")
		}
	}
	return arrivals
}

// BenchmarkLiveViewers10k holds 10,000 WebSocket viewers of one section in
// one server process (their client ends in two helper processes on the same
// 2 cores) and times each invalidation from its publication to its arrival
// at every viewer. One iteration is one invalidation reaching all 10,000.
func BenchmarkLiveViewers10k(b *testing.B) {
	const viewers, helpers = 10000, 2
	e := newEnv(b, 1, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	h := startHub(b, e, seatmap.HubOptions{})
	srv := e.liveServer(h)
	c := e.cache(seatmap.CacheOptions{})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	arrivals := startHelpers(b, "ws"+strings.TrimPrefix(srv.URL, "http"), helpers, viewers/helpers)
	runtime.GC()
	runtime.ReadMemStats(&after)
	g1 := runtime.NumGoroutine()
	require.Equal(b, 1, h.Sections())

	var lat []time.Duration
	for b.Loop() {
		// Time passing is the point: past the hub's 100ms coalescing window
		// the next invalidation is sent at once, not held back.
		time.Sleep(150 * time.Millisecond)
		sent := time.Now()
		require.NoError(b, c.Invalidate(ctx, e.eventID, "s1"))
		for range viewers {
			select {
			case at := <-arrivals:
				lat = append(lat, at.Sub(sent))
			case <-time.After(30 * time.Second):
				b.Fatal("an invalidation did not reach every viewer")
			}
		}
	}
	b.ReportMetric(float64(viewers), "viewers")
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/viewers/1024, "server_heap_KiB/viewer")
	b.ReportMetric(float64(h.SlowViewers()), "dropped")
	b.ReportMetric(float64(g1-g0)/viewers, "server_goroutines/viewer")
	b.Logf("%d viewers, %d deliveries: p50 %v, p99 %v, max %v; server goroutines per viewer %.1f", viewers, len(lat),
		percentile(lat, 0.5), percentile(lat, 0.99), percentile(lat, 1), float64(g1-g0)/viewers)
}
