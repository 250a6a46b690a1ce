package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/store"
)

// WalkInput asks for Rooms bookings walked off PropertyID's Night (a date,
// YYYY-MM-DD): earlier walks of that night count towards Rooms.
type WalkInput struct {
	PropertyID string
	Night      string
	Rooms      int
}

// Walks are the hotel walk's activities. It shares Booking's dependencies
// (a conversion of the same struct, so whoever wires the saga's activities
// wires these too) but not its methods: walks are the hotel domain's.
type Walks Booking

func (a *Walks) walks() *hotels.Walks {
	return &hotels.Walks{Store: a.Store, Mailer: a.Mailer, Log: a.Log, Payments: a.Payments}
}

// RelocateGuests walks the night's bookings (hotels.Walks.Relocate).
func (a *Walks) RelocateGuests(ctx context.Context, in WalkInput) ([]store.Walk, error) {
	night, err := time.Parse(time.DateOnly, in.Night)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("bad night", ErrTypeInvalidID, err)
	}
	walks, err := a.walks().Relocate(ctx, hotels.WalkRequest{PropertyID: in.PropertyID, Night: night, Rooms: in.Rooms})
	var invalid *store.InvalidError
	if errors.As(err, &invalid) {
		return nil, temporal.NewNonRetryableApplicationError(invalid.Error(), ErrTypeInvalidID, err, invalid.Field, invalid.Message)
	}
	return walks, err
}

// RefundWalk pays the walk's refund at the provider, once
// (hotels.Walks.PayRefund).
func (a *Walks) RefundWalk(ctx context.Context, wk store.Walk) (store.Walk, error) {
	err := a.walks().PayRefund(ctx, &wk)
	return wk, err
}

// TellWalkedGuest emails a relocated guest, once (hotels.Walks.Tell); a
// cancelled one was told by the cancellation.
func (a *Walks) TellWalkedGuest(ctx context.Context, wk store.Walk) (store.Walk, error) {
	if wk.Outcome == store.WalkCancelled && !wk.Notified {
		// The cancellation's email is the guest's news, and its send is only
		// logged when it fails: the walk counts as told once it went out.
		if err := (*Booking)(a).notifyCancellation(ctx, wk.ReservationID, wk.ReservationID.String(),
			WalkCancelReason(wk.Night.Format(time.DateOnly))); err != nil {
			return wk, err
		}
	}
	err := a.walks().Tell(ctx, &wk)
	return wk, err
}

// WalkCancelReason is what a guest with nowhere to go is told: the walk
// workflow cancels the booking with it, and the cancellation email says it.
func WalkCancelReason(night string) string {
	return "the hotel cannot honour the night of " + night + " and no other hotel in town has a room"
}
