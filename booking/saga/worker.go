package saga

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Dependencies are the activity groups a worker hosts. Booking may be nil for
// a worker that only ends holds (no payment provider configured).
type Dependencies struct {
	Holds   *HoldActivities
	Booking *Activities
}

// NewWorker returns a worker on TaskQueue with the saga's workflows and
// activities registered.
func NewWorker(c client.Client, deps Dependencies) worker.Worker {
	w := worker.New(c, TaskQueue, worker.Options{})
	Register(w, deps)
	return w
}

// Register registers the workflows and activities on any registry (a real
// worker, or the Temporal test suite's environment). Each activity is
// registered method by method under its recorded name, never as a whole
// struct: a new exported method does not silently become an activity, and a
// renamed method keeps the name the histories know.
func Register(r worker.Registry, deps Dependencies) {
	r.RegisterWorkflowWithOptions(Booking, workflow.RegisterOptions{Name: BookingWorkflowName})
	r.RegisterWorkflowWithOptions(Reconcile, workflow.RegisterOptions{Name: ReconcileWorkflowName})
	r.RegisterWorkflowWithOptions(EventCancellation, workflow.RegisterOptions{Name: EventCancellationWorkflowName})
	r.RegisterWorkflowWithOptions(StaffAction, workflow.RegisterOptions{Name: StaffActionWorkflowName})
	r.RegisterWorkflowWithOptions(WalkGuests, workflow.RegisterOptions{Name: WalkWorkflowName})
	r.RegisterWorkflowWithOptions(AuditInventory, workflow.RegisterOptions{Name: AuditWorkflowName})
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
			namedActivity{ActivityExpireHold, h.ExpireHold},
			namedActivity{ActivityReleaseHold, h.ReleaseHold},
		)
	}
	if b := deps.Booking; b != nil {
		out = append(out,
			namedActivity{ActivityLoadBooking, b.LoadBooking},
			namedActivity{ActivityExtendHold, b.ExtendHold},
			namedActivity{ActivityFraudCheck, b.FraudCheck},
			namedActivity{ActivityAuthorise, b.Authorise},
			namedActivity{ActivityConfirmSale, b.ConfirmSale},
			namedActivity{ActivityCapture, b.Capture},
			namedActivity{ActivityVoid, b.Void},
			namedActivity{ActivityRefund, b.Refund},
			namedActivity{ActivityRefundPart, b.RefundPart},
			namedActivity{ActivityCancelSale, b.CancelSale},
			namedActivity{ActivityIssueTickets, b.IssueTickets},
			namedActivity{ActivityNotify, b.Notify},
			namedActivity{ActivityFlagPayment, b.FlagPayment},
			namedActivity{ActivityReconcile, b.ReconcilePayments},
			namedActivity{ActivityStaffAction, b.StaffAction},
			namedActivity{ActivityPaidPage, b.PaidBookingsPage},
			namedActivity{ActivityJobItem, b.RecordJobItem},
			namedActivity{ActivityFinishJob, b.FinishJob},
			namedActivity{ActivityRelocate, b.RelocateGuests},
			namedActivity{ActivityRefundWalk, b.RefundWalk},
			namedActivity{ActivityTellWalked, b.TellWalkedGuest},
			namedActivity{ActivityAuditStore, b.AuditStore},
			namedActivity{ActivityUndeliveredWebhooks, b.UndeliveredWebhooks},
			namedActivity{ActivityRepair, b.Repair},
		)
	}
	return out
}
