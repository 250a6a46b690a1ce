// Package outbox is the relay that carries committed outbox rows to their
// effects: one active relay at a time (a PostgreSQL advisory lock), rows in ID
// order, each marked published only after its handler succeeded. Delivery is
// at least once: a crash between a handler and its mark repeats the row, so
// every handler must be idempotent (deleting a cache entry and publishing an
// invalidation both are).
//
// Handlers are per topic and pluggable: the browse plane registers
// inventory.changed (delete the cached snapshot, then publish the section's
// invalidation). Rows of a topic without a handler wait, and show in the
// oldest-unpublished age.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/encore-tickets/encore/internal/ctxsleep"
	"github.com/encore-tickets/encore/internal/defaults"
	"github.com/encore-tickets/encore/store"
)

// Row is one outbox row handed to a handler.
type Row struct {
	ID        int64
	Topic     string
	Key       string
	Payload   json.RawMessage
	CreatedAt time.Time
}

// Handler carries one row to its effect. An error leaves the row (and every
// later one) unpublished, to be retried: order is kept.
type Handler func(ctx context.Context, row Row) error

// Effect is one idempotent effect a row asks for, named by its key.
type Effect struct {
	Key string
	Do  func(ctx context.Context) error
}

// Effects turns a row into the effects it asks for; an error is a row that
// can never be carried out (malformed). A drain does each key once, however
// many of its rows ask for it: every row it read had committed before it
// began, so one effect done during the drain comes after all of them. Under
// a sale, a drain's holds touch the same few sections again and again.
type Effects func(row Row) ([]Effect, error)

// handle is a topic's handler as a drain runs it: done holds the keys of
// the effects this drain has done.
type handle func(ctx context.Context, row Row, done map[string]bool) error

// Options tune the relay; zero values take the defaults.
type Options struct {
	Interval        time.Duration // pause between polls when idle (50ms)
	StandbyInterval time.Duration // how often a standby tries to become active (2s)
	Batch           int           // rows per read (100)
	MaxBackoff      time.Duration // longest pause after a failure (5s)
	Log             *slog.Logger
}

// Relay publishes the outbox.
type Relay struct {
	store *store.Store
	opts  Options

	mu       sync.RWMutex
	handlers map[string]handle

	active     atomic.Bool
	age        prometheus.Gauge
	activeG    prometheus.Gauge
	published  *prometheus.CounterVec
	failures   *prometheus.CounterVec
	publishLag prometheus.Histogram
}

// New builds a relay over the buy plane's store (the outbox lives there).
func New(st *store.Store, opts Options) *Relay {
	defaults.Fill(&opts.Interval, 50*time.Millisecond)
	defaults.Fill(&opts.StandbyInterval, 2*time.Second)
	defaults.Fill(&opts.Batch, 100)
	defaults.Fill(&opts.MaxBackoff, 5*time.Second)
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Relay{
		store: st, opts: opts, handlers: map[string]handle{},
		activeG: prometheus.NewGauge(prometheus.GaugeOpts{Name: "encore_outbox_relay_active",
			Help: "1 when this process holds the relay lease."}),
		published: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_outbox_published_total",
			Help: "Outbox rows published, by topic."}, []string{"topic"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_outbox_failures_total",
			Help: "Handler failures, by topic (the row is retried)."}, []string{"topic"}),
		publishLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "encore_outbox_publish_lag_seconds",
			Help: "From a row's commit to its publication.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}),
	}
}

// Register adds the relay's metrics to reg. The outbox's age is read from
// the database at each scrape, not left to the relay's loop: a relay that
// stopped or hangs must not report the last age it saw, or the alert on a
// stale outbox would never fire when it matters most.
func (r *Relay) Register(reg prometheus.Registerer) {
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "encore_outbox_oldest_unpublished_age_seconds",
		Help: "Age of the oldest unpublished outbox row (0 when none): the relay's freshness, read at each scrape."},
		func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			a, err := r.store.Jobs.OldestUnpublishedAge(ctx)
			if err != nil {
				return math.NaN() // unknown, never a reassuring zero
			}
			return a.Seconds()
		})
	reg.MustRegister(age, r.activeG, r.published, r.failures, r.publishLag)
}

// Handle sets the handler of a topic (replacing any earlier one).
func (r *Relay) Handle(topic string, h Handler) {
	r.set(topic, func(ctx context.Context, row Row, _ map[string]bool) error { return h(ctx, row) })
}

// HandleEffects sets the handler of a topic whose rows ask for keyed
// effects (replacing any earlier one): each drain does each key once.
func (r *Relay) HandleEffects(topic string, f Effects) {
	r.set(topic, func(ctx context.Context, row Row, done map[string]bool) error {
		effects, err := f(row)
		if err != nil {
			return err
		}
		for _, e := range effects {
			if done[e.Key] {
				continue
			}
			if err := e.Do(ctx); err != nil {
				return err
			}
			done[e.Key] = true
		}
		return nil
	})
}

func (r *Relay) set(topic string, h handle) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers[topic] = h
}

func (r *Relay) topics() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.handlers))
	for t := range r.handlers {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

func (r *Relay) handler(topic string) handle {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.handlers[topic]
}

// Active reports whether this relay currently holds the lease.
func (r *Relay) Active() bool { return r.active.Load() }

func (r *Relay) setActive(on bool) {
	r.active.Store(on)
	if on {
		r.activeG.Set(1)
	} else {
		r.activeG.Set(0)
	}
}

// Run relays until ctx ends: as the active relay when it gets the lease, as
// a standby (retrying every StandbyInterval) otherwise.
func (r *Relay) Run(ctx context.Context) {
	var lease *store.RelayLease
	defer func() {
		if lease != nil {
			lease.Release()
		}
		r.setActive(false)
	}()
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		pause := r.opts.Interval
		if lease == nil {
			l, err := r.store.Jobs.AcquireRelayLease(ctx)
			if err != nil && ctx.Err() == nil {
				r.opts.Log.Warn("outbox: acquire relay lease", "err", err)
			}
			if l == nil {
				r.setActive(false)
				ctxsleep.Sleep(ctx, r.opts.StandbyInterval)
				continue
			}
			lease = l
			r.setActive(true)
			r.opts.Log.Info("outbox: this process is the active relay")
		}
		n, err := r.drain(ctx, lease)
		switch {
		case err != nil && ctx.Err() == nil:
			r.opts.Log.Warn("outbox: relay", "err", err)
			if _, isHandler := err.(*handlerError); !isHandler {
				// The connection (and perhaps the lease) is in doubt.
				lease.Release()
				lease = nil
				r.setActive(false)
			}
			backoff = min(max(2*backoff, r.opts.Interval), r.opts.MaxBackoff)
			pause = backoff
		case n == r.opts.Batch:
			backoff, pause = 0, 0 // more waiting: go on at once
		default:
			backoff = 0
		}
		ctxsleep.Sleep(ctx, pause)
	}
}

type handlerError struct {
	row Row
	err error
}

func (e *handlerError) Error() string {
	return fmt.Sprintf("outbox: %s row %d: %v", e.row.Topic, e.row.ID, e.err)
}

func (e *handlerError) Unwrap() error { return e.err }

// drain publishes one batch in ID order and returns how many rows went out.
// It stops at the first failing row, which keeps the order. The rows that
// went out are marked together once the batch ends (or fails): a relay that
// dies before the mark publishes them again, which every handler absorbs
// (delivery is at least once, a row at a time or a batch at a time).
func (r *Relay) drain(ctx context.Context, lease *store.RelayLease) (int, error) {
	topics := r.topics()
	if len(topics) == 0 {
		return 0, nil
	}
	rows, err := lease.Unpublished(ctx, topics, r.opts.Batch)
	if err != nil {
		return 0, err
	}
	published := make([]int64, 0, len(rows))
	done := map[string]bool{}
	mark := func(err error) (int, error) {
		if merr := lease.MarkPublished(ctx, published); merr != nil {
			return 0, errors.Join(err, merr)
		}
		for _, sr := range rows[:len(published)] {
			r.published.WithLabelValues(sr.Topic).Inc()
		}
		return len(published), err
	}
	for _, sr := range rows {
		row := Row{ID: sr.ID, Topic: sr.Topic, Key: sr.Key, Payload: sr.Payload, CreatedAt: sr.CreatedAt}
		h := r.handler(row.Topic)
		if h == nil {
			return mark(nil) // unregistered meanwhile; it waits
		}
		if err := h(ctx, row, done); err != nil {
			r.failures.WithLabelValues(row.Topic).Inc()
			return mark(&handlerError{row: row, err: err})
		}
		published = append(published, row.ID)
		r.publishLag.Observe(time.Since(row.CreatedAt).Seconds())
	}
	return mark(nil)
}

// RunOnce publishes what is waiting if this relay can take the lease, and
// reports how many rows it published and whether it was active. For tests
// and tools; Run is the loop.
func (r *Relay) RunOnce(ctx context.Context) (int, bool, error) {
	lease, err := r.store.Jobs.AcquireRelayLease(ctx)
	if err != nil || lease == nil {
		return 0, false, err
	}
	defer lease.Release()
	total := 0
	for {
		n, err := r.drain(ctx, lease)
		total += n
		if err != nil || n < r.opts.Batch {
			return total, true, err
		}
	}
}

// InventoryChanged adapts a section invalidation (seatmap.Cache.Invalidate)
// to the inventory.changed payloads: {event_id, section_id}, one section, and
// {event_id, section_ids}, every section of a hold. Each section is an
// effect keyed by event and section, so a drain invalidates a section once
// however many of its holds took from it; a failure repeats the row, which
// is harmless since each invalidation is idempotent.
func InventoryChanged(invalidate func(ctx context.Context, eventID, sectionID string) error) Effects {
	return func(row Row) ([]Effect, error) {
		var p struct {
			EventID    string   `json:"event_id"`
			SectionID  string   `json:"section_id"`
			SectionIDs []string `json:"section_ids"`
		}
		err := json.Unmarshal(row.Payload, &p)
		sections := p.SectionIDs
		if p.SectionID != "" {
			sections = append([]string{p.SectionID}, sections...)
		}
		if err != nil || p.EventID == "" || len(sections) == 0 || slices.Contains(sections, "") {
			return nil, fmt.Errorf("malformed inventory.changed payload %s", row.Payload)
		}
		effects := make([]Effect, len(sections))
		for i, sec := range sections {
			effects[i] = Effect{Key: p.EventID + "\x00" + sec,
				Do: func(ctx context.Context) error { return invalidate(ctx, p.EventID, sec) }}
		}
		return effects, nil
	}
}
