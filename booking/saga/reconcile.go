package saga

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Reconcile matches the provider's payments of the last lookback with
// bookings and refunds and reports every captured payment without exactly
// one PAID booking or one full refund. A schedule runs it.
func Reconcile(ctx workflow.Context, lookback time.Duration) (ReconcileReport, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var rep ReconcileReport
	err := workflow.ExecuteActivity(ctx, a.ReconcilePayments, lookback).Get(ctx, &rep)
	return rep, err
}
