// Package worker wires Encore's workflows and activities onto a Temporal
// worker for the booking task queue.
package worker

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/workflows"
)

// Dependencies are the activity groups the worker hosts.
type Dependencies struct {
	Holds   *activities.Holds
	Booking *activities.Booking
}

// New returns a worker with every workflow and activity registered.
func New(c client.Client, deps Dependencies) sdkworker.Worker {
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{})
	Register(w, deps)
	return w
}

// Register registers the workflows and activities on any registry (a real
// worker, or the Temporal test suite's environment).
func Register(r sdkworker.Registry, deps Dependencies) {
	r.RegisterWorkflowWithOptions(workflows.Booking, workflow.RegisterOptions{Name: workflows.BookingWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.Reconcile, workflow.RegisterOptions{Name: workflows.ReconcileWorkflowName})
	for name, fn := range map[string]any{
		workflows.ActivityExpireHold:  deps.Holds.ExpireHold,
		workflows.ActivityReleaseHold: deps.Holds.ReleaseHold,
	} {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	if deps.Booking == nil {
		return
	}
	b := deps.Booking
	for name, fn := range map[string]any{
		workflows.ActivityLoadBooking:  b.LoadBooking,
		workflows.ActivityExtendHold:   b.ExtendHold,
		workflows.ActivityFraudCheck:   b.FraudCheck,
		workflows.ActivityAuthorise:    b.Authorise,
		workflows.ActivityConfirmSale:  b.ConfirmSale,
		workflows.ActivityCapture:      b.Capture,
		workflows.ActivityVoid:         b.Void,
		workflows.ActivityRefund:       b.Refund,
		workflows.ActivityCancelSale:   b.CancelSale,
		workflows.ActivityIssueTickets: b.IssueTickets,
		workflows.ActivityNotify:       b.Notify,
		workflows.ActivityFlagPayment:  b.FlagPayment,
		workflows.ActivityReconcile:    b.ReconcilePayments,
	} {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}
