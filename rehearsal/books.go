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
	// settleTries: how many times the audit and the settle count were read.
	settleTries int
}

// check reads the books once the sale is over. The stack may still be
// finishing what a late break interrupted: a booking PAID whose issue step
// waits for PostgreSQL to come back has no tickets yet, and a capture or a
// refund may be in flight for a moment after the fan saw PAID or the
// cancellation (the booking is PAID before its capture is recorded). So
// the audit and the settle count are read again, every apart (5 s in a
// rehearsal), while they fail or find a paid booking without its tickets,
// and a reconciliation that finds mismatches is run again the same way, before
// the answers count: a shortfall or a mismatch that stays is one.
func check(ctx context.Context, b Books, eventID string, since time.Time, every time.Duration) checked {
	var c checked
	for c.settleTries = 1; ; c.settleTries++ {
		c.audit, c.auditErr = b.Audit(ctx, eventID)
		c.settled, c.settleErr = b.Settle(ctx, eventID)
		if (c.auditErr == nil && c.settleErr == nil && c.settled.BookingsMissingTickets == 0) || c.settleTries == settleTries {
			break
		}
		if !ctxsleep.Sleep(ctx, every) {
			break
		}
	}
	for c.reconTries = 1; ; c.reconTries++ {
		c.recon, c.reconErr = b.Reconcile(ctx, since)
		if (c.reconErr == nil && len(c.recon.Mismatches) == 0) || c.reconTries == settleTries {
			break
		}
		if !ctxsleep.Sleep(ctx, every) {
			break
		}
	}
	return c
}

// settleTries is how many times the books are read, every apart (5 s in a
// rehearsal), before a shortfall or a mismatch counts: two minutes for the
// stack to finish. A saga step's retries back off to 30 s, and after a
// PostgreSQL restart late in the drain (12 s down on a loaded CI runner)
// a booking's capture and tickets took longer than the half minute this
// once was.
const settleTries = 24
