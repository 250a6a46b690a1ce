package rehearsal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentileIsTheNearestRank(t *testing.T) {
	t.Parallel()
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	for _, tc := range []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"p50 of 1..100 is the 50th value", hundred, 50, 50},
		{"p99 of 1..100 is the 99th value", hundred, 99, 99},
		{"p100 is the largest", hundred, 100, 100},
		{"a tiny p is the smallest", hundred, 0.001, 1},
		{"p50 of four values is the second", []float64{10, 20, 30, 40}, 50, 20},
		{"p99 of four values is the largest", []float64{10, 20, 30, 40}, 99, 40},
		{"p50 of five values is the middle one", []float64{1, 2, 3, 4, 50}, 50, 3},
		{"one value is every percentile", []float64{7}, 99, 7},
		{"no values is zero", nil, 50, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, percentile(tc.sorted, tc.p))
		})
	}
}

func TestMillisSortsDurationsInMilliseconds(t *testing.T) {
	t.Parallel()
	require.Equal(t, []float64{0.5, 2, 1500}, millis([]time.Duration{1500 * time.Millisecond, 500 * time.Microsecond, 2 * time.Millisecond}))
}

func TestLatencyPercentilesAreTakenPerBucketSkippingEmptyOnes(t *testing.T) {
	t.Parallel()
	ts := []timed{
		{at: 100 * time.Millisecond, took: 10 * time.Millisecond},
		{at: 900 * time.Millisecond, took: 30 * time.Millisecond},
		{at: 2500 * time.Millisecond, took: 5 * time.Millisecond},
	}
	at, p50, _, p99 := latencyPercentiles(ts, time.Second)
	require.Equal(t, []float64{0.5, 2.5}, at, "the middles of buckets 0 and 2; bucket 1 is empty")
	require.Equal(t, []float64{10, 5}, p50)
	require.Equal(t, []float64{30, 5}, p99)
}

func TestBucketsAreAboutFortyOverTheRunBetweenOneAndTenSeconds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		run, want time.Duration
	}{{10 * time.Second, time.Second}, {200 * time.Second, 5 * time.Second}, {2 * time.Hour, 10 * time.Second}} {
		require.Equal(t, tc.want, bucketOf(tc.run), "a run of %s", tc.run)
	}
}

func TestQueueSocketsFitInTheOpenFileLimitBesideTheHTTPConnections(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                               string
		limit                              uint64
		fans, concurrency, addresses, each int
		want                               int
	}{
		{"a small sale: a socket for every fan", 20_000, 100, 64, 17, 1, 100},
		{"20,000 fans under a 20,000-file limit: the rest poll", 20_000, 20_000, 64, 3_334, 1, 20_000 - 64 - 3_334 - 512},
		{"no room at all", 500, 1_000, 64, 100, 1, 0},
		{"the balancer in this process: three files a socket", 20_000, 10_000, 128, 1_667, 3, (20_000 - (128+1_667)*3 - 512) / 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, socketBudget(tc.limit, tc.fans, tc.concurrency, tc.addresses, tc.each))
		})
	}
}

// A sale that sold out fast and then sold a returned seat minutes later
// has the same whole-window goodput as one that took all the window; the
// pace of its first 90% tells them apart.
func TestTheSalesPaceLeavesTheTailOut(t *testing.T) {
	t.Parallel()
	opened := 10 * time.Second
	fast := make([]booking, 0, 10)
	slow := make([]booking, 0, 10)
	for i := range 9 {
		fast = append(fast, booking{paidAt: opened + time.Duration(i+1)*time.Second})    // 9 paid by 9 s
		slow = append(slow, booking{paidAt: opened + time.Duration(i+1)*10*time.Second}) // 9 paid by 90 s
	}
	fast = append(fast, booking{paidAt: opened + 100*time.Second}) // the tail
	slow = append(slow, booking{paidAt: opened + 100*time.Second})
	require.InDelta(t, 1.0, goodput90(fast, opened), 1e-9, "9 in 9 s")
	require.InDelta(t, 0.1, goodput90(slow, opened), 1e-9, "9 in 90 s")
}
