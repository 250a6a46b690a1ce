package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/vocab"
)

// StaffCancelRequest is the staff-cancel Update's argument: who cancels and
// why (it lands in the booking's history, so no personal data).
type StaffCancelRequest struct {
	Staff  string
	Reason string
	// Audited is read only when replaying histories recorded before
	// versionStaffCancelAlwaysAudited, when the saga skipped its audit
	// record for a sender that said it audited. The saga now audits every
	// staff-cancel, whatever this says.
	Audited bool
}

// EventCancelInput is the cancellation job's state, carried across
// continue-as-new: the event's paid bookings are read page by page after
// Cursor, never listed in the input.
type EventCancelInput struct {
	JobID   string
	EventID string
	Staff   string
	Reason  string
	// Rate is how many bookings a second the job refunds (0: 20).
	Rate int
	// Cursor is the last booking ID handled ("" from the start).
	Cursor string
}

// pagesPerRun bounds one run's history: after this many pages the job
// continues as new with its cursor.
const pagesPerRun = 25

// EventCancellation refunds every paid booking of a cancelled event, Rate a
// second, each through its own booking's workflow; it is the job of
// store.CancelEvent and ends it (done, or failed if any booking failed).
// A worker crash resumes where the history stands; each refund is keyed so
// a retried one refunds once.
func EventCancellation(ctx workflow.Context, in EventCancelInput) error {
	if in.Rate <= 0 {
		in.Rate = 20
	}
	// A refund through the booking's workflow takes seconds; an attempt
	// lost with a stopped worker is retried once its heartbeat lapses
	// (activities.Booking.StaffAction beats every two seconds).
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		HeartbeatTimeout:    6 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 20},
	})
	dctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 10 * time.Second},
	})
	for page := 0; page < pagesPerRun; page++ {
		var ids []string
		if err := workflow.ExecuteActivity(dctx, a.PaidBookingsPage, in.EventID, in.Cursor, in.Rate).Get(ctx, &ids); err != nil {
			return err
		}
		if len(ids) == 0 {
			return workflow.ExecuteActivity(dctx, a.FinishJob, in.JobID).Get(ctx, nil)
		}
		started := workflow.Now(ctx)
		futures := make([]workflow.Future, len(ids))
		for i, id := range ids {
			futures[i] = workflow.ExecuteActivity(actx, a.StaffAction, activities.StaffInput{Action: activities.StaffRefund, BookingID: id,
				Staff: in.Staff, Reason: in.Reason, JobID: in.JobID})
		}
		for i, f := range futures {
			if err := f.Get(ctx, nil); err != nil {
				// Out of retries: counted as failed, and the job goes on.
				if err := workflow.ExecuteActivity(dctx, a.RecordJobItem, in.JobID, ids[i], false, err.Error()).Get(ctx, nil); err != nil {
					return err
				}
			}
		}
		in.Cursor = ids[len(ids)-1]
		if wait := time.Second - workflow.Now(ctx).Sub(started); wait > 0 {
			if err := workflow.Sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	return workflow.NewContinueAsNewError(ctx, EventCancellationWorkflowName, in)
}

// StaffAction runs one support action on the worker, where the provider and
// the mailer are.
func StaffAction(ctx workflow.Context, in activities.StaffInput) (vocab.BookingStatus, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second, MaximumAttempts: 10},
	})
	var status vocab.BookingStatus
	err := workflow.ExecuteActivity(actx, a.StaffAction, in).Get(ctx, &status)
	return status, err
}
