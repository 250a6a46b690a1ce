package activities

import (
	"context"
	"time"

	"github.com/encore-tickets/encore/store"
)

// auditSweeperLag is how long past its expiry a HELD seat may wait for the
// sweeper before the audit counts it.
const auditSweeperLag = 5 * time.Minute

// paidTicketsGrace is how long a PAID booking may wait for its tickets
// before the audit counts it (the saga issues them seconds after capture).
const paidTicketsGrace = 10 * time.Minute

// AuditStore counts the violations of the inventory and ticket rules over
// the whole database (store.Holds.Audit: seats, room-nights, resale, and per
// booking no more tickets or revoked tickets than its sale issued, no ticket
// revoked twice), logging any at error level, and publishes every rule's
// count on encore_audit_violations{rule} with the saga's health gauges.
func (a *Reconciliation) AuditStore(ctx context.Context) (store.AuditReport, error) {
	rep, err := a.Store.Holds.Audit(ctx, "", auditSweeperLag)
	if err != nil {
		return rep, err
	}
	if rep.Violations() > 0 && a.Log != nil {
		a.Log.Error("inventory audit found violations", "report", rep.String())
	}
	if a.Metrics != nil {
		h, err := a.Store.Bookings.SagaHealth(ctx, paidTicketsGrace)
		if err != nil {
			return rep, err
		}
		a.publishAudit(rep, h)
	}
	return rep, nil
}
