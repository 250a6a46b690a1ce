package venues

import (
	"context"

	"github.com/encore-tickets/encore/store"
)

// MaxListed bounds List.
const MaxListed = 200

// List reads the scope's organisation's venues (every organisation's for an
// admin without one), newest first, at most MaxListed.
func (s *Service) List(ctx context.Context, scope Scope) ([]store.VenueSummary, error) {
	if err := scope.Check(); err != nil {
		return nil, err
	}
	return s.store.Catalogue.Venues(ctx, scope.Org, MaxListed)
}
