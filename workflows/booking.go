package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// BookingInput starts a booking for a committed hold.
type BookingInput struct {
	ReservationID string
	EventID       string
	UserID        string
	// ExpiresAt is the hold's absolute expiry as the database set it; the
	// timer fires at this instant however late the workflow started.
	ExpiresAt time.Time
}

// BookingResult is how the booking ended.
type BookingResult struct {
	Status string // EXPIRED or CANCELLED
}

// Steps reported by QueryStep.
const (
	StepAwaitingCheckout = "awaiting-checkout"
	StepReleasing        = "releasing"
	StepDone             = "done"
)

// Activity names the workflow calls (implemented by activities.Holds).
const (
	ActivityExpireHold  = "ExpireHold"
	ActivityReleaseHold = "ReleaseHold"
)

// Booking is the booking saga of one hold.
func Booking(ctx workflow.Context, in BookingInput) (BookingResult, error) {
	b := &booking{in: in, step: StepAwaitingCheckout}
	return b.run(ctx)
}

type booking struct {
	in   BookingInput
	step string
}

func (b *booking) run(ctx workflow.Context) (BookingResult, error) {
	if err := workflow.SetQueryHandler(ctx, QueryStep, func() (string, error) { return b.step, nil }); err != nil {
		return BookingResult{}, err
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, statusAttr.ValueSet("PENDING_PAYMENT"))

	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	timer := workflow.NewTimer(timerCtx, max(b.in.ExpiresAt.Sub(workflow.Now(ctx)), 0))
	release := workflow.GetSignalChannel(ctx, SignalRelease)

	outcome := ""
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(workflow.Future) { outcome = "EXPIRED" })
	sel.AddReceive(release, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		outcome = "CANCELLED"
	})
	sel.Select(ctx)
	cancelTimer()

	b.step = StepReleasing
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
	activity := ActivityExpireHold
	if outcome == "CANCELLED" {
		activity = ActivityReleaseHold
	}
	var status string
	if err := workflow.ExecuteActivity(actx, activity, b.in.ReservationID).Get(ctx, &status); err != nil {
		return BookingResult{}, err
	}
	b.step = StepDone
	_ = workflow.UpsertTypedSearchAttributes(ctx, statusAttr.ValueSet(status))
	return BookingResult{Status: status}, nil
}

var statusAttr = temporal.NewSearchAttributeKeyKeyword(SearchAttrStatus)
