package workflows

import (
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/vocab"
)

// ThreeDSExtension is how much longer a hold lives, once, while a 3-D Secure
// challenge is open.
const ThreeDSExtension = 5 * time.Minute

func (b *booking) registerUpdates(ctx workflow.Context) error {
	// A handler registered anew adds no command to a recorded history: only
	// new Updates reach it, so adding one needs no version.
	handlers := []struct {
		name      string
		handler   any
		validator any
	}{
		{UpdateCheckout, b.checkout, b.validateCheckout},
		{UpdateCancel, b.cancel, b.validateCancel},
		{UpdateStaffCancel, b.staffCancel, b.validateStaffCancel},
		{UpdateRetryNow, b.retryNow, b.validateRetryNow},
		{UpdateRefundAndClose, b.refundAndClose, b.validateRefundAndClose},
	}
	for _, h := range handlers {
		err := workflow.SetUpdateHandlerWithOptions(ctx, h.name, h.handler,
			workflow.UpdateHandlerOptions{Validator: h.validator})
		if err != nil {
			return err
		}
	}
	return nil
}

// validateRetryNow refuses, without writing history, a retry-now with no
// provider step waiting to be asked again.
func (b *booking) validateRetryNow(_ workflow.Context, req StaffCancelRequest) error {
	if err := staffNamed(req); err != nil {
		return err
	}
	if b.pending == nil {
		return appErr(ErrTypeNothingToRetry, "no provider step of this booking is waiting to retry")
	}
	return nil
}

// retryNow cuts the backoff of the pending provider step: its regular
// activity is cancelled and scheduled again at once, under the same step
// key (callProvider). It answers with the step's name, and the audit log
// records who asked.
func (b *booking) retryNow(ctx workflow.Context, req StaffCancelRequest) (string, error) {
	if b.pending == nil {
		return "", appErr(ErrTypeNothingToRetry, "the provider step finished before the retry")
	}
	b.pending.gen++
	name := b.pending.name
	return name, b.recordStaffStep(ctx, req, "booking.retry-now")
}

// validateRefundAndClose refuses what refund-and-close cannot act on now:
// a booking still starting or answering a checkout (seconds), one being
// cancelled already, or one that has ended.
func (b *booking) validateRefundAndClose(_ workflow.Context, req StaffCancelRequest) error {
	if err := staffNamed(req); err != nil {
		return err
	}
	switch {
	case !b.loaded:
		return appErr(ErrTypeBusy, "the booking is starting; try again shortly")
	case b.checkoutBusy:
		return appErr(ErrTypeBusy, "a checkout of this booking is being answered; try again shortly")
	case b.status == vocab.BookingPendingPayment:
		return nil
	case b.status == vocab.BookingPaid:
		if b.step != vocab.StepPaid && b.step != vocab.StepDone {
			return appErr(ErrTypeBusy, "the booking is still being completed; try again shortly")
		}
		return nil
	}
	return appErr(ErrTypeNotPending, "the booking is "+string(b.status))
}

// refundAndClose gives the money back and ends the booking, wherever it is:
// a hold awaiting payment is released (its authorisation voided); a sale
// whose capture keeps failing stops retrying, is undone and refunded (sell);
// a paid booking is cancelled and refunded as by staff-cancel. Every path
// leaves an audit record and the fan's e-mail (recordStaffStep).
func (b *booking) refundAndClose(ctx workflow.Context, req StaffCancelRequest) (vocab.BookingStatus, error) {
	b.byStaff = true
	if b.status == vocab.BookingPendingPayment {
		if b.selling() {
			b.closing = true
		} else {
			b.release = true
		}
		if err := workflow.Await(ctx, func() bool { return b.status != vocab.BookingPendingPayment }); err != nil {
			return "", err
		}
	}
	if b.status == vocab.BookingPaid {
		// Paid before the close took effect (the capture succeeded): the
		// sale settles, then is cancelled and refunded.
		if err := workflow.Await(ctx, func() bool { return b.step == vocab.StepPaid || b.step == vocab.StepDone }); err != nil {
			return "", err
		}
		if _, err := b.cancel(ctx); err != nil {
			return "", err
		}
	}
	return b.status, b.recordStaffStep(ctx, req, "booking.refund-and-close")
}

// staffNamed refuses a support Update that does not say who sends it: the
// audit record needs its actor (the Temporal UI sends what staff type in).
func staffNamed(req StaffCancelRequest) error {
	if strings.TrimSpace(req.Staff) == "" {
		return appErr(ErrTypeStaffRequired, `say who you are: {"Staff": "<your user ID>", "Reason": "<why>"}`)
	}
	return nil
}

// recordStaffStep writes the audit record of a support action, with the
// fan's e-mail when it gave the money back (activities.RecordStaffStep).
func (b *booking) recordStaffStep(ctx workflow.Context, req StaffCancelRequest, action string) error {
	return workflow.ExecuteLocalActivity(db(ctx, "audit "+action+" by "+req.Staff), a.RecordStaffStep, activities.StaffStep{
		BookingID: b.in.ReservationID, EventID: b.in.EventID, Staff: req.Staff, Reason: req.Reason,
		Action: action, Outcome: b.status,
	}).Get(ctx, nil)
}

// staffCancel is the fan's cancel without the event's deadline or the stays'
// penalty. Sent from the Temporal UI (not Audited), the saga writes the
// audit record and the fan's e-mail itself: every refund path leaves both.
func (b *booking) staffCancel(ctx workflow.Context, req StaffCancelRequest) (vocab.BookingStatus, error) {
	b.byStaff = true
	status, err := b.cancel(ctx)
	if err != nil || req.Audited ||
		workflow.GetVersion(ctx, versionStaffCancelAudited, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return status, err
	}
	return status, b.recordStaffStep(ctx, req, "booking.staff-cancel")
}

// validateStaffCancel is validateCancel without the event's deadline; one
// the saga must audit says who sends it.
func (b *booking) validateStaffCancel(ctx workflow.Context, req StaffCancelRequest) error {
	if !req.Audited {
		if err := staffNamed(req); err != nil {
			return err
		}
	}
	if b.loaded && b.status == vocab.BookingPaid {
		if b.step != vocab.StepPaid && b.step != vocab.StepDone {
			return appErr(ErrTypeBusy, "the booking is still being completed; try again shortly")
		}
		return nil
	}
	return b.validateCancel(ctx)
}

func appErr(typ, msg string, details ...any) error {
	return temporal.NewApplicationError(msg, typ, details...)
}

// validateCheckout refuses, without writing history, a checkout that cannot
// proceed.
func (b *booking) validateCheckout(ctx workflow.Context, _ CheckoutRequest) error {
	if !b.loaded {
		return nil // checked again by the handler once the hold is adopted
	}
	return b.checkoutAllowed(ctx)
}

func (b *booking) checkoutAllowed(ctx workflow.Context) error {
	switch {
	case b.status == vocab.BookingExpired || (b.status == vocab.BookingPendingPayment && (b.expired || !workflow.Now(ctx).Before(b.deadline))):
		return appErr(ErrTypeHoldExpired, "the hold has expired")
	case b.status != vocab.BookingPendingPayment:
		return appErr(ErrTypeNotPending, "the booking is "+string(b.status))
	case b.checkoutBusy || b.step != vocab.StepAwaitingCheckout:
		return appErr(ErrTypeBusy, "a payment is already in progress for this booking")
	case b.attempts >= b.in.MaxAttempts:
		return appErr(ErrTypeDeclined, "no payment attempts left")
	}
	return nil
}

// checkout runs fraud and authorisation and answers with the client secret.
func (b *booking) checkout(ctx workflow.Context, req CheckoutRequest) (CheckoutResult, error) {
	if !b.loaded {
		if err := workflow.Await(ctx, func() bool { return b.loaded }); err != nil {
			return CheckoutResult{}, err
		}
		if err := b.checkoutAllowed(ctx); err != nil {
			return CheckoutResult{}, err
		}
	}
	b.checkoutBusy = true
	defer func() { b.checkoutBusy = false }()
	b.attempts++
	b.setStep(ctx, vocab.StepAuthorising)

	var fr activities.FraudResult
	if err := workflow.ExecuteLocalActivity(fraudCtx(ctx), a.FraudCheck, activities.FraudInput{
		BookingID: b.in.ReservationID, UserID: b.hold.UserID, EventID: b.hold.EventID,
		IP: req.IP, IPRef: req.IPRef, DeviceID: req.DeviceID, Card: req.PaymentMethod, Attempt: b.attempts,
	}).Get(ctx, &fr); err != nil {
		b.setStep(ctx, vocab.StepAwaitingCheckout)
		return CheckoutResult{}, appErr(ErrTypeUnavailable, "fraud check unavailable")
	}
	if fr.Decision == vocab.FraudDeny {
		b.denied = true
		return CheckoutResult{}, appErr(ErrTypeRefused, "this payment was refused", fr.Reasons)
	}

	b.armVoid() // registered before the authorisation it undoes
	var ar activities.AuthoriseResult
	err := b.callProvider(ctx, b.authoriseStep(activities.AuthoriseInput{
		BookingID: b.in.ReservationID, Attempt: b.attempts, IntentID: b.intentID,
		PaymentMethod: req.PaymentMethod, ReturnURL: req.ReturnURL, Amount: b.hold.Total, StepUp: fr.Decision == vocab.FraudReview,
	}), &ar)
	if err != nil {
		b.setStep(ctx, vocab.StepAwaitingCheckout)
		return CheckoutResult{}, appErr(ErrTypeUnavailable, "the payment provider did not answer; try again")
	}
	if ar.IntentID != "" {
		b.intentID = ar.IntentID
	}
	switch b.status {
	case vocab.BookingPendingPayment:
	case vocab.BookingPaid:
		// The provider's event overtook this answer and the sale went through.
		return CheckoutResult{BookingID: b.in.ReservationID, Status: vocab.BookingPaid, ExpiresAt: b.deadline,
			Payment: PaymentView{IntentID: b.intentID, ClientSecret: ar.ClientSecret, Status: ar.Status}}, nil
	default:
		// The expiry timer fired during authorisation: the hold is gone and
		// the authorisation is voided by the compensation that follows.
		return CheckoutResult{}, appErr(ErrTypeHoldExpired, "the hold expired during payment; nothing was charged")
	}
	if ar.Declined {
		b.setStep(ctx, vocab.StepAwaitingCheckout)
		if b.attempts >= b.in.MaxAttempts {
			b.declinedOut = true
		}
		return CheckoutResult{}, appErr(ErrTypeDeclined, "the card was declined", ar.DeclineCode, b.in.MaxAttempts-b.attempts)
	}
	if ar.Status == vocab.IntentRequiresAction && !b.extended {
		var at time.Time
		if err := workflow.ExecuteLocalActivity(db(ctx, "extend the hold for 3-D Secure"), a.ExtendHold, b.in.ReservationID, ThreeDSExtension).Get(ctx, &at); err == nil && at.After(b.deadline) {
			b.deadline = at
		}
		b.extended = true
	}
	b.setStep(ctx, vocab.StepAwaitingPayment)
	status := vocab.BookingPendingPayment
	if ar.Status == vocab.IntentRequiresCapture {
		status = vocab.BookingAuthorised
	}
	return CheckoutResult{BookingID: b.in.ReservationID, Status: status, ExpiresAt: b.deadline,
		Payment: PaymentView{IntentID: ar.IntentID, ClientSecret: ar.ClientSecret, Status: ar.Status, NextAction: ar.NextActionURL}}, nil
}

func (b *booking) validateCancel(ctx workflow.Context) error {
	if !b.loaded {
		return appErr(ErrTypeBusy, "the booking is starting; try again shortly")
	}
	switch b.status {
	case vocab.BookingPendingPayment:
		if b.selling() {
			// The sale is being confirmed and captured: the database may
			// already say PAID while this booking still reads pending. A
			// cancel taken now would only ask the hold to be released, be
			// answered PAID once the sale lands, and refund nothing; the
			// caller retries once the sale has settled either way.
			return appErr(ErrTypeBusy, "the booking is being paid for; try again shortly")
		}
		return nil
	case vocab.BookingPaid:
		if !workflow.Now(ctx).Before(b.hold.CancelBy) {
			return appErr(ErrTypeNotAllowed, "the cancellation deadline of this event has passed")
		}
		if b.step != vocab.StepPaid && b.step != vocab.StepDone {
			return appErr(ErrTypeBusy, "the booking is still being completed; try again shortly")
		}
		return nil
	}
	return appErr(ErrTypeNotPending, "the booking is "+string(b.status))
}

// selling says sell is between its confirm and the booking's new status
// (confirm, capture, or the compensation of a confirm or capture that
// failed).
func (b *booking) selling() bool {
	switch b.step {
	case vocab.StepConfirming, vocab.StepCapturing, vocab.StepCompensating:
		return true
	}
	return false
}

// cancel releases a pending hold, or cancels a paid booking: tickets revoked,
// seats back, the money refunded under a stable step key.
func (b *booking) cancel(ctx workflow.Context) (vocab.BookingStatus, error) {
	if b.status == vocab.BookingPendingPayment {
		b.release = true
		if err := workflow.Await(ctx, func() bool { return b.status != vocab.BookingPendingPayment }); err != nil {
			return "", err
		}
		return b.status, nil
	}
	b.setStep(ctx, vocab.StepCancelling)
	b.comp = nil
	b.comp.add(undoCapture, b.cancelRefund) // runs after the sale is undone
	b.comp.add(undoSale, b.cancelSale)
	if err := b.comp.run(ctx); err != nil {
		return "", err
	}
	b.setStatus(ctx, vocab.BookingRefunded)
	b.setStep(ctx, vocab.StepDone)
	return b.status, nil
}
