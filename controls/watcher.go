package controls

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Source reads the dials changed after a sequence number (*store.Store).
type Source interface {
	ControlsChangedSince(ctx context.Context, seq int64) ([]Dials, error)
}

// Watcher keeps this process's copy of every event's dials. Reads are
// lock-cheap map lookups on the hot paths (a hold, an admission tick, a
// seat-map fill); Run keeps the copy fresh.
type Watcher struct {
	src      Source
	interval time.Duration
	log      *slog.Logger

	mu        sync.RWMutex
	dials     map[string]Dials
	seq       int64
	listeners []func(Dials)
	applied   prometheus.Counter
}

// NewWatcher follows src, polling every interval (500ms when zero).
func NewWatcher(src Source, interval time.Duration, log *slog.Logger) *Watcher {
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	if log == nil {
		log = slog.Default()
	}
	return &Watcher{src: src, interval: interval, log: log, dials: map[string]Dials{},
		applied: prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_controls_changes_applied_total",
			Help: "Operator dial changes this process has taken into force."})}
}

// Register adds the watcher's metrics to reg.
func (w *Watcher) Register(reg prometheus.Registerer) { reg.MustRegister(w.applied) }

// For returns the event's dials in force in this process (the defaults for
// an event nobody has touched). A nil watcher answers the defaults, so
// tests and tools that wire no watcher run as configured.
func (w *Watcher) For(eventID string) Dials {
	if w == nil {
		return Defaults(eventID)
	}
	w.mu.RLock()
	d, ok := w.dials[eventID]
	w.mu.RUnlock()
	if !ok {
		return Defaults(eventID)
	}
	return d
}

// OnChange calls f (from the watcher's goroutine) with every changed
// event's dials, after they are in force.
func (w *Watcher) OnChange(f func(Dials)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.listeners = append(w.listeners, f)
}

// Refresh reads the changes since the last one seen, once.
func (w *Watcher) Refresh(ctx context.Context) error {
	w.mu.RLock()
	seq := w.seq
	w.mu.RUnlock()
	changed, err := w.src.ControlsChangedSince(ctx, seq)
	if err != nil {
		return err
	}
	w.mu.Lock()
	var fresh []Dials
	for _, d := range changed {
		if d.Seq <= w.seq {
			continue // a concurrent Refresh applied it
		}
		w.seq = d.Seq
		w.dials[d.EventID] = d
		fresh = append(fresh, d)
	}
	listeners := append([]func(Dials){}, w.listeners...)
	w.mu.Unlock()
	for _, d := range fresh {
		w.applied.Inc()
		for _, f := range listeners {
			f(d)
		}
	}
	return nil
}

// Run polls until ctx ends. A failed poll keeps the dials last seen (the
// database being away must not reset an operator's pause) and is retried
// at the next interval.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	failing := false
	for {
		if err := w.Refresh(ctx); err != nil && ctx.Err() == nil {
			if !failing {
				w.log.Warn("controls: cannot read the operator's dials, keeping the last seen", "err", err)
			}
			failing = true
		} else {
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
