package rehearsal

import (
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// counts are the running totals the progress bar and the monitor read.
type counts struct {
	arrived, waiting, admitted, soldOut, gaveUp      atomic.Int64
	foundNothing                                     atomic.Int64
	holdAttempts, holds, holdConflicts               atomic.Int64
	abandonedDeleted, abandonedExpired               atomic.Int64
	checkouts, declines, steppedUp                   atomic.Int64
	threeDSCompleted, threeDSFailed, ownCardsFailed  atomic.Int64
	paid, seatsPaid, notPaid, unsettled              atomic.Int64
	cancelAsked, cancelled, seatsCancelled           atomic.Int64
	socketFallbacks, socketsOverBudget, proofsOfWork atomic.Int64
	transfersOffered, transfersAccepted              atomic.Int64
	listed, resaleHolds, resalePaid                  atomic.Int64
	packageHolds, packagesPaid                       atomic.Int64
}

// timed is one request's latency at a moment of the rehearsal.
type timed struct {
	at      time.Duration // since the start of the rehearsal
	took    time.Duration
	outcome string // "201", "seat-unavailable", ...
}

// booking is a booking followed to PAID.
type booking struct {
	place      float64       // the fan's place in the queue (NaN: unknown)
	holdAt     time.Duration // the successful hold was sent
	checkoutAt time.Duration // the checkout that paid was answered (after the challenge, for 3-D Secure)
	paidAt     time.Duration // PAID was first seen
	seats      int
}

// sample is the monitor's view at one moment.
type sample struct {
	at                               time.Duration
	arrived, waiting, admitted, paid int64
	holds                            int64
	// From the admin listener's /metrics; NaN when not known.
	depth, capacity, leases, admittedTotal float64
	rss                                    float64 // bytes
	goroutines                             float64
	// From Config.Servers; NaN when not known.
	pgConns, redisBytes float64
	soldOut             bool
}

// recorder keeps everything the summary and the plots are made of.
type recorder struct {
	start time.Time
	n     counts

	mu        sync.Mutex
	opened    time.Duration // the sale opened (0 when it was open at the start)
	holdLat   []timed
	checkouts []timed
	bookings  []booking
	failures  map[string]map[string]int // call -> problem name -> count
	examples  map[string]string         // "call problem" -> the first answer's detail
	samples   []sample
	soldOutAt time.Duration // first seen sold out; <0: never
	chaos     []ChaosEvent
}

// mark records a kill or a restart of a part of the stack.
func (r *recorder) mark(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chaos = append(r.chaos, ChaosEvent{AfterS: time.Since(r.start).Seconds(), What: what})
}

func newRecorder(start time.Time) *recorder {
	return &recorder{start: start, failures: map[string]map[string]int{}, examples: map[string]string{}, soldOutAt: -1}
}

func (r *recorder) since(t time.Time) time.Duration { return t.Sub(r.start) }

func (r *recorder) failure(call, name string) { r.failureSaying(call, name, "") }

// failureSaying counts a failure and keeps the first detail of its kind,
// so the summary can say what an unexpected problem was about.
func (r *recorder) failureSaying(call, name, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k := call + " " + name; detail != "" && r.examples[k] == "" && len(r.examples) < 100 {
		r.examples[k] = detail
	}
	m := r.failures[call]
	if m == nil {
		m = map[string]int{}
		r.failures[call] = m
	}
	m[name]++
}

// appendLocked appends v to the recorder's list *to under its mutex: the
// fans' goroutines record concurrently.
func appendLocked[T any](mu *sync.Mutex, to *[]T, v T) {
	mu.Lock()
	*to = append(*to, v)
	mu.Unlock()
}

func (r *recorder) hold(t timed) { appendLocked(&r.mu, &r.holdLat, t) }

func (r *recorder) checkout(t timed) { appendLocked(&r.mu, &r.checkouts, t) }

func (r *recorder) paid(b booking) { appendLocked(&r.mu, &r.bookings, b) }

func (r *recorder) sample(s sample) {
	r.mu.Lock()
	r.samples = append(r.samples, s)
	if s.soldOut && r.soldOutAt < 0 {
		r.soldOutAt = s.at
	}
	r.mu.Unlock()
}

// sawSoldOut records the first moment the stack said sold out.
func (r *recorder) sawSoldOut(at time.Duration) {
	r.mu.Lock()
	if r.soldOutAt < 0 || at < r.soldOutAt {
		r.soldOutAt = at
	}
	r.mu.Unlock()
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted
// values: the smallest value with at least p% of the values at or below
// it. Zero for no values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// millis are durations in milliseconds, sorted.
func millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	sort.Float64s(out)
	return out
}

// bucketOf is the width of the plots' time buckets: about forty over the
// run, between one and ten seconds.
func bucketOf(total time.Duration) time.Duration {
	b := (total / 40).Round(time.Second)
	return min(max(b, time.Second), 10*time.Second)
}

// bucketed groups values by the bucket of their moment: index i holds the
// values of [i*width, (i+1)*width).
func bucketed[T any](items []T, at func(T) time.Duration, width time.Duration) [][]T {
	var out [][]T
	for _, it := range items {
		i := int(at(it) / width)
		if i < 0 {
			continue
		}
		for len(out) <= i {
			out = append(out, nil)
		}
		out[i] = append(out[i], it)
	}
	return out
}

// latencyPercentiles are p50, p90 and p99 (ms) of the latencies in each
// bucket; a bucket without any is skipped.
func latencyPercentiles(ts []timed, width time.Duration) (at []float64, p50, p90, p99 []float64) {
	for i, b := range bucketed(ts, func(t timed) time.Duration { return t.at }, width) {
		if len(b) == 0 {
			continue
		}
		ds := make([]time.Duration, len(b))
		for j, t := range b {
			ds[j] = t.took
		}
		ms := millis(ds)
		at = append(at, (float64(i)+0.5)*width.Seconds())
		p50, p90, p99 = append(p50, percentile(ms, 50)), append(p90, percentile(ms, 90)), append(p99, percentile(ms, 99))
	}
	return at, p50, p90, p99
}

// sortedKeys are a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
