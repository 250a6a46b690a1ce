// Package worker puts Encore's workflows and activities on their Temporal
// task queue: what encore worker (and encore dev) runs. Every workflow and
// activity is registered under the name its histories record
// (workflows/names.go), never by reflection on a struct.
package worker

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/workflows"
)

// Dependencies are the activity groups a worker hosts. Booking may be nil for
// a worker that only ends holds (no payment provider configured).
type Dependencies struct {
	Holds   *activities.Holds
	Booking *activities.Booking
}

// New returns a worker on workflows.TaskQueue with the saga's workflows and
// activities registered. Activities that reach running sagas (support's
// cancel, reconciliation's redelivery) do it through c unless deps already
// name a way.
func New(c client.Client, deps Dependencies) sdkworker.Worker {
	if deps.Booking != nil && deps.Booking.Sagas == nil {
		deps.Booking.Sagas = workflows.Sagas{Client: c}
	}
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{})
	Register(w, deps)
	return w
}

// Register registers the workflows and activities on any registry (a real
// worker, or the Temporal test suite's environment). Each activity is
// registered method by method under its recorded name, never as a whole
// struct: a new exported method does not silently become an activity, and a
// renamed method keeps the name the histories know.
//
// One registration serves both kinds: the saga runs a step's first attempt
// as a local activity, and a provider step that failed continues as a
// regular activity of the same name on this task queue (workflows'
// callProvider), which this worker also polls for.
func Register(r sdkworker.Registry, deps Dependencies) {
	r.RegisterWorkflowWithOptions(workflows.Booking, workflow.RegisterOptions{Name: workflows.BookingWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.Reconcile, workflow.RegisterOptions{Name: workflows.ReconcileWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.EventCancellation, workflow.RegisterOptions{Name: workflows.EventCancellationWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.StaffAction, workflow.RegisterOptions{Name: workflows.StaffActionWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.WalkGuests, workflow.RegisterOptions{Name: workflows.WalkWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.AuditInventory, workflow.RegisterOptions{Name: workflows.AuditWorkflowName})
	for _, act := range activitiesOf(deps) {
		r.RegisterActivityWithOptions(act.fn, activity.RegisterOptions{Name: act.name})
	}
}

type namedActivity struct {
	name string
	fn   any
}

// activitiesOf lists the activities deps provide, in a fixed order.
func activitiesOf(deps Dependencies) []namedActivity {
	var out []namedActivity
	if h := deps.Holds; h != nil {
		out = append(out,
			namedActivity{workflows.ActivityExpireHold, h.ExpireHold},
			namedActivity{workflows.ActivityReleaseHold, h.ReleaseHold},
		)
	}
	if b := deps.Booking; b != nil {
		out = append(out,
			namedActivity{workflows.ActivityLoadBooking, b.LoadBooking},
			namedActivity{workflows.ActivityExtendHold, b.ExtendHold},
			namedActivity{workflows.ActivityFraudCheck, b.FraudCheck},
			namedActivity{workflows.ActivityAuthorise, b.Authorise},
			namedActivity{workflows.ActivityConfirmSale, b.ConfirmSale},
			namedActivity{workflows.ActivityCapture, b.Capture},
			namedActivity{workflows.ActivityVoid, b.Void},
			namedActivity{workflows.ActivityRefund, b.Refund},
			namedActivity{workflows.ActivityRefundPart, b.RefundPart},
			namedActivity{workflows.ActivityCancelSale, b.CancelSale},
			namedActivity{workflows.ActivityIssueTickets, b.IssueTickets},
			namedActivity{workflows.ActivityPaySellers, b.PaySellers},
			namedActivity{workflows.ActivityNotify, b.Notify},
			namedActivity{workflows.ActivityFlagPayment, b.FlagPayment},
			namedActivity{workflows.ActivityReconcile, (*activities.Reconciliation)(b).ReconcilePayments},
			namedActivity{workflows.ActivityStaffAction, b.StaffAction},
			namedActivity{workflows.ActivityRecordStaffStep, b.RecordStaffStep},
			namedActivity{workflows.ActivitySettledStatus, b.SettledStatus},
			namedActivity{workflows.ActivityCheckPayment, b.CheckPayment},
			namedActivity{workflows.ActivityPaidPage, b.PaidBookingsPage},
			namedActivity{workflows.ActivityJobItem, b.RecordJobItem},
			namedActivity{workflows.ActivityFinishJob, b.FinishJob},
			namedActivity{workflows.ActivityRelocate, (*activities.Walks)(b).RelocateGuests},
			namedActivity{workflows.ActivityRefundWalk, (*activities.Walks)(b).RefundWalk},
			namedActivity{workflows.ActivityTellWalked, (*activities.Walks)(b).TellWalkedGuest},
			namedActivity{workflows.ActivityAuditStore, (*activities.Reconciliation)(b).AuditStore},
			namedActivity{workflows.ActivityUndeliveredWebhooks, (*activities.Reconciliation)(b).UndeliveredWebhooks},
			namedActivity{workflows.ActivityRepair, (*activities.Reconciliation)(b).Repair},
		)
	}
	return out
}
