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

// AuditStore counts the violations of the inventory rules over the whole
// database (store.Store.Audit), logging any at error level.
func (a *Reconciliation) AuditStore(ctx context.Context) (store.AuditReport, error) {
	rep, err := a.Store.Holds.Audit(ctx, "", auditSweeperLag)
	if err != nil {
		return rep, err
	}
	if rep.Violations() > 0 && a.Log != nil {
		a.Log.Error("inventory audit found violations", "report", rep.String())
	}
	return rep, nil
}
