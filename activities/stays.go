package activities

import (
	"context"

	"github.com/encore-tickets/encore/vocab"
)

// RefundPart refunds amount of the booking's captured payment under the
// refund step key: a cancellation past the stays' free window, less its
// penalty. Nights already refunded by walks are not refunded again (they
// come off amount). An uncaptured authorisation is voided instead.
func (a *Booking) RefundPart(ctx context.Context, bookingID, intentID string, amount int64) error {
	id, captured, err := a.captured(ctx, bookingID, intentID)
	if err != nil || !captured {
		return err
	}
	walked, err := a.Store.Hotels.WalkRefunds(ctx, id)
	if err != nil {
		return err
	}
	if amount -= walked; amount <= 0 {
		return a.Store.Bookings.SetPaymentStatus(ctx, id, vocab.PaymentRefunded, "")
	}
	r, err := a.Payments.RefundAmount(ctx, StepKey(bookingID, StepKeyRefund), intentID, amount)
	if err != nil {
		return err
	}
	return a.refunded(ctx, id, bookingID, r)
}
