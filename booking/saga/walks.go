package saga

import (
	"context"
	"errors"
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
	for i := range walks {
		if walks[i].Outcome == store.WalkCancelled && !walks[i].Notified {
			cancel := StaffInput{Action: StaffRefund, BookingID: walks[i].ReservationID.String(), Staff: "walk:" + in.PropertyID,
				Reason: "the hotel cannot honour the night of " + in.Night + " and no other hotel in town has a room"}
			if err := workflow.ExecuteActivity(actx, a.StaffAction, cancel).Get(ctx, nil); err != nil {
				return walks, err
			}
		}
		if err := workflow.ExecuteActivity(actx, a.RefundWalk, walks[i]).Get(ctx, &walks[i]); err != nil {
			return walks, err
		}
		if err := workflow.ExecuteActivity(actx, a.TellWalkedGuest, walks[i]).Get(ctx, &walks[i]); err != nil {
			return walks, err
		}
	}
	return walks, nil
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
	err := a.walks().Tell(ctx, &wk)
	return wk, err
}
