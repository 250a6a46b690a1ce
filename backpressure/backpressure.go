// Package backpressure is how every process of the edge knows whether the
// booking saga can take more work, and refuses what it could not finish.
//
// Each process measures its own calls into the saga (a checkout's
// Update-With-Start: how long it took, whether it reached the saga at all,
// how many are waiting now) and the saga's backlog (the age of the oldest
// workflow task no worker has picked up), and publishes the last Window of them to Redis
// every Interval. Each process reads every fresh report back, so the bounds
// are checked against the load of the whole deployment, and the waiting
// room's admitter steers by the same figures wherever it runs.
//
// When the load passes a bound, Check answers *OverloadedError: the edge
// turns it into 503 unavailable with Retry-After before anything is started
// (a checkout reaches no workflow, a hold on an unmetered event takes no
// seat).
//
// Refusing on failures and latency measured over a window would go on for
// a whole window after the saga recovered, since refused calls measure
// nothing. So while those two bounds refuse, each process still lets one
// call through every Interval, and a quick answer to one of those starts
// the measurement afresh: a restarted Temporal is back in business within
// an Interval, not a Window.
package backpressure

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/internal/defaults"
)

// Bounds are when the saga counts as overloaded. Zero fields take the
// defaults in brackets.
type Bounds struct {
	// MaxLatency bounds the mean time of a checkout's call into the saga
	// (start, fraud, authorisation) over the window [5s].
	MaxLatency time.Duration
	// MaxErrorRate bounds the share of calls that failed to get an answer
	// from the saga (Temporal unreachable, timed out, overloaded) [0.5].
	// Declines and refusals are answers, not failures.
	MaxErrorRate float64
	// MinCalls is how many calls the window needs before latency and error
	// rate are trusted [10].
	MinCalls int64
	// MaxInFlight bounds calls waiting on the saga at once, over every
	// process [256].
	MaxInFlight int64
	// MaxBacklog bounds the age of the oldest workflow task waiting for a
	// worker (signals and checkouts the workers have not picked up) [10s].
	MaxBacklog time.Duration
	// RetryAfter is what an overloaded answer tells the client [5s].
	RetryAfter time.Duration
	// Window is how far back latency and errors are measured [10s].
	Window time.Duration
	// Interval is how often a process publishes and reads the load [1s].
	Interval time.Duration
}

func (b Bounds) withDefaults() Bounds {
	defaults.Fill(&b.MaxLatency, 5*time.Second)
	defaults.Fill(&b.MaxErrorRate, 0.5)
	defaults.Fill(&b.MinCalls, 10)
	defaults.Fill(&b.MaxInFlight, 256)
	defaults.Fill(&b.MaxBacklog, 10*time.Second)
	defaults.Fill(&b.RetryAfter, 5*time.Second)
	defaults.Fill(&b.Window, 10*time.Second)
	defaults.Fill(&b.Interval, time.Second)
	return b
}

// Load is the saga's load over the last window: of one process as it
// publishes it, or summed over every process that published recently.
type Load struct {
	Calls      int64         `json:"calls"`
	Failures   int64         `json:"failures"`
	LatencySum time.Duration `json:"latency_sum"`
	InFlight   int64         `json:"in_flight"`
	// Backlog is the age of the oldest workflow task waiting for a worker,
	// as last probed (the oldest over every process).
	Backlog   time.Duration `json:"backlog"`
	Processes int           `json:"-"`
	At        time.Time     `json:"at"`
}

// MeanLatency is the mean call time, zero without calls.
func (l Load) MeanLatency() time.Duration {
	if l.Calls == 0 {
		return 0
	}
	return l.LatencySum / time.Duration(l.Calls)
}

// ErrorRate is the share of calls that failed, zero without calls.
func (l Load) ErrorRate() float64 {
	if l.Calls == 0 {
		return 0
	}
	return float64(l.Failures) / float64(l.Calls)
}

// Reasons an overloaded answer gives (also the metric's label).
const (
	ReasonLatency  = "latency"
	ReasonErrors   = "errors"
	ReasonInFlight = "in-flight"
	ReasonBacklog  = "backlog"
)

// OverloadedError is the answer while the saga is past a bound.
type OverloadedError struct {
	Reason     string
	Load       Load
	RetryAfter time.Duration
}

func (e *OverloadedError) Error() string {
	switch e.Reason {
	case ReasonLatency:
		return fmt.Sprintf("the booking service is slow (checkouts take %s on average); retry shortly",
			e.Load.MeanLatency().Round(time.Millisecond))
	case ReasonErrors:
		return fmt.Sprintf("the booking service is failing (%.0f%% of recent checkouts); retry shortly", 100*e.Load.ErrorRate())
	case ReasonBacklog:
		return fmt.Sprintf("the booking service is behind (its oldest task has waited %s); retry shortly",
			e.Load.Backlog.Round(100*time.Millisecond))
	default:
		return fmt.Sprintf("the booking service is busy (%d checkouts in progress); retry shortly", e.Load.InFlight)
	}
}

// bucket is one second of this process's calls.
type bucket struct {
	sec        int64
	calls      int64
	failures   int64
	latencySum time.Duration
}

// Monitor measures this process's calls into the saga, shares them, and
// checks the deployment's load against the bounds. A nil *Monitor admits
// everything and measures nothing.
type Monitor struct {
	rdb    redis.UniversalClient
	key    string
	id     string
	bounds Bounds
	log    *slog.Logger
	now    func() time.Time

	// probe measures the saga's backlog (nil: not measured).
	probe func(context.Context) (time.Duration, error)

	mu        sync.Mutex
	buckets   []bucket
	sickSince time.Time // when Check found the error or latency bound passed (zero: it did not, last time)
	lastProbe time.Time // when Check last let a call through past it
	inFlight  int64
	backlog   time.Duration // as last probed by this process
	shared    Load          // every process, as last read
	ownSent   Load          // this process's part of shared

	duration prometheus.Histogram
	calls    *prometheus.CounterVec
	flight   prometheus.GaugeFunc
	shed     *prometheus.CounterVec
}

// New makes a monitor that shares its load under prefix+"saga:load" in rdb.
func New(rdb redis.UniversalClient, prefix string, b Bounds, log *slog.Logger) *Monitor {
	b = b.withDefaults()
	host, _ := os.Hostname()
	m := &Monitor{rdb: rdb, key: prefix + "saga:load", bounds: b, log: log, now: time.Now,
		id:      host + "-" + strconv.Itoa(os.Getpid()) + "-" + uuid.NewString()[:8],
		buckets: make([]bucket, int(b.Window/time.Second)+1)}
	m.duration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "encore_saga_call_duration_seconds",
		Help:    "Time of a checkout's call into the booking saga (start, fraud, authorisation).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)})
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_saga_calls_total",
		Help: "Checkout calls into the booking saga, by result (ok: the saga answered; failed: it did not)."}, []string{"result"})
	m.flight = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "encore_saga_in_flight",
		Help: "Checkout calls of this process waiting on the booking saga."}, func() float64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		return float64(m.inFlight)
	})
	m.shed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_saga_shed_total",
		Help: "Requests answered 503 because the booking saga was past a bound, by reason."}, []string{"reason"})
	return m
}

// ProbeBacklog sets how this process measures the saga's backlog (the age
// of the oldest workflow task waiting for a worker); Sync probes it. Set it
// before Run.
func (m *Monitor) ProbeBacklog(probe func(context.Context) (time.Duration, error)) { m.probe = probe }

// Bounds returns the bounds in force (defaults filled in).
func (m *Monitor) Bounds() Bounds { return m.bounds }

// Register creates the monitor's metrics on reg.
func (m *Monitor) Register(reg prometheus.Registerer) {
	reg.MustRegister(m.duration, m.calls, m.flight, m.shed)
}

// Begin records the start of a call into the saga; call the returned
// function once with whether the call failed to get the saga's answer.
func (m *Monitor) Begin() (end func(failed bool)) {
	if m == nil {
		return func(bool) {}
	}
	start := m.now()
	m.mu.Lock()
	m.inFlight++
	m.mu.Unlock()
	var once sync.Once
	return func(failed bool) {
		once.Do(func() { m.end(start, failed) })
	}
}

func (m *Monitor) end(start time.Time, failed bool) {
	now := m.now()
	d := now.Sub(start)
	m.mu.Lock()
	m.inFlight--
	if !failed && d <= m.bounds.MaxLatency && !m.sickSince.IsZero() && !start.Before(m.sickSince) {
		// A call begun since the saga was judged failing or slow (a probe)
		// was answered, and quickly: what the window holds is history.
		for i := range m.buckets {
			m.buckets[i] = bucket{}
		}
	}
	b := m.bucketAt(now.Unix())
	b.calls++
	b.latencySum += d
	if failed {
		b.failures++
	}
	m.mu.Unlock()
	m.duration.Observe(d.Seconds())
	result := "ok"
	if failed {
		result = "failed"
	}
	m.calls.WithLabelValues(result).Inc()
}

// bucketAt returns the bucket of second sec, recycling a stale one. m.mu held.
func (m *Monitor) bucketAt(sec int64) *bucket {
	b := &m.buckets[int(sec%int64(len(m.buckets)))]
	if b.sec != sec {
		*b = bucket{sec: sec}
	}
	return b
}

// own is this process's load over the window. m.mu held.
func (m *Monitor) own(now time.Time) Load {
	l := Load{InFlight: m.inFlight, Backlog: m.backlog, At: now, Processes: 1}
	oldest := now.Add(-m.bounds.Window).Unix()
	for _, b := range m.buckets {
		if b.sec > oldest && b.sec <= now.Unix() {
			l.Calls += b.calls
			l.Failures += b.failures
			l.LatencySum += b.latencySum
		}
	}
	return l
}

// Load is the deployment's load: the last shared read with this process's
// part replaced by its current figures.
func (m *Monitor) Load() Load {
	if m == nil {
		return Load{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loadLocked(m.now())
}

// loadLocked is Load at now. m.mu held.
func (m *Monitor) loadLocked(now time.Time) Load {
	own := m.own(now)
	l := m.shared
	l.Calls += own.Calls - m.ownSent.Calls
	l.Failures += own.Failures - m.ownSent.Failures
	l.LatencySum += own.LatencySum - m.ownSent.LatencySum
	l.InFlight += own.InFlight - m.ownSent.InFlight
	l.Backlog = max(l.Backlog, own.Backlog)
	l.Processes = max(l.Processes, 1)
	l.At = now
	return l
}

// Check answers *OverloadedError when the deployment's load is past a
// bound, nil otherwise.
func (m *Monitor) Check() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	now := m.now()
	l := m.loadLocked(now)
	reason := ""
	switch {
	case l.InFlight >= m.bounds.MaxInFlight:
		reason = ReasonInFlight
	case l.Backlog > m.bounds.MaxBacklog:
		reason = ReasonBacklog
	case m.judgedSick(l):
		reason = ReasonErrors
		if l.ErrorRate() <= m.bounds.MaxErrorRate {
			reason = ReasonLatency
		}
		if m.sickSince.IsZero() {
			m.sickSince, m.lastProbe = now, now // the first probe waits an Interval
		}
		if now.Sub(m.lastProbe) >= m.bounds.Interval {
			// One call an Interval goes through to find out whether the
			// saga has recovered (see end).
			m.lastProbe = now
			m.mu.Unlock()
			return nil
		}
	default:
		m.sickSince = time.Time{}
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	m.shed.WithLabelValues(reason).Inc()
	return &OverloadedError{Reason: reason, Load: l, RetryAfter: m.bounds.RetryAfter}
}

// judgedSick reports whether l's calls are past the error or latency bound.
func (m *Monitor) judgedSick(l Load) bool {
	return l.Calls >= m.bounds.MinCalls && (l.ErrorRate() > m.bounds.MaxErrorRate || l.MeanLatency() > m.bounds.MaxLatency)
}

// Sync publishes this process's load and reads every process's back.
// Reports older than three intervals (a stopped process) are dropped.
func (m *Monitor) Sync(ctx context.Context) error {
	if m.probe != nil {
		pctx, cancel := context.WithTimeout(ctx, m.bounds.Interval)
		backlog, err := m.probe(pctx)
		cancel()
		if err != nil {
			// Unmeasured is not healthy or sick: the other signals decide.
			m.log.Warn("probe the saga's backlog", "err", err)
			backlog = 0
		}
		m.mu.Lock()
		m.backlog = backlog
		m.mu.Unlock()
	}
	m.mu.Lock()
	own := m.own(m.now())
	m.mu.Unlock()
	raw, _ := json.Marshal(own) // plain numbers and a time
	pipe := m.rdb.Pipeline()
	pipe.HSet(ctx, m.key, m.id, raw)
	pipe.Expire(ctx, m.key, 10*m.bounds.Interval+m.bounds.Window)
	all := pipe.HGetAll(ctx, m.key)
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	var sum Load
	var stale []string
	cutoff := own.At.Add(-3 * m.bounds.Interval)
	for id, v := range all.Val() {
		var l Load
		if err := json.Unmarshal([]byte(v), &l); err != nil || l.At.Before(cutoff) {
			stale = append(stale, id)
			continue
		}
		sum.Calls += l.Calls
		sum.Failures += l.Failures
		sum.LatencySum += l.LatencySum
		sum.InFlight += l.InFlight
		sum.Backlog = max(sum.Backlog, l.Backlog)
		sum.Processes++
	}
	if len(stale) > 0 {
		m.rdb.HDel(ctx, m.key, stale...)
	}
	m.mu.Lock()
	m.shared, m.ownSent = sum, own
	m.mu.Unlock()
	return nil
}

// Run syncs every Interval until ctx ends. While Redis is unreachable the
// last shared figures stand and this process's own figures stay current.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.bounds.Interval)
	defer t.Stop()
	for {
		if err := m.Sync(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("share the saga's load", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
