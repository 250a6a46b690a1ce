package hotels

import (
	"context"
	"time"

	"github.com/encore-tickets/encore/store"
)

// Overbooking sets how far past its allotment a room-night may be held and
// sold (rule 11's overbook_limit): the limit itself, or the one a walk risk
// allows at a show rate, computed from the night's allotment as it stands.
type Overbooking struct {
	Store *store.Store
}

// OverbookingChange is a new limit for one room-night: exactly one of
// Limit and WalkRisk (with ShowRate) is set.
type OverbookingChange struct {
	PropertyID, RoomType string
	Night                time.Time
	Limit                *int
	WalkRisk, ShowRate   *float64
}

// Set applies ch and returns the night's counters before and after (for
// the audit record). A missing room-night is store.ErrNotFound; a walk risk
// or show rate outside (0, 1) a *store.InvalidError on walk_risk.
func (o *Overbooking) Set(ctx context.Context, ch OverbookingChange) (before, after store.RoomNight, err error) {
	before, err = o.Store.Hotels.RoomNightCounters(ctx, ch.PropertyID, ch.RoomType, ch.Night)
	if err != nil {
		return before, after, err
	}
	limit := 0
	switch {
	case ch.Limit != nil:
		limit = *ch.Limit
	case ch.WalkRisk == nil || ch.ShowRate == nil:
		return before, after, &store.InvalidError{Field: "limit", Message: "exactly one of limit and walk_risk (with show_rate)"}
	default:
		if limit, err = OverbookLimit(before.Allotment, *ch.ShowRate, *ch.WalkRisk); err != nil {
			return before, after, &store.InvalidError{Field: "walk_risk", Message: err.Error()}
		}
	}
	after, err = o.Store.Hotels.SetOverbooking(ctx, ch.PropertyID, ch.RoomType, ch.Night, limit)
	return before, after, err
}
