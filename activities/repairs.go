package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// Reconciliation is the scheduled payment reconciliation's and inventory
// audit's activities, and their repairs. It shares Booking's dependencies
// (a conversion of the same struct, wired with it) but not its methods:
// the saga's steps stay on Booking.
type Reconciliation Booking

// repairGrace is how old a payment must be before reconciliation repairs
// it: younger ones may still be in their saga's hands (a compensation
// voiding or refunding it right now).
const repairGrace = 15 * time.Minute

// webhookGrace is how long a stored provider event may wait for its
// delivery before reconciliation signals it again.
const webhookGrace = time.Minute

func (a *Reconciliation) grace() time.Duration {
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
func (a *Reconciliation) publishReconcile(rep ReconcileReport) {
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
func (a *Reconciliation) publishAudit(rep store.AuditReport, h store.SagaHealth) {
	if a.Metrics == nil {
		return
	}
	for rule, n := range auditRules(rep) {
		a.Metrics.violations.WithLabelValues(rule).Set(float64(n))
	}
	a.Metrics.noTickets.Set(float64(h.PaidWithoutTickets))
	a.Metrics.oldestOpen.Set(h.OldestOpen.Seconds())
	a.Metrics.auditLastRun.SetToCurrentTime()
}

// auditRules is every rule of the audit report by its gauge's rule label:
// each one the report counts, so a rule the audit checks is never missing
// from the gauges (and their alerts).
func auditRules(rep store.AuditReport) map[string]int64 {
	return map[string]int64{"double_sale": rep.SeatsWithManyOwners, "sold_without_paid": rep.SoldWithoutPaid,
		"held_past_expiry": rep.HeldPastExpiry, "general_miscounted": rep.GeneralOverCount, "seated_miscounted": rep.SeatedMiscounted,
		"room_nights_over_limit": rep.RoomNightsOverLimit, "room_nights_miscounted": rep.RoomNightsMiscounted,
		"tickets_beyond_sale": rep.TicketsBeyondSale, "tickets_revoked_twice": rep.TicketsRevokedTwice,
		"listings_sold_twice": rep.ListingsSoldTwice, "resale_money_unbalanced": rep.ResaleMoneyUnbalanced,
		"places_with_two_holders": rep.PlacesWithTwoHolders}
}

// UndeliveredWebhooks lists the stored provider events that never reached
// their booking (at most 500 a run), as repairs.
func (a *Reconciliation) UndeliveredWebhooks(ctx context.Context) ([]Repair, error) {
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
func (a *Reconciliation) Repair(ctx context.Context, r Repair) (bool, error) {
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

func (a *Reconciliation) voidLeaked(ctx context.Context, r Repair) (bool, error) {
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

func (a *Reconciliation) refundOrphan(ctx context.Context, r Repair) (bool, error) {
	if r.Amount <= 0 {
		return false, nil
	}
	_, err := a.Payments.RefundAmount(ctx, r.StepKey(), r.IntentID, r.Amount)
	return err == nil, err
}

func (a *Reconciliation) resignal(ctx context.Context, r Repair) (bool, error) {
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

// ReconcilePayments matches the provider's payments of the lookback window
// with bookings and refunds: every captured payment must belong to exactly
// one PAID booking, or be refunded in full.
func (a *Reconciliation) ReconcilePayments(ctx context.Context, lookback time.Duration) (ReconcileReport, error) {
	type seen struct {
		in      payments.Intent
		refunds []payments.Refund
	}
	var all []seen
	if err := a.Payments.Each(ctx, time.Now().Add(-lookback), func(in payments.Intent, rs []payments.Refund) error {
		all = append(all, seen{in, rs})
		return nil
	}); err != nil {
		return ReconcileReport{}, err
	}
	ids := make([]string, len(all))
	for i, s := range all {
		ids[i] = s.in.ID
	}
	rows, err := a.Store.Bookings.PaymentsForReconciliation(ctx, ids)
	if err != nil {
		return ReconcileReport{}, err
	}
	rep := ReconcileReport{Checked: len(all)}
	settled := time.Now().Add(-a.grace())
	for _, s := range all {
		if s.in.Status == vocab.IntentRequiresCapture && s.in.Created.Before(settled) {
			// Authorised and never captured: the money is the fan's while
			// its booking lives (a checkout in flight, or paid and about to
			// be captured); past that it is leaked and is voided.
			row, known := rows[s.in.ID]
			if !known || (row.ReservationStatus != string(vocab.ReservationPending) && row.ReservationStatus != string(vocab.ReservationPaid)) {
				rep.Repairs = append(rep.Repairs, Repair{Kind: vocab.RepairLeakedAuthorisation, IntentID: s.in.ID, BookingID: s.in.BookingID})
			}
			continue
		}
		if s.in.AmountReceived == 0 {
			continue
		}
		rep.Captured++
		row, known := rows[s.in.ID]
		// A walk's refund of one night is expected whatever the booking's
		// state; it is counted as received money given back.
		var refunded, walked int64
		var others []payments.Refund
		for _, r := range s.refunds {
			if r.Status != string(vocab.RefundSucceeded) && r.Status != string(vocab.RefundPending) {
				continue
			}
			if slices.Contains(row.WalkRefundIDs, r.ID) {
				walked += r.Amount
				continue
			}
			refunded += r.Amount
			others = append(others, r)
		}
		paid := known && row.ReservationStatus == string(vocab.ReservationPaid) && row.PaymentStatus == string(vocab.PaymentCaptured)
		fullyRefunded := refunded+walked == s.in.AmountReceived && len(others) == 1
		// A cancellation past a stay's free window refunds less than all:
		// one refund, the one the booking recorded.
		refundedLessPenalty := known && row.PaymentStatus == string(vocab.PaymentRefunded) && len(others) == 1 &&
			others[0].ID == row.RefundID
		switch {
		case paid && refunded == 0, !paid && (fullyRefunded || refundedLessPenalty):
		default:
			rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("%s (booking %s): captured %d, refunded %d in %d refunds, booking %v %s/%s",
				s.in.ID, s.in.BookingID, s.in.AmountReceived, refunded, len(s.refunds), known, row.ReservationStatus, row.PaymentStatus))
			if rest := s.in.AmountReceived - refunded - walked; !paid && rest > 0 && s.in.Created.Before(settled) && !refundedLessPenalty {
				// Money kept without a sale: give back what is left.
				rep.Repairs = append(rep.Repairs, Repair{Kind: vocab.RepairOrphanCapture, IntentID: s.in.ID,
					BookingID: s.in.BookingID, Amount: rest})
			}
		}
	}
	a.publishReconcile(rep)
	if len(rep.Mismatches) > 0 {
		a.Log.Error("reconciliation found mismatches", "count", len(rep.Mismatches), "first", rep.Mismatches[0])
	}
	return rep, nil
}
