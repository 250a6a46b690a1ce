package rehearsal

import (
	"context"
	"time"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/internal/ctxsleep"
	"github.com/encore-tickets/encore/store"
)

// Books are the stack's own records, checked after the sale: the inventory
// audit (no seat with two live owners, no SOLD seat without a PAID booking,
// ...) and the reconciliation of the provider's captured payments with the
// bookings. They read the database and the provider directly: the edge
// cannot be trusted to report its own double sales.
type Books interface {
	Audit(ctx context.Context, eventID string) (store.AuditReport, error)
	Reconcile(ctx context.Context, since time.Time) (activities.ReconcileReport, error)
	// Settle counts what the drained sale left unfinished.
	Settle(ctx context.Context, eventID string) (store.Settled, error)
}

// StackBooks are the Books of a stack: its store and the booking saga's
// activities (whose Payments client reaches the provider). The
// reconciliation is the saga's own (activities.Reconciliation.ReconcilePayments), so
// a rehearsal and the scheduled reconciliation never disagree on what a
// mismatch is.
type StackBooks struct {
	Store      *store.Store
	Activities *activities.Booking
	// SweepLag is how far past expiry a held seat may be before the audit
	// counts it (ENCORE_SWEEP_LAG_ALLOWANCE).
	SweepLag time.Duration
}

// Audit runs the inventory audit on one event.
func (b StackBooks) Audit(ctx context.Context, eventID string) (store.AuditReport, error) {
	return b.Store.Holds.Audit(ctx, eventID, b.SweepLag)
}

// Settle counts the event's bookings missing tickets, stuck sagas and
// undelivered provider events, older than a minute.
func (b StackBooks) Settle(ctx context.Context, eventID string) (store.Settled, error) {
	return b.Store.Holds.Settle(ctx, eventID, time.Minute)
}

// Reconcile matches every payment the provider took since then.
func (b StackBooks) Reconcile(ctx context.Context, since time.Time) (activities.ReconcileReport, error) {
	return (*activities.Reconciliation)(b.Activities).ReconcilePayments(ctx, time.Since(since))
}

// checked is what the books said.
type checked struct {
	audit      store.AuditReport
	recon      activities.ReconcileReport
	auditErr   error
	reconErr   error
	reconTries int
	settled    store.Settled
	settleErr  error
}

// check reads the books once the sale is over. A capture or a refund may
// still be in flight for a moment after the fan saw PAID or the
// cancellation (the booking is PAID before its capture is recorded), so a
// reconciliation that finds mismatches is run again a few times before its
// answer counts: a mismatch that stays is one.
func check(ctx context.Context, b Books, eventID string, since time.Time) checked {
	var c checked
	c.audit, c.auditErr = b.Audit(ctx, eventID)
	c.settled, c.settleErr = b.Settle(ctx, eventID)
	for c.reconTries = 1; ; c.reconTries++ {
		c.recon, c.reconErr = b.Reconcile(ctx, since)
		if (c.reconErr == nil && len(c.recon.Mismatches) == 0) || c.reconTries == 6 {
			break
		}
		if !ctxsleep.Sleep(ctx, 5*time.Second) {
			break
		}
	}
	return c
}
