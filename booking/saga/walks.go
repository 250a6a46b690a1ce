package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

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

// WalkGuests relocates guests off an overbooked night: one activity walks
// the bookings (relocation, the night given back, the walk and its refund
// recorded, all in one transaction), then each walk's refund is paid and its
// guest told, each a step of its own. A guest no hotel in town has room for
// cannot keep the stay: that booking, a package's tickets with it (every
// part or none), is cancelled and refunded in full through its own booking
// workflow, as support staff would. A worker crash resumes at the step it
// stopped at; every step is safe to repeat, and no booking is walked twice.
func WalkGuests(ctx workflow.Context, in WalkInput) ([]store.Walk, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 20},
	})
	var walks []store.Walk
	if err := workflow.ExecuteActivity(actx, a.RelocateGuests, in).Get(ctx, &walks); err != nil {
		return nil, err
	}
	// A walk whose step fails for good is reported, and the others are
	// finished all the same: one guest's trouble never strands the rest.
	var failed []error
	for i := range walks {
		if err := walkOne(ctx, actx, in, &walks[i]); err != nil {
			failed = append(failed, fmt.Errorf("booking %s: %w", walks[i].ReservationID, err))
		}
	}
	return walks, errors.Join(failed...)
}

// walkCancelReason is what a guest with nowhere to go is told.
func walkCancelReason(night string) string {
	return "the hotel cannot honour the night of " + night + " and no other hotel in town has a room"
}

// walkOne finishes one walk: a booking with nowhere to go is cancelled and
// refunded whole first; then the walk's refund and the guest's email.
func walkOne(ctx, actx workflow.Context, in WalkInput, wk *store.Walk) error {
	if wk.Outcome == store.WalkCancelled && !wk.Notified {
		cancel := StaffInput{Action: StaffRefund, BookingID: wk.ReservationID.String(), Staff: "walk:" + in.PropertyID,
			Reason: walkCancelReason(in.Night)}
		if err := workflow.ExecuteActivity(actx, a.StaffAction, cancel).Get(ctx, nil); err != nil {
			return err
		}
	}
	if err := workflow.ExecuteActivity(actx, a.RefundWalk, *wk).Get(ctx, wk); err != nil {
		return err
	}
	return workflow.ExecuteActivity(actx, a.TellWalkedGuest, *wk).Get(ctx, wk)
}

// WalkWorkflowID is the walk workflow of one property's night: a second
// request while one runs joins it.
func WalkWorkflowID(propertyID, night string) string {
	return walkWorkflowIDPrefix + propertyID + "-" + night
}

func (a *Activities) walks() *hotels.Walks {
	return &hotels.Walks{Store: a.Store, Mailer: a.Mailer, Log: a.Log, Payments: a.Payments}
}

// RelocateGuests walks the night's bookings (hotels.Walks.Relocate).
func (a *Activities) RelocateGuests(ctx context.Context, in WalkInput) ([]store.Walk, error) {
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
func (a *Activities) RefundWalk(ctx context.Context, wk store.Walk) (store.Walk, error) {
	err := a.walks().PayRefund(ctx, &wk)
	return wk, err
}

// TellWalkedGuest emails a relocated guest, once (hotels.Walks.Tell); a
// cancelled one was told by the cancellation.
func (a *Activities) TellWalkedGuest(ctx context.Context, wk store.Walk) (store.Walk, error) {
	if wk.Outcome == store.WalkCancelled && !wk.Notified {
		// The cancellation's email is the guest's news, and its send is only
		// logged when it fails: the walk counts as told once it went out.
		if err := a.notifyCancellation(ctx, wk.ReservationID, wk.ReservationID.String(),
			walkCancelReason(wk.Night.Format(time.DateOnly))); err != nil {
			return wk, err
		}
	}
	err := a.walks().Tell(ctx, &wk)
	return wk, err
}
