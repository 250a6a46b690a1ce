package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// StaffCancelRequest is the staff-cancel Update's argument: who cancels and
// why (it lands in the booking's history, so no personal data).
type StaffCancelRequest struct {
	Staff  string
	Reason string
}

// Staff actions of StaffAction.
const (
	StaffRefund = "refund"
	StaffResend = "resend"
)

// StaffInput is one staff action on one booking.
type StaffInput struct {
	Action    string // StaffRefund or StaffResend
	BookingID string
	Staff     string
	Reason    string
	// JobID, when set, is the cancellation job the refund belongs to: the
	// booking's Update is deduplicated per job, and the job's counters move.
	JobID string
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
	// A refund through the booking's workflow takes seconds; a short bound
	// matters because an attempt lost with a stopped worker is retried only
	// once it times out.
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
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
			futures[i] = workflow.ExecuteActivity(actx, a.StaffAction, StaffInput{Action: StaffRefund, BookingID: id,
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
func StaffAction(ctx workflow.Context, in StaffInput) (vocab.BookingStatus, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second, MaximumAttempts: 10},
	})
	var status vocab.BookingStatus
	err := workflow.ExecuteActivity(actx, a.StaffAction, in).Get(ctx, &status)
	return status, err
}

// PaidBookingsPage lists up to limit paid bookings of the event after the
// cursor, in ID order.
func (a *Activities) PaidBookingsPage(ctx context.Context, eventID, cursor string, limit int) ([]string, error) {
	after := uuid.Nil
	if cursor != "" {
		var err error
		if after, err = parseID(cursor); err != nil {
			return nil, err
		}
	}
	ids, err := a.Store.PaidBookingsAfter(ctx, eventID, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out, nil
}

// RecordJobItem records one booking's outcome in the job's counters, once.
func (a *Activities) RecordJobItem(ctx context.Context, jobID, bookingID string, ok bool, detail string) error {
	id, err := parseID(bookingID)
	if err != nil {
		return err
	}
	return a.Store.RecordJobItem(ctx, jobID, id, ok, detail)
}

// FinishJob marks the job done (or failed if any booking failed).
func (a *Activities) FinishJob(ctx context.Context, jobID string) error {
	_, err := a.Store.FinishJob(ctx, jobID)
	return err
}

// StaffAction performs one staff action. A refund goes through the
// booking's own workflow (the staff-cancel Update: seats back, tickets
// revoked, refunded under the booking's refund step key); a booking whose
// workflow has ended is cancelled and refunded here by the same activities
// and step key, so either way the money moves once. The fan is told why.
// A resend sends the confirmation again.
func (a *Activities) StaffAction(ctx context.Context, in StaffInput) (vocab.BookingStatus, error) {
	id, err := parseID(in.BookingID)
	if err != nil {
		return "", err
	}
	if in.Action == StaffResend {
		return "", a.sendConfirmation(ctx, id, in.BookingID, "resend")
	}
	if in.Action != StaffRefund {
		return "", temporal.NewNonRetryableApplicationError("unknown staff action "+in.Action, ErrTypeInvalidID, nil)
	}
	if err := a.Store.MarkStaffCancel(ctx, id, in.Staff, in.Reason); err != nil {
		return "", err
	}
	updateID := "staff-cancel-" + in.BookingID
	if in.JobID != "" {
		updateID = "job-" + in.JobID + "-" + in.BookingID
	}
	err = staffCancel(ctx, activity.GetClient(ctx), in.BookingID, updateID, StaffCancelRequest{Staff: in.Staff, Reason: in.Reason})
	var ae *temporal.ApplicationError
	switch {
	case errors.Is(err, ErrNoBooking):
		if err := a.refundClosed(ctx, id, in.BookingID); err != nil {
			return "", err
		}
	case errors.As(err, &ae) && ae.Type() == ErrTypeNotPending:
		// Already ended (the fan cancelled, or an earlier attempt did it):
		// the booking is settled however it ended.
	case err != nil:
		return "", err
	}
	b, err := a.Store.Booking(ctx, id, "")
	if err != nil {
		return "", err
	}
	if b.Hold.Status == vocab.ReservationPaid {
		return "", errors.New("the booking is still paid")
	}
	if b.PaymentStatus == vocab.PaymentRefunded || b.PaymentStatus == vocab.PaymentVoided {
		if err := a.notifyCancellation(ctx, id, in.BookingID, in.Reason); err != nil {
			a.Log.Warn("cancellation email not sent", "booking", in.BookingID, "error", err)
		}
	}
	if in.JobID != "" {
		if err := a.Store.RecordJobItem(ctx, in.JobID, id, true, ""); err != nil {
			return "", err
		}
	}
	if b.PaymentStatus == vocab.PaymentRefunded {
		return vocab.BookingRefunded, nil
	}
	return vocab.BookingStatus(b.Hold.Status), nil
}

// staffCancel sends the staff-cancel Update to a running booking.
func staffCancel(ctx context.Context, c client.Client, bookingID, updateID string, req StaffCancelRequest) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: BookingWorkflowID(bookingID), UpdateID: updateID, UpdateName: UpdateStaffCancel,
		Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return ErrNoBooking
	}
	if err != nil {
		return err
	}
	err = h.Get(ctx, nil)
	if errors.As(err, &nf) {
		return ErrNoBooking
	}
	return err
}

// refundClosed cancels and refunds a paid booking whose workflow has ended
// (past the event's cancellation deadline) with the workflow's own
// activities: the sale undone, then the refund under the same step key.
func (a *Activities) refundClosed(ctx context.Context, id uuid.UUID, bookingID string) error {
	b, err := a.Store.Booking(ctx, id, "")
	if err != nil {
		return err
	}
	if b.Hold.Status == vocab.ReservationPending {
		// Never checked out: no money to return, only the seats.
		if _, err := a.Store.Release(ctx, id, ""); err != nil && !errors.Is(err, store.ErrNotPending) {
			return err
		}
		return nil
	}
	if err := a.CancelSale(ctx, bookingID); err != nil {
		return err
	}
	if b.IntentID == "" || b.PaymentStatus == vocab.PaymentRefunded || b.PaymentStatus == vocab.PaymentVoided {
		return nil
	}
	return a.Refund(ctx, bookingID, b.IntentID)
}

func (a *Activities) notifyCancellation(ctx context.Context, id uuid.UUID, bookingID, reason string) error {
	if done, err := a.Store.Notified(ctx, id, NotifyCancellation); err != nil || done {
		return err
	}
	to, err := a.recipient(ctx, id)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("Your booking %s has been cancelled and refunded in full.\nReason: %s\n", bookingID, reason)
	if err := a.Mailer.Send(ctx, notify.Message{To: to, Subject: "Your Encore booking was cancelled", Body: body,
		Key: bookingID + "-" + NotifyCancellation}); err != nil {
		return err
	}
	if err := a.Store.LogNotification(ctx, id, NotifyCancellation, to); err != nil {
		return err
	}
	return a.Store.MarkNotified(ctx, id, NotifyCancellation)
}

func (a *Activities) recipient(ctx context.Context, id uuid.UUID) (string, error) {
	to, err := a.Store.FanEmail(ctx, id)
	if err != nil {
		return "", err
	}
	if to == "" {
		b, err := a.Store.LoadBooking(ctx, id)
		if err != nil {
			return "", err
		}
		to = b.UserID + "@fans.invalid" // the token had no email: nowhere real to send to
	}
	return to, nil
}
