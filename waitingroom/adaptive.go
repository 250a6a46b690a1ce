package waitingroom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/backpressure"
	"github.com/encore-tickets/encore/controls"
	"github.com/encore-tickets/encore/internal/defaults"
	"github.com/encore-tickets/encore/store"
)

// Signals are what the adaptive mode steers by, measured over the last
// period. A zero field means "not measured" and never moves capacity.
type Signals struct {
	CheckoutLatency   time.Duration // mean time of a checkout's call into the booking saga
	CheckoutErrorRate float64       // share of those calls that got no answer from the saga (0..1)
	PaymentErrorRate  float64       // share of settled payments that failed (0..1)
}

// SignalSource measures Signals; each call covers the time since the last.
type SignalSource interface {
	Signals(ctx context.Context) (Signals, error)
}

// Controller is the adaptive admission rule, an AIMD loop run by the elected
// admitter of each event every Period:
//
//	overloaded := latency > LatencyTarget || either error rate > ErrorTarget
//	comfortable := every measured signal < Headroom x its target
//	if overloaded:                         capacity = max(Min, floor(capacity x Decrease))
//	else if comfortable and room is full:  capacity = min(Max, capacity + Step)
//	else:                                  capacity unchanged
//
// "Room is full" means active leases reached 90% of capacity during the
// period: without demand there is nothing to learn, so capacity does not
// creep up while idle. Decrease is multiplicative and increase additive, so
// the room backs off fast when checkout, Temporal or the payment provider
// struggle, and probes upward slowly when they cope. Admission by capacity is
// already self-correcting (slow checkouts free slots slowly); the controller
// only moves the ceiling.
//
// Recovery (NextAfter): a run of at most Blip overloaded periods that ends
// in a comfortable period restores the capacity the run began with. A
// killed process restarted, a failover or a provider's blip is over within
// seconds, and the additive climb back would take minutes (in a chaos
// rehearsal with a break every 9 s, capacity never climbed back at all). A
// restore followed at once by overload was wrong, the overload being real:
// the next run climbs back additively.
type Controller struct {
	Min, Max      int
	Step          int           // additive increase (default: a tenth of the base capacity, at least 1)
	Decrease      float64       // multiplicative decrease (0.75)
	Headroom      float64       // "comfortable" fraction of each target (0.5)
	LatencyTarget time.Duration // checkout latency target (750ms)
	ErrorTarget   float64       // checkout and payment error rate target (0.2)
	Period        time.Duration // how often to adjust (10s, as the design's 7.7 sets)
	Blip          int           // longest run of overloaded periods that recovery restores from (2)
}

func (c *Controller) defaults(base, lo, hi int) {
	defaults.Fill(&c.Min, lo)
	defaults.Fill(&c.Max, hi)
	defaults.Fill(&c.Step, max(base/10, 1))
	if c.Decrease <= 0 || c.Decrease >= 1 {
		c.Decrease = 0.75
	}
	if c.Headroom <= 0 || c.Headroom > 1 {
		c.Headroom = 0.5
	}
	defaults.Fill(&c.LatencyTarget, 750*time.Millisecond)
	defaults.Fill(&c.ErrorTarget, 0.2)
	defaults.Fill(&c.Period, 10*time.Second)
	defaults.Fill(&c.Blip, 2)
}

// Next applies the rule once.
func (c Controller) Next(capacity int, s Signals, full bool) int {
	if c.overloaded(s) {
		return max(c.Min, int(math.Floor(float64(capacity)*c.Decrease)))
	}
	if c.comfortable(s) && full {
		return min(c.Max, capacity+c.Step)
	}
	return min(max(capacity, c.Min), c.Max)
}

func (c Controller) overloaded(s Signals) bool {
	return (s.CheckoutLatency > 0 && s.CheckoutLatency > c.LatencyTarget) ||
		s.CheckoutErrorRate > c.ErrorTarget || s.PaymentErrorRate > c.ErrorTarget
}

func (c Controller) comfortable(s Signals) bool {
	return float64(s.CheckoutLatency) < c.Headroom*float64(c.LatencyTarget) &&
		s.CheckoutErrorRate < c.Headroom*c.ErrorTarget &&
		s.PaymentErrorRate < c.Headroom*c.ErrorTarget
}

// Recovery is what the controller remembers between periods for its
// recovery rule (Controller).
type Recovery struct {
	From     int  // capacity when the run of overloaded periods in progress began; 0: none
	Periods  int  // overloaded periods in that run
	Restored bool // the last period restored capacity
	Doubted  bool // a restore was followed at once by overload: the run in progress is not restored from
}

// NextAfter applies the rule once, recovery included, and returns the
// memory for the next period.
func (c Controller) NextAfter(capacity int, s Signals, full bool, r Recovery) (int, Recovery) {
	restored := r.Restored
	r.Restored = false
	if c.overloaded(s) {
		if r.From == 0 {
			r.From, r.Periods, r.Doubted = capacity, 0, restored
		}
		r.Periods++
		return c.Next(capacity, s, full), r
	}
	if r.From > 0 {
		from, blip, doubted := r.From, r.Periods <= c.Blip, r.Doubted
		r = Recovery{}
		if blip && !doubted && c.comfortable(s) {
			r.Restored = true
			return min(max(from, c.Min, capacity), c.Max), r
		}
	}
	return c.Next(capacity, s, full), r
}

// Capacity is the admission capacity of every metered event: the
// configured one, the operator's dials over it (capacity, adaptive bounds,
// admission paused) and, in the adaptive mode, the Controller's steering
// within those bounds. It is apart from the Admitter, which only asks it
// for the number, because the operator's API asks it too, and because its
// state (the controller's last value per event) outlives any one admitter:
// it is kept in Redis beside the event's line.
type Capacity struct {
	rdb  redis.UniversalClient
	keys keyspace
	log  *slog.Logger

	base, lo, hi int // the configured capacity and adaptive band (Options)

	mu         sync.Mutex
	adaptive   bool
	controller *Controller
	states     map[string]*capacityState // event -> this admitter's steering
	signals    SignalSource
	dials      *controls.Watcher
}

func newCapacity(rdb redis.UniversalClient, keys keyspace, opts Options) *Capacity {
	return &Capacity{rdb: rdb, keys: keys, log: opts.Log, base: opts.Capacity, lo: opts.MinCapacity, hi: opts.MaxCapacity,
		states: map[string]*capacityState{}}
}

// capacityState is one event's capacity as this admitter steers it.
type capacityState struct {
	capacity   int
	recovery   Recovery
	version    int64 // the operator's dials it was derived from
	full       bool
	lastAdjust time.Time
}

// SetAdaptive turns the adaptive mode on with the given controller and
// signal source (nil: the controller's defaults, or no signals at all).
func (c *Capacity) SetAdaptive(ctl *Controller, src SignalSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ctl == nil {
		ctl = &Controller{}
	}
	ctl.defaults(c.base, c.lo, c.hi)
	c.controller = ctl
	c.signals = src
	c.adaptive = true
}

// isAdaptive reports whether the adaptive mode is on.
func (c *Capacity) isAdaptive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adaptive
}

// SetControls makes the room follow the operator's dials: the admission
// capacity and its adaptive bounds, and admission paused.
func (c *Capacity) SetControls(w *controls.Watcher) { c.dials = w }

// paused reports whether the operator paused the event's admission.
func (c *Capacity) paused(eventID string) bool { return c.dials.For(eventID).AdmissionPaused }

// InForce is the admission capacity the event's admitter last used (0
// while admission is paused), or what this process would use when no
// admitter has ticked yet.
func (c *Capacity) InForce(ctx context.Context, eventID string) (int, error) {
	v, err := c.rdb.HGet(ctx, c.keys.event(eventID).state, "cap").Int()
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, redis.Nil) {
		return 0, unavailable(err)
	}
	if c.paused(eventID) {
		return 0, nil
	}
	return c.current(ctx, eventID), nil
}

// bounds are the event's capacity (the operator's, or the configured one)
// and the band the adaptive mode may move it within.
func (c *Capacity) bounds(eventID string) (d controls.Dials, base, lo, hi int) {
	d = c.dials.For(eventID)
	lo, hi = c.lo, c.hi
	c.mu.Lock()
	if c.controller != nil {
		lo, hi = c.controller.Min, c.controller.Max
	}
	c.mu.Unlock()
	base, lo, hi = d.Capacity(c.base, lo, hi)
	return d, base, lo, hi
}

// current is the capacity in force for the event. Without the adaptive
// mode it is the operator's or the configured capacity. With it, it is
// the controller's last value, kept in Redis beside the event's line so a
// new admitter (another process taking the lease) carries on from it
// rather than starting over; a change of the operator's dials starts the
// controller again from the operator's capacity.
func (c *Capacity) current(ctx context.Context, eventID string) int {
	d, base, lo, hi := c.bounds(eventID)
	c.mu.Lock()
	adaptive := c.adaptive && c.controller != nil
	st := c.states[eventID]
	c.mu.Unlock()
	if !adaptive {
		return base
	}
	if st == nil || st.version != d.Version {
		st = &capacityState{capacity: base, version: d.Version, lastAdjust: time.Now()}
		if v, err := c.rdb.HMGet(ctx, c.keys.event(eventID).state, "acap", "acapv", "arec").Result(); err == nil && len(v) == 3 {
			n, _ := strconv.Atoi(fmt.Sprint(v[0]))
			ver, _ := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
			if n > 0 && v[1] != nil && ver == d.Version {
				st.capacity = n
				st.recovery = parseRecovery(fmt.Sprint(v[2]))
			}
		}
		c.mu.Lock()
		c.states[eventID] = st
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st.capacity = min(max(st.capacity, lo), hi)
	return st.capacity
}

// observe feeds a tick's result to the adaptive mode and, once a period,
// moves capacity within the operator's bounds.
func (c *Capacity) observe(ctx context.Context, eventID string, res TickResult, capacity int) {
	c.mu.Lock()
	st := c.states[eventID]
	if st == nil || !c.adaptive || c.controller == nil {
		c.mu.Unlock()
		return
	}
	if float64(res.Active) >= 0.9*float64(capacity) {
		st.full = true
	}
	ctl, src := *c.controller, c.signals
	due := time.Since(st.lastAdjust) >= ctl.Period
	c.mu.Unlock()
	if !due {
		return
	}
	var s Signals
	if src != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var err error
		s, err = src.Signals(sctx)
		cancel()
		if err != nil {
			c.log.Warn("waiting room: adaptive signals", "err", err)
			s = Signals{}
		}
	}
	_, _, lo, hi := c.bounds(eventID)
	ctl.Min, ctl.Max = lo, hi
	c.mu.Lock()
	next, rec := ctl.NextAfter(st.capacity, s, st.full, st.recovery)
	if next != st.capacity {
		c.log.Info("waiting room: capacity adjusted", "event", eventID, "from", st.capacity, "to", next, "restored", rec.Restored,
			"checkout_latency", s.CheckoutLatency, "checkout_error_rate", s.CheckoutErrorRate, "payment_error_rate", s.PaymentErrorRate)
	}
	st.capacity, st.recovery, st.full, st.lastAdjust = next, rec, false, time.Now()
	version := st.version
	c.mu.Unlock()
	// Keep the controller's state where the next admitter finds it.
	if err := c.rdb.HSet(ctx, c.keys.event(eventID).state, "acap", next, "acapv", version, "arec", rec.String()).Err(); err != nil {
		c.log.Debug("waiting room: save adaptive capacity", "err", err)
	}
}

// String is the memory as it is kept in Redis: from, periods and two flags.
func (r Recovery) String() string {
	return fmt.Sprintf("%d:%d:%t:%t", r.From, r.Periods, r.Restored, r.Doubted)
}

// parseRecovery reads String's form; anything else is no memory.
func parseRecovery(v string) Recovery {
	var r Recovery
	if _, err := fmt.Sscanf(v, "%d:%d:%t:%t", &r.From, &r.Periods, &r.Restored, &r.Doubted); err != nil {
		return Recovery{}
	}
	return r
}

// SagaLoad is the booking saga's load over every process
// (backpressure.Monitor).
type SagaLoad interface {
	Load() backpressure.Load
}

// PaymentSource reads payment outcomes from the database.
type PaymentSource interface {
	PaymentHealth(ctx context.Context, window time.Duration) (store.PaymentHealth, error)
}

// StandardSignals is the adaptive mode's source: checkout latency and
// errors from the load every process shares (so the elected admitter steers
// by the whole deployment, wherever it runs), and the payment error rate
// from payment outcomes in the database over the last Window.
type StandardSignals struct {
	Saga     SagaLoad
	Payments PaymentSource
	Window   time.Duration // 1m
}

// Signals implements SignalSource.
func (s *StandardSignals) Signals(ctx context.Context) (Signals, error) {
	var out Signals
	if s.Saga != nil {
		l := s.Saga.Load()
		out.CheckoutLatency, out.CheckoutErrorRate = l.MeanLatency(), l.ErrorRate()
	}
	if s.Payments != nil {
		w := s.Window
		if w <= 0 {
			w = time.Minute
		}
		h, err := s.Payments.PaymentHealth(ctx, w)
		if err != nil {
			return Signals{}, err
		}
		if h.Settled > 0 {
			out.PaymentErrorRate = float64(h.Failed) / float64(h.Settled)
		}
	}
	return out, nil
}
