package hotels

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/store"
)

// Walks moves guests off an overbooked night. It is an idempotent service
// operation, not a Temporal workflow: the store's one transaction relocates,
// gives back and records every walk (walks_once_per_booking: never the same
// booking twice), and a retry of the same walk finds them recorded and only
// finishes what is left, the guests not yet told.
type Walks struct {
	Store  *store.Store
	Mailer notify.Mailer
	Log    *slog.Logger
	// Payments pays each walk's refund out of the booking's payment. Nil:
	// refunds stay recorded and unpaid until a walk call with a client
	// (a retry pays what is left).
	Payments *payments.Client
	// CompensationNights is the compensation of a walked guest, in nights
	// of the walked room's price (on top of the refunded night). 0: one.
	CompensationNights int
}

// WalkRequest is POST /v1/admin/properties/{property_id}/walks.
type WalkRequest struct {
	PropertyID string
	Night      time.Time
	// Rooms is how many bookings must have been walked off the night.
	Rooms int
}

// Walk walks bookings off the night until req.Rooms have been, refunds the
// night (recorded as the walk's refund), and tells each guest once. It
// returns every walk of the night.
func (w *Walks) Walk(ctx context.Context, req WalkRequest) ([]store.Walk, error) {
	if req.Rooms < 1 || req.Rooms > 1000 {
		return nil, &store.InvalidError{Field: "rooms", Message: "must be 1 to 1000"}
	}
	comp := w.CompensationNights
	if comp <= 0 {
		comp = 1
	}
	walks, err := w.Store.WalkBookings(ctx, req.PropertyID, req.Night, req.Rooms, comp)
	if err != nil {
		return nil, err
	}
	for i, wk := range walks {
		if err := w.refund(ctx, &walks[i]); err != nil {
			return walks, err
		}
		if wk.Notified {
			continue
		}
		if err := w.Mailer.Send(ctx, walkMessage(wk)); err != nil {
			return walks, fmt.Errorf("hotels: tell guest of booking %s: %w", wk.ReservationID, err)
		}
		if err := w.Store.MarkWalkNotified(ctx, wk.ReservationID); err != nil {
			return walks, err
		}
		walks[i].Notified = true
	}
	return walks, nil
}

// refund pays a walk's refund at the provider: a partial refund of the
// booking's payment whose idempotency key is the walk's, so a retry after a
// lost answer is the same refund; its ID is recorded.
func (w *Walks) refund(ctx context.Context, wk *store.Walk) error {
	if w.Payments == nil || wk.RefundID != "" || wk.Refund == 0 {
		return nil
	}
	if wk.IntentID == "" {
		return fmt.Errorf("hotels: walk %d: booking %s has no payment to refund", wk.ID, wk.ReservationID)
	}
	r, err := w.Payments.RefundAmount(ctx, WalkRefundKey(wk.ReservationID.String(), wk.ID), wk.IntentID, wk.Refund)
	if err != nil {
		return fmt.Errorf("hotels: refund walk %d: %w", wk.ID, err)
	}
	if err := w.Store.MarkWalkRefunded(ctx, wk.ID, r.ID); err != nil {
		return err
	}
	wk.RefundID = r.ID
	return nil
}

// WalkRefundKey is the provider's idempotency key of a walk's refund.
func WalkRefundKey(bookingID string, walkID int64) string {
	return bookingID + ":walk-" + strconv.FormatInt(walkID, 10)
}

func walkMessage(wk store.Walk) notify.Message {
	refund := money.Money{Amount: wk.Refund, Currency: wk.Currency}
	comp := money.Money{Amount: wk.Compensation, Currency: wk.Currency}
	return notify.Message{
		To:      wk.UserID + "@fans.invalid",
		Subject: "Your hotel room on " + wk.Night.Format(time.DateOnly) + " has moved",
		Key:     "walk-" + wk.ReservationID.String(),
		Body: fmt.Sprintf("We are sorry: %s is full on the night of %s. Your room is booked at %s (%s) that night at no cost to you.\n"+
			"The night at %s is refunded (%s) and we add %s in compensation.\nBooking %s",
			wk.FromProperty, wk.Night.Format(time.DateOnly), wk.ToProperty, wk.ToRoomType, wk.FromProperty,
			formatMoney(refund), formatMoney(comp), wk.ReservationID),
	}
}

func formatMoney(m money.Money) string {
	return fmt.Sprintf("%d.%02d %s", m.Amount/100, m.Amount%100, m.Currency)
}
