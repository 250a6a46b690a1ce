package waitingroom

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/encore-tickets/encore/backpressure"
	"github.com/encore-tickets/encore/controls"
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
type Controller struct {
	Min, Max      int
	Step          int           // additive increase (default: a tenth of the base capacity, at least 1)
	Decrease      float64       // multiplicative decrease (0.75)
	Headroom      float64       // "comfortable" fraction of each target (0.5)
	LatencyTarget time.Duration // checkout latency target (750ms)
	ErrorTarget   float64       // checkout and payment error rate target (0.2)
	Period        time.Duration // how often to adjust (10s, as the design's 7.7 sets)
}

func (c *Controller) defaults(base int, o Options) {
	if c.Min <= 0 {
		c.Min = o.MinCapacity
	}
	if c.Max <= 0 {
		c.Max = o.MaxCapacity
	}
	if c.Step <= 0 {
		c.Step = max(base/10, 1)
	}
	if c.Decrease <= 0 || c.Decrease >= 1 {
		c.Decrease = 0.75
	}
	if c.Headroom <= 0 || c.Headroom > 1 {
		c.Headroom = 0.5
	}
	if c.LatencyTarget <= 0 {
		c.LatencyTarget = 750 * time.Millisecond
	}
	if c.ErrorTarget <= 0 {
		c.ErrorTarget = 0.2
	}
	if c.Period <= 0 {
		c.Period = 10 * time.Second
	}
}

// Next applies the rule once.
func (c Controller) Next(capacity int, s Signals, full bool) int {
	over := (s.CheckoutLatency > 0 && s.CheckoutLatency > c.LatencyTarget) ||
		s.CheckoutErrorRate > c.ErrorTarget || s.PaymentErrorRate > c.ErrorTarget
	if over {
		return max(c.Min, int(math.Floor(float64(capacity)*c.Decrease)))
	}
	comfortable := float64(s.CheckoutLatency) < c.Headroom*float64(c.LatencyTarget) &&
		s.CheckoutErrorRate < c.Headroom*c.ErrorTarget &&
		s.PaymentErrorRate < c.Headroom*c.ErrorTarget
	if comfortable && full {
		return min(c.Max, capacity+c.Step)
	}
	return min(max(capacity, c.Min), c.Max)
}

// capacityState is one event's capacity as this admitter steers it.
type capacityState struct {
	capacity   int
	version    int64 // the operator's dials it was derived from
	full       bool
	lastAdjust time.Time
}

// SetAdaptive turns the adaptive mode on with the given controller and
// signal source (nil: the controller's defaults, or no signals at all).
func (r *Room) SetAdaptive(c *Controller, src SignalSource) {
	r.controllerMu.Lock()
	defer r.controllerMu.Unlock()
	if c == nil {
		c = &Controller{}
	}
	c.defaults(r.opts.Capacity, r.opts)
	r.controller = c
	r.signals = src
	r.opts.Adaptive = true
}

// SetControls makes the room follow the operator's dials: the admission
// capacity and its adaptive bounds, and admission paused.
func (r *Room) SetControls(w *controls.Watcher) { r.dials = w }

// bounds are the event's capacity (the operator's, or the configured one)
// and the band the adaptive mode may move it within.
func (r *Room) bounds(eventID string) (d controls.Dials, base, lo, hi int) {
	d = r.dials.For(eventID)
	lo, hi = r.opts.MinCapacity, r.opts.MaxCapacity
	r.controllerMu.Lock()
	if r.controller != nil {
		lo, hi = r.controller.Min, r.controller.Max
	}
	r.controllerMu.Unlock()
	base, lo, hi = d.Capacity(r.opts.Capacity, lo, hi)
	return d, base, lo, hi
}

// capacity is the capacity in force for the event. Without the adaptive
// mode it is the operator's or the configured capacity. With it, it is
// the controller's last value, kept in Redis beside the event's line so a
// new admitter (another process taking the lease) carries on from it
// rather than starting over; a change of the operator's dials starts the
// controller again from the operator's capacity.
func (r *Room) capacity(ctx context.Context, eventID string) int {
	d, base, lo, hi := r.bounds(eventID)
	r.controllerMu.Lock()
	adaptive := r.opts.Adaptive && r.controller != nil
	st := r.controllers[eventID]
	r.controllerMu.Unlock()
	if !adaptive {
		return base
	}
	if st == nil || st.version != d.Version {
		st = &capacityState{capacity: base, version: d.Version, lastAdjust: time.Now()}
		if v, err := r.rdb.HMGet(ctx, r.keys(eventID).state, "acap", "acapv").Result(); err == nil && len(v) == 2 {
			c, _ := strconv.Atoi(fmt.Sprint(v[0]))
			ver, _ := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
			if c > 0 && v[1] != nil && ver == d.Version {
				st.capacity = c
			}
		}
		r.controllerMu.Lock()
		r.controllers[eventID] = st
		r.controllerMu.Unlock()
	}
	r.controllerMu.Lock()
	defer r.controllerMu.Unlock()
	st.capacity = min(max(st.capacity, lo), hi)
	return st.capacity
}

// observe feeds a tick's result to the adaptive mode and, once a period,
// moves capacity within the operator's bounds.
func (r *Room) observe(ctx context.Context, eventID string, res TickResult, capacity int) {
	r.controllerMu.Lock()
	st := r.controllers[eventID]
	if st == nil || !r.opts.Adaptive || r.controller == nil {
		r.controllerMu.Unlock()
		return
	}
	if float64(res.Active) >= 0.9*float64(capacity) {
		st.full = true
	}
	c, src := *r.controller, r.signals
	due := time.Since(st.lastAdjust) >= c.Period
	r.controllerMu.Unlock()
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
			r.opts.Log.Warn("waiting room: adaptive signals", "err", err)
			s = Signals{}
		}
	}
	_, _, lo, hi := r.bounds(eventID)
	c.Min, c.Max = lo, hi
	r.controllerMu.Lock()
	next := c.Next(st.capacity, s, st.full)
	if next != st.capacity {
		r.opts.Log.Info("waiting room: capacity adjusted", "event", eventID, "from", st.capacity, "to", next,
			"checkout_latency", s.CheckoutLatency, "checkout_error_rate", s.CheckoutErrorRate, "payment_error_rate", s.PaymentErrorRate)
	}
	st.capacity, st.full, st.lastAdjust = next, false, time.Now()
	version := st.version
	r.controllerMu.Unlock()
	// Keep the controller's state where the next admitter finds it.
	if err := r.rdb.HSet(ctx, r.keys(eventID).state, "acap", next, "acapv", version).Err(); err != nil {
		r.opts.Log.Debug("waiting room: save adaptive capacity", "err", err)
	}
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
