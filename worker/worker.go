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
	Holds *activities.Holds
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
	r.RegisterActivityWithOptions(deps.Holds.ExpireHold, activity.RegisterOptions{Name: workflows.ActivityExpireHold})
	r.RegisterActivityWithOptions(deps.Holds.ReleaseHold, activity.RegisterOptions{Name: workflows.ActivityReleaseHold})
}
