package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/store"
)

// WalkGuests relocates guests off an overbooked night: one activity walks
// the bookings (relocation, the night given back, the walk and its refund
// recorded, all in one transaction), then each walk's refund is paid and its
// guest told, each a step of its own. A guest no hotel in town has room for
// cannot keep the stay: that booking, a package's tickets with it (every
// part or none), is cancelled and refunded in full through its own booking
// workflow, as support staff would. A worker crash resumes at the step it
// stopped at; every step is safe to repeat, and no booking is walked twice.
func WalkGuests(ctx workflow.Context, in activities.WalkInput) ([]store.Walk, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 20},
	})
	var walks []store.Walk
	if err := workflow.ExecuteActivity(actx, wa.RelocateGuests, in).Get(ctx, &walks); err != nil {
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

// walkOne finishes one walk: a booking with nowhere to go is cancelled and
// refunded whole first; then the walk's refund and the guest's email.
func walkOne(ctx, actx workflow.Context, in activities.WalkInput, wk *store.Walk) error {
	if wk.Outcome == store.WalkCancelled && !wk.Notified {
		cancel := activities.StaffInput{Action: activities.StaffRefund, BookingID: wk.ReservationID.String(), Staff: "walk:" + in.PropertyID,
			Reason: activities.WalkCancelReason(in.Night)}
		if err := workflow.ExecuteActivity(actx, a.StaffAction, cancel).Get(ctx, nil); err != nil {
			return err
		}
	}
	if err := workflow.ExecuteActivity(actx, wa.RefundWalk, *wk).Get(ctx, wk); err != nil {
		return err
	}
	return workflow.ExecuteActivity(actx, wa.TellWalkedGuest, *wk).Get(ctx, wk)
}

// WalkWorkflowID is the walk workflow of one property's night: a second
// request while one runs joins it.
func WalkWorkflowID(propertyID, night string) string {
	return walkWorkflowIDPrefix + propertyID + "-" + night
}
