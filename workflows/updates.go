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

// updates are the booking's Update handlers and their validators: what
// the fan's checkout and cancel, and support's steering, may ask of a
// running saga, and when each is refused.
type updates struct{ b *booking }

func (u updates) register(ctx workflow.Context) error {
	// A handler registered anew adds no command to a recorded history: only
	// new Updates reach it, so adding one needs no version.
	handlers := []struct {
		name      string
		handler   any
		validator any
	}{
		{UpdateCheckout, u.checkout, u.validateCheckout},
		{UpdateCancel, u.cancel, u.validateCancel},
		{UpdateStaffCancel, u.staffCancel, u.validateStaffCancel},
		{UpdateRetryNow, u.retryNow, u.validateRetryNow},
		{UpdateRefundAndClose, u.refundAndClose, u.validateRefundAndClose},
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
func (u updates) validateRetryNow(_ workflow.Context, req StaffCancelRequest) error {
	if err := staffNamed(req); err != nil {
		return err
	}
	if u.b.pending == nil {
		return appErr(ErrTypeNothingToRetry, "no provider step of this booking is waiting to retry")
	}
	return nil
}

// retryNow cuts the backoff of the pending provider step: its regular
// activity is cancelled and scheduled again at once, under the same step
// key (callProvider). It answers with the step's name, and the audit log
// records who asked.
func (u updates) retryNow(ctx workflow.Context, req StaffCancelRequest) (string, error) {
	if u.b.pending == nil {
		return "", appErr(ErrTypeNothingToRetry, "the provider step finished before the retry")
	}
	u.b.pending.gen++
	name := u.b.pending.name
	return name, u.recordStaffStep(ctx, req, "booking.retry-now")
}

// validateRefundAndClose refuses what refund-and-close cannot act on now:
// a booking still starting or answering a checkout (seconds), one being
// cancelled already, or one that has ended.
func (u updates) validateRefundAndClose(_ workflow.Context, req StaffCancelRequest) error {
	if err := staffNamed(req); err != nil {
		return err
	}
	switch {
	case !u.b.loaded:
		return appErr(ErrTypeBusy, "the booking is starting; try again shortly")
	case u.b.checkoutBusy:
		return appErr(ErrTypeBusy, "a checkout of this booking is being answered; try again shortly")
	case u.b.status == vocab.BookingPendingPayment:
		return nil
	case u.b.status == vocab.BookingPaid:
		if u.b.step != vocab.StepPaid && u.b.step != vocab.StepDone {
			return appErr(ErrTypeBusy, "the booking is still being completed; try again shortly")
		}
		return nil
	}
	return appErr(ErrTypeNotPending, "the booking is "+string(u.b.status))
}

// refundAndClose gives the money back and ends the booking, wherever it is:
// a hold awaiting payment is released (its authorisation voided); a sale
// whose capture keeps failing stops retrying, is undone and refunded (sell);
// a paid booking is cancelled and refunded as by staff-cancel. Every path
// leaves an audit record and the fan's e-mail (recordStaffStep).
func (u updates) refundAndClose(ctx workflow.Context, req StaffCancelRequest) (vocab.BookingStatus, error) {
	u.b.byStaff = true
	if u.b.status == vocab.BookingPendingPayment {
		if u.selling() {
			u.b.closing = true
		} else {
			u.b.release = true
		}
		if err := workflow.Await(ctx, func() bool { return u.b.status != vocab.BookingPendingPayment }); err != nil {
			return "", err
		}
	}
	if u.b.status == vocab.BookingPaid {
		// Paid before the close took effect (the capture succeeded): the
		// sale settles, then is cancelled and refunded.
		if err := workflow.Await(ctx, func() bool { return u.b.step == vocab.StepPaid || u.b.step == vocab.StepDone }); err != nil {
			return "", err
		}
		if _, err := u.cancel(ctx); err != nil {
			return "", err
		}
	}
	return u.b.status, u.recordStaffStep(ctx, req, "booking.refund-and-close")
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
func (u updates) recordStaffStep(ctx workflow.Context, req StaffCancelRequest, action string) error {
	return workflow.ExecuteLocalActivity(db(ctx, "audit "+action+" by "+req.Staff), a.RecordStaffStep, activities.StaffStep{
		BookingID: u.b.in.ReservationID, EventID: u.b.in.EventID, Staff: req.Staff, Reason: req.Reason,
		Action: action, Outcome: u.b.status,
	}).Get(ctx, nil)
}

// staffCancel is the fan's cancel without the event's deadline or the stays'
// penalty. The saga writes the audit record and the fan's e-mail itself,
// whoever sent the Update and whatever it claims: every refund path leaves
// both, and no sender can skip them.
func (u updates) staffCancel(ctx workflow.Context, req StaffCancelRequest) (vocab.BookingStatus, error) {
	u.b.byStaff = true
	status, err := u.cancel(ctx)
	if err != nil {
		return status, err
	}
	if status == vocab.BookingPaid && workflow.GetVersion(ctx, versionStaffCancelUndoesTheSale, workflow.DefaultVersion, 1) == 1 {
		// Taken while the hold read pending, the cancel asked for its
		// release and the sale landed instead. Staff asked for the money
		// back: once the sale has settled, it is cancelled and refunded,
		// rather than answered PAID with nothing done (a job's retry under
		// the same Update ID would only get that answer again).
		if err := workflow.Await(ctx, func() bool {
			return u.b.status != vocab.BookingPaid || u.b.step == vocab.StepPaid || u.b.step == vocab.StepDone
		}); err != nil {
			return "", err
		}
		if u.b.status == vocab.BookingPaid {
			if status, err = u.cancel(ctx); err != nil {
				return status, err
			}
		} else {
			status = u.b.status
		}
	}
	if workflow.GetVersion(ctx, versionStaffCancelAlwaysAudited, workflow.DefaultVersion, 1) == workflow.DefaultVersion &&
		(req.Audited || workflow.GetVersion(ctx, versionStaffCancelAudited, workflow.DefaultVersion, 1) == workflow.DefaultVersion) {
		return status, nil
	}
	return status, u.recordStaffStep(ctx, req, "booking.staff-cancel")
}

// validateStaffCancel is validateCancel without the event's deadline; the
// sender says who it is, for the audit record.
func (u updates) validateStaffCancel(ctx workflow.Context, req StaffCancelRequest) error {
	if err := staffNamed(req); err != nil {
		return err
	}
	if u.b.loaded && u.b.status == vocab.BookingPaid {
		if u.b.step != vocab.StepPaid && u.b.step != vocab.StepDone {
			return appErr(ErrTypeBusy, "the booking is still being completed; try again shortly")
		}
		return nil
	}
	return u.validateCancel(ctx)
}

func appErr(typ, msg string, details ...any) error {
	return temporal.NewApplicationError(msg, typ, details...)
}

// validateCheckout refuses, without writing history, a checkout that cannot
// proceed.
func (u updates) validateCheckout(ctx workflow.Context, _ CheckoutRequest) error {
	if !u.b.loaded {
		return nil // checked again by the handler once the hold is adopted
	}
	return u.checkoutAllowed(ctx)
}

func (u updates) checkoutAllowed(ctx workflow.Context) error {
	switch {
	case u.b.status == vocab.BookingExpired || (u.b.status == vocab.BookingPendingPayment && (u.b.expired || !workflow.Now(ctx).Before(u.b.deadline))):
		return appErr(ErrTypeHoldExpired, "the hold has expired")
	case u.b.status != vocab.BookingPendingPayment:
		return appErr(ErrTypeNotPending, "the booking is "+string(u.b.status))
	case u.b.checkoutBusy || u.b.step != vocab.StepAwaitingCheckout:
		return appErr(ErrTypeBusy, "a payment is already in progress for this booking")
	case u.b.attempts >= u.b.in.MaxAttempts:
		return appErr(ErrTypeDeclined, "no payment attempts left")
	}
	return nil
}

// checkout runs fraud and authorisation and answers with the client secret.
func (u updates) checkout(ctx workflow.Context, req CheckoutRequest) (CheckoutResult, error) {
	if !u.b.loaded {
		if err := workflow.Await(ctx, func() bool { return u.b.loaded }); err != nil {
			return CheckoutResult{}, err
		}
		if err := u.checkoutAllowed(ctx); err != nil {
			return CheckoutResult{}, err
		}
	}
	u.b.checkoutBusy = true
	defer func() { u.b.checkoutBusy = false }()
	u.b.attempts++
	u.b.setStep(ctx, vocab.StepAuthorising)

	var fr activities.FraudResult
	if err := workflow.ExecuteLocalActivity(fraudCtx(ctx), a.FraudCheck, activities.FraudInput{
		BookingID: u.b.in.ReservationID, UserID: u.b.hold.UserID, EventID: u.b.hold.EventID,
		IP: req.IP, IPRef: req.IPRef, DeviceID: req.DeviceID, Card: req.PaymentMethod, Attempt: u.b.attempts,
	}).Get(ctx, &fr); err != nil {
		u.checkoutStep(ctx, vocab.StepAwaitingCheckout)
		return CheckoutResult{}, appErr(ErrTypeUnavailable, "fraud check unavailable")
	}
	if fr.Decision == vocab.FraudDeny {
		u.b.denied = true
		return CheckoutResult{}, appErr(ErrTypeRefused, "this payment was refused", fr.Reasons)
	}

	u.b.armVoid() // registered before the authorisation it undoes
	var ar activities.AuthoriseResult
	err := u.b.callProvider(ctx, authoriseStep(activities.AuthoriseInput{
		BookingID: u.b.in.ReservationID, Attempt: u.b.attempts, IntentID: u.b.intentID,
		PaymentMethod: req.PaymentMethod, ReturnURL: req.ReturnURL, Amount: u.b.hold.Total, StepUp: fr.Decision == vocab.FraudReview,
	}), &ar)
	if err != nil {
		u.checkoutStep(ctx, vocab.StepAwaitingCheckout)
		return CheckoutResult{}, appErr(ErrTypeUnavailable, "the payment provider did not answer; try again")
	}
	if ar.IntentID != "" {
		u.b.intentID = ar.IntentID
		if ar.Status == vocab.IntentRequiresCapture && !ar.Declined {
			u.b.authorisedIntent = ar.IntentID
		}
	}
	switch u.b.status {
	case vocab.BookingPendingPayment:
	case vocab.BookingPaid:
		// The provider's event overtook this answer and the sale went through.
		return CheckoutResult{BookingID: u.b.in.ReservationID, Status: vocab.BookingPaid, ExpiresAt: u.b.deadline,
			Payment: PaymentView{IntentID: u.b.intentID, ClientSecret: ar.ClientSecret, Status: ar.Status}}, nil
	default:
		// The expiry timer fired during authorisation: the hold is gone and
		// the authorisation is voided by the compensation that follows.
		return CheckoutResult{}, appErr(ErrTypeHoldExpired, "the hold expired during payment; nothing was charged")
	}
	if ar.Declined {
		u.checkoutStep(ctx, vocab.StepAwaitingCheckout)
		if u.b.attempts >= u.b.in.MaxAttempts {
			u.b.declinedOut = true
		}
		return CheckoutResult{}, appErr(ErrTypeDeclined, "the card was declined", ar.DeclineCode, u.b.in.MaxAttempts-u.b.attempts)
	}
	if ar.Status == vocab.IntentRequiresAction && !u.b.extended {
		var at time.Time
		if err := workflow.ExecuteLocalActivity(db(ctx, "extend the hold for 3-D Secure"), a.ExtendHold, u.b.in.ReservationID, ThreeDSExtension).Get(ctx, &at); err == nil && at.After(u.b.deadline) {
			u.b.deadline = at
		}
		u.b.extended = true
	}
	u.checkoutStep(ctx, vocab.StepAwaitingPayment)
	status := vocab.BookingPendingPayment
	if ar.Status == vocab.IntentRequiresCapture {
		status = vocab.BookingAuthorised
	}
	return CheckoutResult{BookingID: u.b.in.ReservationID, Status: status, ExpiresAt: u.b.deadline,
		Payment: PaymentView{IntentID: ar.IntentID, ClientSecret: ar.ClientSecret, Status: ar.Status, NextAction: ar.NextActionURL}}, nil
}

// checkoutStep moves the booking to step s once the checkout has its
// answer, unless something else moved the booking on while the checkout
// waited (its step is no longer authorising): the provider's event that
// overtook the answer is selling (confirming, capturing, compensating), or
// the hold ended. Overwriting that step made the sale read as not selling
// (selling), so a cancel taken during its capture was accepted as the
// release of a pending hold and refunded nothing, and another checkout could
// start against an intent being captured.
func (u updates) checkoutStep(ctx workflow.Context, s vocab.Step) {
	if u.b.step != vocab.StepAuthorising &&
		workflow.GetVersion(ctx, versionCheckoutKeepsTheSaleStep, workflow.DefaultVersion, 1) == 1 {
		return
	}
	u.b.setStep(ctx, s)
}

func (u updates) validateCancel(ctx workflow.Context) error {
	if !u.b.loaded {
		return appErr(ErrTypeBusy, "the booking is starting; try again shortly")
	}
	switch u.b.status {
	case vocab.BookingPendingPayment:
		if u.selling() {
			// The sale is being confirmed and captured: the database may
			// already say PAID while this booking still reads pending. A
			// cancel taken now would only ask the hold to be released, be
			// answered PAID once the sale lands, and refund nothing; the
			// caller retries once the sale has settled either way.
			return appErr(ErrTypeBusy, "the booking is being paid for; try again shortly")
		}
		return nil
	case vocab.BookingPaid:
		if !u.b.hold.FanCanCancel(workflow.Now(ctx)) {
			return appErr(ErrTypeNotAllowed, "the cancellation deadline of this event has passed")
		}
		if u.b.step != vocab.StepPaid && u.b.step != vocab.StepDone {
			return appErr(ErrTypeBusy, "the booking is still being completed; try again shortly")
		}
		return nil
	}
	return appErr(ErrTypeNotPending, "the booking is "+string(u.b.status))
}

// selling says sell is between its confirm and the booking's new status
// (confirm, capture, or the compensation of a confirm or capture that
// failed).
func (u updates) selling() bool {
	switch u.b.step {
	case vocab.StepConfirming, vocab.StepCapturing, vocab.StepCompensating:
		return true
	}
	return false
}

// cancel releases a pending hold, or cancels a paid booking: tickets revoked,
// seats back, the money refunded under a stable step key.
func (u updates) cancel(ctx workflow.Context) (vocab.BookingStatus, error) {
	if u.b.status == vocab.BookingPendingPayment {
		u.b.release = true
		if err := workflow.Await(ctx, func() bool { return u.b.status != vocab.BookingPendingPayment }); err != nil {
			return "", err
		}
		return u.b.status, nil
	}
	u.b.setStep(ctx, vocab.StepCancelling)
	u.b.comp = nil
	u.b.comp.add(undoCapture, u.b.cancelRefund) // runs after the sale is undone
	u.b.comp.add(undoSale, u.b.cancelSale)
	if err := u.b.comp.run(ctx); err != nil {
		return "", err
	}
	u.b.setStatus(ctx, vocab.BookingRefunded)
	u.b.setStep(ctx, vocab.StepDone)
	return u.b.status, nil
}
