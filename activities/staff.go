package activities

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

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
	// RequestID names the support request: the booking's Update is
	// deduplicated per request, so a refund asked again after an earlier
	// one was refused is not answered from it.
	RequestID string
}

// PaidBookingsPage lists up to limit paid bookings of the event after the
// cursor, in ID order.
func (a *Booking) PaidBookingsPage(ctx context.Context, eventID, cursor string, limit int) ([]string, error) {
	after := uuid.Nil
	if cursor != "" {
		var err error
		if after, err = parseID(cursor); err != nil {
			return nil, err
		}
	}
	ids, err := a.Store.Jobs.PaidBookingsAfter(ctx, eventID, after, limit)
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
func (a *Booking) RecordJobItem(ctx context.Context, jobID, bookingID string, ok bool, detail string) error {
	id, err := parseID(bookingID)
	if err != nil {
		return err
	}
	return a.Store.Jobs.RecordJobItem(ctx, jobID, id, ok, detail)
}

// FinishJob marks the job done (or failed if any booking failed).
func (a *Booking) FinishJob(ctx context.Context, jobID string) error {
	_, err := a.Store.Jobs.FinishJob(ctx, jobID)
	return err
}

// StaffAction performs one staff action. A refund goes through the
// booking's own workflow (the staff-cancel Update: seats back, tickets
// revoked, refunded under the booking's refund step key); a booking whose
// workflow has ended is cancelled and refunded here by the same activities
// and step key, so either way the money moves once. The fan is told why.
// A resend sends the confirmation again.
func (a *Booking) StaffAction(ctx context.Context, in StaffInput) (vocab.BookingStatus, error) {
	// Alive while it waits on the booking's workflow: an attempt lost with
	// its worker is retried once its heartbeat lapses, not after the whole
	// start-to-close bound.
	defer heartbeat(ctx, 2*time.Second)()
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
	if err := a.Store.Bookings.MarkStaffCancel(ctx, id, in.Staff, in.Reason); err != nil {
		return "", err
	}
	updateID := "staff-cancel-" + in.BookingID
	if in.RequestID != "" {
		updateID += "-" + in.RequestID
	}
	if in.JobID != "" {
		updateID = "job-" + in.JobID + "-" + in.BookingID
	}
	err = a.Sagas.StaffCancel(ctx, in.BookingID, updateID, in.Staff, in.Reason)
	switch {
	case errors.Is(err, ErrNoSaga):
		if err := a.refundClosed(ctx, id, in.BookingID); err != nil {
			return "", err
		}
	case errors.Is(err, ErrSettled):
		// Already ended (the fan cancelled, or an earlier attempt did it):
		// the booking is settled however it ended.
	case err != nil:
		return "", err
	}
	b, err := a.Store.Bookings.Booking(ctx, id, "")
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
		if err := a.Store.Jobs.RecordJobItem(ctx, in.JobID, id, true, ""); err != nil {
			return "", err
		}
	}
	return settledStatus(b), nil
}

// settledStatus is how a booking given back ended, as its page says it: a
// captured payment refunded is REFUNDED; an authorisation voided (no money
// moved) leaves the reservation's own status, CANCELLED.
func settledStatus(b store.BookingView) vocab.BookingStatus {
	if b.PaymentStatus == vocab.PaymentRefunded {
		return vocab.BookingRefunded
	}
	return vocab.BookingStatus(b.Hold.Status)
}

// SettledStatus reads how a booking the saga gave back ended in the
// database: support closing a stuck capture cannot know, until the refund
// step ran, whether money had moved (refunded) or not (voided).
func (a *Booking) SettledStatus(ctx context.Context, bookingID string) (vocab.BookingStatus, error) {
	id, err := parseID(bookingID)
	if err != nil {
		return "", err
	}
	b, err := a.Store.Bookings.Booking(ctx, id, "")
	if err != nil {
		return "", err
	}
	return settledStatus(b), nil
}

// refundClosed cancels and refunds a paid booking whose workflow has ended
// (past the event's cancellation deadline) with the workflow's own
// activities: the sale undone, then the refund under the same step key.
func (a *Booking) refundClosed(ctx context.Context, id uuid.UUID, bookingID string) error {
	b, err := a.Store.Bookings.Booking(ctx, id, "")
	if err != nil {
		return err
	}
	if b.Hold.Status == vocab.ReservationPending {
		// Never checked out: no money to return, only the seats.
		if _, err := a.Store.Holds.Release(ctx, id, ""); err != nil && !errors.Is(err, store.ErrNotPending) {
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

func (a *Booking) notifyCancellation(ctx context.Context, id uuid.UUID, bookingID, reason string) error {
	return a.sendCancellation(ctx, id, bookingID, reason, nil)
}

func (a *Booking) recipient(ctx context.Context, id uuid.UUID) (string, error) {
	to, err := a.Store.Bookings.FanEmail(ctx, id)
	if err != nil {
		return "", err
	}
	if to == "" {
		b, err := a.Store.Bookings.LoadBooking(ctx, id)
		if err != nil {
			return "", err
		}
		to = b.UserID + "@fans.invalid" // the token had no email: nowhere real to send to
	}
	return to, nil
}

// StaffStep is a support action taken on a running booking's workflow
// (refund-and-close, retry-now): who, why, and what the saga did.
type StaffStep struct {
	BookingID string
	EventID   string
	Staff     string
	Reason    string
	// Action is the audit log's name of the action ("booking.refund-and-close").
	Action string
	// Outcome is the booking's status once the saga acted.
	Outcome vocab.BookingStatus
}

// RecordStaffStep writes the audit record of a support action the booking's
// saga carried out, in the log of the event's organisation, whoever sent it
// (the API, or the Temporal UI, which no edge handler sees). When the
// action gave the money back it records who cancelled and why on the
// booking and tells the fan, once (the cancellation e-mail is
// deduplicated by kind), so every refund path leaves both.
func (a *Booking) RecordStaffStep(ctx context.Context, in StaffStep) error {
	id, err := parseID(in.BookingID)
	if err != nil {
		return err
	}
	after, _ := json.Marshal(map[string]string{"status": string(in.Outcome)})
	if err := a.Store.Orgs.RecordAdminAction(ctx, store.AdminAction{Actor: in.Staff, EventID: in.EventID, Action: in.Action,
		Target: "booking:" + in.BookingID, Reason: in.Reason, After: after}); err != nil {
		return err
	}
	if in.Outcome != vocab.BookingRefunded && in.Outcome != vocab.BookingCancelled {
		return nil
	}
	if err := a.Store.Bookings.MarkStaffCancel(ctx, id, in.Staff, in.Reason); err != nil {
		return err
	}
	if err := a.notifyCancellation(ctx, id, in.BookingID, in.Reason); err != nil && a.Log != nil {
		a.Log.Warn("cancellation email not sent", "booking", in.BookingID, "error", err)
	}
	return nil
}

// heartbeat records the activity's heartbeat every interval until the
// returned stop is called. Outside an activity (a test calling the method
// directly) it does nothing.
func heartbeat(ctx context.Context, interval time.Duration) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
