package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// repairGrace is how old a payment must be before reconciliation repairs
// it: younger ones may still be in their saga's hands (a compensation
// voiding or refunding it right now).
const repairGrace = 15 * time.Minute

// webhookGrace is how long a stored provider event may wait for its
// delivery before reconciliation signals it again.
const webhookGrace = time.Minute

func (a *Booking) grace() time.Duration {
	if a.RepairGrace > 0 {
		return a.RepairGrace
	}
	if a.RepairGrace < 0 {
		return 0
	}
	return repairGrace
}

// Metrics are the saga's indicators published from the worker that runs
// it: checkout to PAID, and reconciliation's and the scheduled audit's
// findings.
type Metrics struct {
	mismatches   *prometheus.GaugeVec
	repairs      *prometheus.CounterVec
	lastRun      prometheus.Gauge
	violations   *prometheus.GaugeVec
	noTickets    prometheus.Gauge
	oldestOpen   prometheus.Gauge
	auditLastRun prometheus.Gauge
	// checkoutToPaid is observed where a booking becomes PAID.
	checkoutToPaid prometheus.Histogram
}

// NewMetrics creates reconciliation's and the audit's metrics on reg; set
// them as Activities.Metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		mismatches: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "encore_reconcile_mismatches",
			Help: "Broken payment states the last reconciliation found, by kind (other: reported only, for staff)."}, []string{"kind"}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_reconcile_repairs_total",
			Help: "Repairs reconciliation made, by kind."}, []string{"kind"}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "encore_reconcile_last_run_timestamp_seconds",
			Help: "When reconciliation last finished matching payments (Unix seconds)."}),
		violations: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "encore_audit_violations",
			Help: "Inventory rules broken at the last scheduled audit, by rule (double_sale: a seat with two live owners)."}, []string{"rule"}),
		noTickets: prometheus.NewGauge(prometheus.GaugeOpts{Name: "encore_audit_paid_without_tickets",
			Help: "PAID bookings with seats still without tickets ten minutes after payment (refreshed every 15s by the worker)."}),
		oldestOpen: prometheus.NewGauge(prometheus.GaugeOpts{Name: "encore_saga_oldest_open_age_seconds",
			Help: "Age of the oldest checkout whose payment is not settled yet: pending, awaiting the fan, or authorised (refreshed every 15s by the worker)."}),
		auditLastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "encore_audit_last_run_timestamp_seconds",
			Help: "When the scheduled audit last ran (Unix seconds)."}),
		checkoutToPaid: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "encore_checkout_to_paid_seconds",
			Help:    "Time from a booking's checkout to its sale being confirmed PAID.",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 12)}),
	}
	for _, k := range append(vocab.RepairKinds, "other") {
		m.mismatches.WithLabelValues(string(k))
		m.repairs.WithLabelValues(string(k))
	}
	reg.MustRegister(m.mismatches, m.repairs, m.lastRun, m.violations, m.noTickets, m.oldestOpen, m.auditLastRun, m.checkoutToPaid)
	return m
}

// publishReconcile sets the mismatch gauges from a finished match.
func (a *Booking) publishReconcile(rep ReconcileReport) {
	if a.Metrics == nil {
		return
	}
	counts := map[vocab.RepairKind]int{}
	for _, r := range rep.Repairs {
		counts[r.Kind]++
	}
	a.Metrics.mismatches.WithLabelValues(string(vocab.RepairLeakedAuthorisation)).Set(float64(counts[vocab.RepairLeakedAuthorisation]))
	a.Metrics.mismatches.WithLabelValues(string(vocab.RepairOrphanCapture)).Set(float64(counts[vocab.RepairOrphanCapture]))
	a.Metrics.mismatches.WithLabelValues("other").Set(float64(len(rep.Mismatches) - counts[vocab.RepairOrphanCapture]))
	a.Metrics.lastRun.SetToCurrentTime()
}

// FollowSaga refreshes the saga's health gauges (PAID bookings without
// tickets, the oldest open checkout) every interval until ctx ends: the
// scheduled audit runs daily, and these must be fresh while a sale runs.
func (m *Metrics) FollowSaga(ctx context.Context, st *store.Store, every time.Duration) {
	if m == nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		h, err := st.Bookings.SagaHealth(qctx, paidTicketsGrace)
		cancel()
		if err == nil {
			m.noTickets.Set(float64(h.PaidWithoutTickets))
			m.oldestOpen.Set(h.OldestOpen.Seconds())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// publishAudit sets the audit's gauges.
func (a *Booking) publishAudit(rep store.AuditReport, h store.SagaHealth) {
	if a.Metrics == nil {
		return
	}
	for rule, n := range map[string]int64{"double_sale": rep.SeatsWithManyOwners, "sold_without_paid": rep.SoldWithoutPaid,
		"held_past_expiry": rep.HeldPastExpiry, "general_miscounted": rep.GeneralOverCount,
		"room_nights_over_limit": rep.RoomNightsOverLimit, "room_nights_miscounted": rep.RoomNightsMiscounted} {
		a.Metrics.violations.WithLabelValues(rule).Set(float64(n))
	}
	a.Metrics.noTickets.Set(float64(h.PaidWithoutTickets))
	a.Metrics.oldestOpen.Set(h.OldestOpen.Seconds())
	a.Metrics.auditLastRun.SetToCurrentTime()
}

// UndeliveredWebhooks lists the stored provider events that never reached
// their booking (at most 500 a run), as repairs.
func (a *Booking) UndeliveredWebhooks(ctx context.Context) ([]Repair, error) {
	evs, err := a.Store.Bookings.UnsignalledWebhooks(ctx, webhookGrace, 500)
	if err != nil {
		return nil, err
	}
	out := make([]Repair, 0, len(evs))
	for _, w := range evs {
		out = append(out, Repair{Kind: vocab.RepairUndeliveredWebhook, Provider: w.Provider, EventID: w.EventID})
	}
	if a.Metrics != nil {
		a.Metrics.mismatches.WithLabelValues(string(vocab.RepairUndeliveredWebhook)).Set(float64(len(out)))
	}
	return out, nil
}

// Repair puts one broken state right, under the repair's step key, and
// reports whether it changed anything (a state already put right, by the
// saga or an earlier run, is left alone).
func (a *Booking) Repair(ctx context.Context, r Repair) (bool, error) {
	var done bool
	var err error
	switch r.Kind {
	case vocab.RepairLeakedAuthorisation:
		done, err = a.voidLeaked(ctx, r)
	case vocab.RepairOrphanCapture:
		done, err = a.refundOrphan(ctx, r)
	case vocab.RepairUndeliveredWebhook:
		done, err = a.resignal(ctx, r)
	default:
		return false, fmt.Errorf("reconcile: unknown repair %q", r.Kind)
	}
	if err == nil && done {
		if a.Metrics != nil {
			a.Metrics.repairs.WithLabelValues(string(r.Kind)).Inc()
		}
		if a.Log != nil {
			a.Log.Warn("reconciliation repaired", "kind", r.Kind, "intent", r.IntentID, "booking", r.BookingID,
				"event", r.EventID, "amount", r.Amount)
		}
	}
	return done, err
}

func (a *Booking) voidLeaked(ctx context.Context, r Repair) (bool, error) {
	in, err := a.Payments.Retrieve(ctx, r.IntentID)
	if err != nil {
		return false, err
	}
	if in.Status != vocab.IntentRequiresCapture {
		return false, nil
	}
	_, err = a.Payments.Void(ctx, r.StepKey(), r.IntentID)
	return err == nil, err
}

func (a *Booking) refundOrphan(ctx context.Context, r Repair) (bool, error) {
	if r.Amount <= 0 {
		return false, nil
	}
	_, err := a.Payments.RefundAmount(ctx, r.StepKey(), r.IntentID, r.Amount)
	return err == nil, err
}

func (a *Booking) resignal(ctx context.Context, r Repair) (bool, error) {
	if a.Sagas == nil {
		return false, errors.New("reconcile: no Temporal client to signal bookings with")
	}
	w, err := a.Store.Bookings.StoredWebhookEvent(ctx, r.Provider, r.EventID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ev, err := payments.DecodeStoredWebhook(w.Payload)
	if err != nil {
		return false, err
	}
	id, _, err := a.Store.Bookings.BookingByIntent(ctx, ev.IntentID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil // no booking will ever hear of it: staff see it in the log
	}
	if err != nil {
		return false, err
	}
	err = a.Sagas.DeliverPayment(ctx, id.String(), ev)
	if err != nil && !errors.Is(err, ErrNoSaga) {
		return false, err
	}
	return true, a.Store.Bookings.MarkWebhookSignalled(ctx, r.Provider, r.EventID)
}
