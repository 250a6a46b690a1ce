package organiser

import (
	"context"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// AuditLog lists the admin audit log's records that match f, newest first.
// The scope decides whose records: an admin's every organisation's (f's
// OrgID is ignored), an organiser's their own organisation's only, so the
// edge cannot widen an organiser's view by a filter. An organiser scope
// without an organisation sees nothing (store.ErrOtherOrg).
func (s *Service) AuditLog(ctx context.Context, scope venues.Scope, f store.AuditFilter) ([]store.AdminAction, error) {
	if !scope.Admin && scope.Org == "" {
		return nil, store.ErrOtherOrg
	}
	f.OrgID = scope.Filter()
	return s.store.Orgs.ListAdminActions(ctx, f)
}
