package waitlist

import (
	"context"

	"github.com/encore-tickets/encore/store"
)

// The fan's side of the list: joining, leaving and reading one's places.
// They are the Offers' because a place is what a round offers seats to,
// and the edge keeps to the use case rather than the list's SQL.

// Join puts the fan on the event's waitlist, or returns the place they
// already have (created false: joining twice keeps the first place). An
// unknown event is store.ErrNotFound; a section the event does not have is
// a *store.InvalidError on section_id.
func (o *Offers) Join(ctx context.Context, j store.WaitlistJoin) (entry store.WaitlistEntry, created bool, err error) {
	return o.Store.Waitlists.JoinWaitlist(ctx, j)
}

// Leave takes the fan off the event's waitlist (an offer they hold passes
// on at the next round) and reports whether they were on it.
func (o *Offers) Leave(ctx context.Context, eventID, userID string) (bool, error) {
	return o.Store.Waitlists.LeaveWaitlist(ctx, eventID, userID)
}

// Mine lists the fan's places, newest first (at most 100), each with its
// status, its position while waiting and its offer's expiry once offered.
func (o *Offers) Mine(ctx context.Context, userID string) ([]store.WaitlistEntry, error) {
	return o.Store.Waitlists.MyWaitlist(ctx, userID)
}
