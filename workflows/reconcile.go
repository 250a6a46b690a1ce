package workflows

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// Reconcile matches the provider's payments of the last lookback with
// bookings and refunds, reports every captured payment without exactly one
// PAID booking or one full refund, and repairs what it can, each repair its
// own step under its own provider idempotency key (Repair.StepKey): it
// voids authorisations that outlived their booking, refunds money captured
// without a PAID booking, and signals again the stored provider events that
// never reached their booking. A schedule runs it.
func Reconcile(ctx workflow.Context, lookback time.Duration) (activities.ReconcileReport, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var rep activities.ReconcileReport
	if err := workflow.ExecuteActivity(ctx, rc.ReconcilePayments, lookback).Get(ctx, &rep); err != nil {
		return rep, err
	}
	// Runs that began before repairs existed only report.
	if workflow.GetVersion(ctx, changeReconcileRepairs, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return rep, nil
	}
	var undelivered []activities.Repair
	if err := workflow.ExecuteActivity(ctx, rc.UndeliveredWebhooks).Get(ctx, &undelivered); err != nil {
		return rep, err
	}
	rep.Repairs = append(rep.Repairs, undelivered...)
	rep.Repaired = map[vocab.RepairKind]int{}
	var errs []error
	for _, r := range rep.Repairs {
		var done bool
		if err := workflow.ExecuteActivity(ctx, rc.Repair, r).Get(ctx, &done); err != nil {
			// One repair the provider refuses must not strand the others.
			errs = append(errs, err)
			continue
		}
		if done {
			rep.Repaired[r.Kind]++
		}
	}
	return rep, errors.Join(errs...)
}

// changeReconcileRepairs marks the version of Reconcile that repairs.
const changeReconcileRepairs = "reconcile-repairs"

// AuditInventory runs the inventory audit on its schedule (nightly by
// default): it fails, so the schedule's run shows red in the Web UI and the
// worker logs it at error level, whenever a rule is broken (a seat with two
// live owners, a room-night sold past its allotment plus overbooking limit,
// counters that drifted from the live holds...).
func AuditInventory(ctx workflow.Context) (store.AuditReport, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var rep store.AuditReport
	if err := workflow.ExecuteActivity(ctx, rc.AuditStore).Get(ctx, &rep); err != nil {
		return rep, err
	}
	if rep.Violations() > 0 {
		return rep, temporal.NewNonRetryableApplicationError("inventory audit: "+rep.String(), activities.ErrTypeAuditFailed, nil, rep)
	}
	return rep, nil
}

// EnsureAuditSchedule creates the schedule that runs AuditInventory every
// interval, if it does not exist yet.
func EnsureAuditSchedule(ctx context.Context, c client.Client, every time.Duration) error {
	return ensureSchedule(ctx, c, AuditScheduleID, every, &client.ScheduleWorkflowAction{
		ID:        AuditWorkflowID,
		Workflow:  AuditWorkflowName,
		TaskQueue: TaskQueue,
	})
}
