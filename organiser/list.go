package organiser

import (
	"context"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// MaxListed bounds one page of List.
const MaxListed = 200

// List reads the scope's organisation's events (every organisation's for an
// admin without one), drafts included, newest first, a page of at most
// limit created before the cursor when given.
func (s *Service) List(ctx context.Context, scope venues.Scope, before *store.EventCursor, limit int) ([]Event, error) {
	if err := scope.Check(); err != nil {
		return nil, err
	}
	limit = min(max(limit, 1), MaxListed)
	evs, err := s.store.Catalogue.OrganiserEvents(ctx, scope.Org, before, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = s.view(e)
	}
	return out, nil
}

// Promotions lists the codes of an event of the scope's organisation,
// disabled ones too, oldest first.
func (s *Service) Promotions(ctx context.Context, scope venues.Scope, eventID string) ([]store.Promotion, error) {
	ev, err := s.Get(ctx, scope, eventID)
	if err != nil {
		return nil, err
	}
	out, err := s.store.Promotions.Promotions(ctx, ev.EventID)
	if out == nil {
		out = []store.Promotion{}
	}
	return out, err
}
