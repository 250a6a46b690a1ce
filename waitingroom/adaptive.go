package waitingroom

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/encore-tickets/encore/store"
)

// Signals are what the adaptive mode steers by, measured over the last
// period. A zero field means "not measured" and never moves capacity.
type Signals struct {
	CheckoutLatency  time.Duration // mean duration of hold and checkout requests
	WorkflowStartLag time.Duration // mean delay from a committed hold to its booking workflow's start
	PaymentErrorRate float64       // share of payment attempts that failed (0..1)
}

// SignalSource measures Signals; each call covers the time since the last.
type SignalSource interface {
	Signals(ctx context.Context) (Signals, error)
}

// Controller is the adaptive admission rule, an AIMD loop run by the elected
// admitter of each event every Period:
//
//	overloaded := latency > LatencyTarget || lag > LagTarget || errors > ErrorTarget
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
	LagTarget     time.Duration // workflow-start lag target (2s)
	ErrorTarget   float64       // payment error rate target (0.2)
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
	if c.LagTarget <= 0 {
		c.LagTarget = 2 * time.Second
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
		(s.WorkflowStartLag > 0 && s.WorkflowStartLag > c.LagTarget) ||
		(s.PaymentErrorRate > 0 && s.PaymentErrorRate > c.ErrorTarget)
	if over {
		return max(c.Min, int(math.Floor(float64(capacity)*c.Decrease)))
	}
	comfortable := float64(s.CheckoutLatency) < c.Headroom*float64(c.LatencyTarget) &&
		float64(s.WorkflowStartLag) < c.Headroom*float64(c.LagTarget) &&
		s.PaymentErrorRate < c.Headroom*c.ErrorTarget
	if comfortable && full {
		return min(c.Max, capacity+c.Step)
	}
	return min(max(capacity, c.Min), c.Max)
}

// capacityState is one event's capacity as this admitter steers it.
type capacityState struct {
	capacity   int
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

// capacity is the capacity in force for the event.
func (r *Room) capacity(eventID string) int {
	r.controllerMu.Lock()
	defer r.controllerMu.Unlock()
	st := r.controllers[eventID]
	if st == nil {
		st = &capacityState{capacity: r.opts.Capacity, lastAdjust: time.Now()}
		r.controllers[eventID] = st
	}
	return st.capacity
}

// observe feeds a tick's result to the adaptive mode and, once a period,
// moves capacity.
func (r *Room) observe(eventID string, res TickResult, capacity int) {
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
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var err error
		s, err = src.Signals(ctx)
		cancel()
		if err != nil {
			r.opts.Log.Warn("waiting room: adaptive signals", "err", err)
			s = Signals{}
		}
	}
	r.controllerMu.Lock()
	defer r.controllerMu.Unlock()
	next := c.Next(st.capacity, s, st.full)
	if next != st.capacity {
		r.opts.Log.Info("waiting room: capacity adjusted", "event", eventID, "from", st.capacity, "to", next,
			"checkout_latency", s.CheckoutLatency, "workflow_start_lag", s.WorkflowStartLag, "payment_error_rate", s.PaymentErrorRate)
	}
	st.capacity, st.full, st.lastAdjust = next, false, time.Now()
}

// GathererSignals reads the signals from Prometheus metrics of this process
// (the elected admitter's): histograms' sum and count and counters, as
// differences since the previous call. Metrics that do not exist yet read
// as "not measured".
type GathererSignals struct {
	Gatherer prometheus.Gatherer
	// LatencyHistograms are averaged together for checkout latency.
	LatencyHistograms []string
	// LagHistogram is the workflow-start lag.
	LagHistogram string
	// PaymentCounter counts payment attempts with a label ResultLabel; the
	// values in ErrorResults are failures.
	PaymentCounter string
	ResultLabel    string
	ErrorResults   []string

	mu   sync.Mutex
	last map[string]float64
}

// DefaultSignals reads Encore's standard metric names from g.
func DefaultSignals(g prometheus.Gatherer) *GathererSignals {
	return &GathererSignals{Gatherer: g,
		LatencyHistograms: []string{"encore_hold_duration_seconds", "encore_checkout_duration_seconds"},
		LagHistogram:      "encore_workflow_start_lag_seconds",
		PaymentCounter:    "encore_payments_total", ResultLabel: "result",
		ErrorResults: []string{"error", "failed", "declined", "timeout"},
	}
}

// Signals implements SignalSource.
func (g *GathererSignals) Signals(context.Context) (Signals, error) {
	fams, err := g.Gatherer.Gather()
	if err != nil {
		return Signals{}, err
	}
	cur := map[string]float64{}
	isErr := map[string]bool{}
	for _, v := range g.ErrorResults {
		isErr[v] = true
	}
	lat := map[string]bool{}
	for _, n := range g.LatencyHistograms {
		lat[n] = true
	}
	for _, f := range fams {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			switch {
			case lat[name] && m.GetHistogram() != nil:
				cur["lat_sum"] += m.GetHistogram().GetSampleSum()
				cur["lat_n"] += float64(m.GetHistogram().GetSampleCount())
			case name == g.LagHistogram && m.GetHistogram() != nil:
				cur["lag_sum"] += m.GetHistogram().GetSampleSum()
				cur["lag_n"] += float64(m.GetHistogram().GetSampleCount())
			case name == g.PaymentCounter && m.GetCounter() != nil:
				cur["pay_n"] += m.GetCounter().GetValue()
				if isErr[labelValue(m, g.ResultLabel)] {
					cur["pay_err"] += m.GetCounter().GetValue()
				}
			}
		}
	}
	g.mu.Lock()
	prev := g.last
	g.last = cur
	g.mu.Unlock()
	if prev == nil {
		return Signals{}, nil
	}
	d := func(k string) float64 { return max(cur[k]-prev[k], 0) }
	var s Signals
	if n := d("lat_n"); n > 0 {
		s.CheckoutLatency = time.Duration(d("lat_sum") / n * float64(time.Second))
	}
	if n := d("lag_n"); n > 0 {
		s.WorkflowStartLag = time.Duration(d("lag_sum") / n * float64(time.Second))
	}
	if n := d("pay_n"); n > 0 {
		s.PaymentErrorRate = d("pay_err") / n
	}
	return s, nil
}

// SagaSource reads the saga's health from the database.
type SagaSource interface {
	SagaHealth(ctx context.Context, window time.Duration) (store.SagaHealth, error)
}

// StandardSignals is the adaptive mode's default source: checkout latency
// from this process's hold-duration histogram (a hold includes starting its
// booking workflow), the workflow-start lag as the age of the oldest booking
// workflow start still waiting in the outbox, and the payment error rate
// from payment outcomes in the database over the last Window.
type StandardSignals struct {
	Metrics *GathererSignals
	Saga    SagaSource
	Window  time.Duration // 1m
}

// NewStandardSignals reads g and the database behind saga.
func NewStandardSignals(g prometheus.Gatherer, saga SagaSource) *StandardSignals {
	m := DefaultSignals(g)
	m.LagHistogram, m.PaymentCounter = "", ""
	return &StandardSignals{Metrics: m, Saga: saga, Window: time.Minute}
}

// Signals implements SignalSource.
func (s *StandardSignals) Signals(ctx context.Context) (Signals, error) {
	var out Signals
	if s.Metrics != nil {
		m, err := s.Metrics.Signals(ctx)
		if err != nil {
			return Signals{}, err
		}
		out = m
	}
	if s.Saga != nil {
		h, err := s.Saga.SagaHealth(ctx, s.Window)
		if err != nil {
			return Signals{}, err
		}
		out.WorkflowStartLag = h.OldestUnstarted
		if h.PaymentsSettled > 0 {
			out.PaymentErrorRate = float64(h.PaymentsFailed) / float64(h.PaymentsSettled)
		}
	}
	return out, nil
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
