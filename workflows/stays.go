package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

// isUnsellable says the confirm found the hold's nights no longer held.
func isUnsellable(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == activities.ErrTypeUnsellable
}

// unsellable compensates a confirm that could not sell the hold: the store
// sold nothing (seats and stays go together), so the authorisation is voided,
// staff are told, and the hold is given back as FAILED.
func (b *booking) unsellable(ctx workflow.Context, cause error) error {
	b.setStep(ctx, vocab.StepCompensating)
	b.comp = b.comp[:len(b.comp)-1] // nothing was sold: no sale to undo
	if err := b.flag(ctx, "the hold could not be sold: "+cause.Error()); err != nil {
		return err
	}
	if err := b.comp.run(ctx); err != nil {
		return err
	}
	return b.endHold(ctx, h.ReleaseHold, vocab.BookingFailed)
}

// cancelRefund is the refund of a cancelled paid booking. Within the stays'
// free window (or without stays) everything left is refunded; past it the
// first night of each stay is kept and the rest refunded as one partial
// refund under the same refund step key, so a retried cancel refunds once.
// The penalty is the fan's policy: staff (support, or the organiser
// cancelling the event) refund everything.
func (b *booking) cancelRefund(ctx workflow.Context) error {
	if refund := b.hold.FanRefund(workflow.Now(ctx)); refund != b.hold.Total && !b.staffWaives(ctx) &&
		workflow.GetVersion(ctx, versionStayPenalty, workflow.DefaultVersion, 1) == 1 {
		amount := refund.Amount
		return b.settle(b.callProvider(ctx, providerStep{name: "partial refund", key: activities.StepKey(b.in.ReservationID, activities.StepKeyRefund),
			amount: money.Money{Amount: amount, Currency: b.hold.Total.Currency}, fn: a.RefundPart, args: []any{b.in.ReservationID, b.intentID, amount}}, nil))
	}
	return b.refundPayment(ctx)
}

// staffWaives says a staff cancel skips the stays' penalty. The version is
// asked only on that path, so histories without a staff cancel are untouched.
func (b *booking) staffWaives(ctx workflow.Context) bool {
	return b.byStaff && workflow.GetVersion(ctx, versionStaffWaivesPenalty, workflow.DefaultVersion, 1) == 1
}
