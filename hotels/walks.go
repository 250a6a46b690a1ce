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

// Walks moves guests off an overbooked night, in three steps that are each
// safe to repeat: Relocate (one store transaction relocates, gives back and
// records every walk; walks_once_per_booking: never the same booking twice),
// PayRefund (the provider's idempotency key is the walk's) and Tell (once
// per walk). In production the steps run as activities of the saga's walk
// workflow, so a crash between them resumes where it stopped; Walk runs them
// in-process, in the same order, for relocations only (a booking with
// nowhere to go is cancelled by the workflow, through its booking's saga).
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

// Validate refuses a walk of fewer than one or more than 1,000 rooms.
func (r WalkRequest) Validate() error {
	if r.Rooms < 1 || r.Rooms > 1000 {
		return &store.InvalidError{Field: "rooms", Message: "must be 1 to 1000"}
	}
	return nil
}

// Walk walks bookings off the night until req.Rooms have been, refunds the
// night (recorded as the walk's refund), and tells each guest once. It
// returns every walk of the night.
func (w *Walks) Walk(ctx context.Context, req WalkRequest) ([]store.Walk, error) {
	walks, err := w.Relocate(ctx, req)
	if err != nil {
		return nil, err
	}
	for i := range walks {
		if walks[i].Outcome == store.WalkCancelled && !walks[i].Notified {
			// Cancelling the booking is its booking workflow's job: only the
			// walk workflow (saga.WalkGuests) finishes this walk.
			return walks, fmt.Errorf("hotels: booking %s has nowhere to go: the walk workflow cancels and refunds it", walks[i].ReservationID)
		}
		if err := w.PayRefund(ctx, &walks[i]); err != nil {
			return walks, err
		}
		if err := w.Tell(ctx, &walks[i]); err != nil {
			return walks, err
		}
	}
	return walks, nil
}

// Relocate walks bookings off the night until req.Rooms have been (earlier
// walks count) and returns every walk of the night.
func (w *Walks) Relocate(ctx context.Context, req WalkRequest) ([]store.Walk, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	comp := w.CompensationNights
	if comp <= 0 {
		comp = 1
	}
	return w.Store.Hotels.WalkBookings(ctx, req.PropertyID, req.Night, req.Rooms, comp)
}

// Tell emails the walked guest, unless that was done: the address is the
// one the booking's token carried.
func (w *Walks) Tell(ctx context.Context, wk *store.Walk) error {
	if wk.Notified {
		return nil
	}
	if wk.Outcome == store.WalkCancelled {
		// The booking's cancellation told the guest (and refunded them).
		if err := w.Store.Hotels.MarkWalkNotified(ctx, wk.ReservationID); err != nil {
			return err
		}
		wk.Notified = true
		return nil
	}
	to, err := w.Store.Bookings.FanEmail(ctx, wk.ReservationID)
	if err != nil {
		return err
	}
	if to == "" {
		to = wk.UserID + "@fans.invalid" // the token had no email: nowhere real to send to
	}
	if err := w.Mailer.Send(ctx, walkMessage(to, *wk)); err != nil {
		return fmt.Errorf("hotels: tell guest of booking %s: %w", wk.ReservationID, err)
	}
	if err := w.Store.Hotels.MarkWalkNotified(ctx, wk.ReservationID); err != nil {
		return err
	}
	wk.Notified = true
	return nil
}

// PayRefund pays a walk's refund at the provider: a partial refund of the
// booking's payment whose idempotency key is the walk's, so a retry after a
// lost answer is the same refund; its ID is recorded. Without Payments it
// does nothing (the refund stays recorded, unpaid).
func (w *Walks) PayRefund(ctx context.Context, wk *store.Walk) error {
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
	if err := w.Store.Hotels.MarkWalkRefunded(ctx, wk.ID, r.ID); err != nil {
		return err
	}
	wk.RefundID = r.ID
	return nil
}

// WalkRefundKey is the provider's idempotency key of a walk's refund.
func WalkRefundKey(bookingID string, walkID int64) string {
	return bookingID + ":walk-" + strconv.FormatInt(walkID, 10)
}

func walkMessage(to string, wk store.Walk) notify.Message {
	refund := money.Money{Amount: wk.Refund, Currency: wk.Currency}
	comp := money.Money{Amount: wk.Compensation, Currency: wk.Currency}
	return notify.Message{
		To:      to,
		Subject: "Your hotel room on " + wk.Night.Format(time.DateOnly) + " has moved",
		Key:     "walk-" + wk.ReservationID.String(),
		Body: fmt.Sprintf("We are sorry: %s is full on the night of %s. Your room is booked at %s (%s) that night at no cost to you.\n"+
			"The night at %s is refunded (%s) and we add %s in compensation.\nBooking %s",
			wk.FromProperty, wk.Night.Format(time.DateOnly), wk.ToProperty, wk.ToRoomType, wk.FromProperty,
			money.Format(refund), money.Format(comp), wk.ReservationID),
	}
}
