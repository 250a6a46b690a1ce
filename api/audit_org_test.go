package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// newAdminOperatorStack is newAdminStack with the operator's routes (an
// event's dials) mounted too.
func newAdminOperatorStack(t *testing.T) *adminStack {
	t.Helper()
	var st *store.Store
	s, _ := browseStackWith(t, func(srv *api.Server) {
		st = srv.Holds.Store
		rpool, err := store.OpenReader(context.Background(), testenv.DatabaseURL(t), store.ReaderRole, store.PoolOptions{MaxConns: 2})
		require.NoError(t, err)
		t.Cleanup(rpool.Close)
		srv.Admin = &api.Admin{Venues: venues.NewService(st), Events: organiser.NewService(st),
			Sales: &organiser.Sales{Reader: store.NewReader(rpool)}, Store: st,
			Walks: &hotels.Walks{Store: st, Log: srv.Log}}
		srv.Operator = &api.Operator{Store: st}
	})
	return &adminStack{stack: s, st: st}
}

func TestAnAdminsChangeToAnotherOrganisationsEventLandsInThatOrganisationsAuditLog(t *testing.T) {
	t.Parallel()
	s := newAdminOperatorStack(t)
	owner := s.token("owner_b", "org_b", session.Organiser)
	id := s.event(owner, s.venue(owner, "org_b"))
	// The admin works for an organisation of their own: org_ops.
	admin := s.token("root_ops", "org_ops", session.Admin)

	r := s.do(http.MethodPatch, "/v1/admin/events/"+id+"/controls", admin, map[string]any{"sales_paused": true, "reason": "audit org"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.do(http.MethodPatch, "/v1/admin/events/"+id, admin, map[string]any{"title": "Renamed by an admin"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	r = s.do(http.MethodGet, "/v1/admin/audit?actor=root_ops", owner, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	got := map[string]any{}
	for _, a := range r.Body["actions"].([]any) {
		m := a.(map[string]any)
		got[m["action"].(string)] = m["org_id"]
	}
	require.Equal(t, map[string]any{"event.controls": "org_b", "event.patch": "org_b"}, got,
		"org_b's organiser sees what the admin did to org_b's event, recorded under org_b")

	ops := s.token("ops_organiser", "org_ops", session.Organiser)
	r = s.do(http.MethodGet, "/v1/admin/audit?actor=root_ops", ops, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, r.Body["actions"], "the admin's own organisation does not see another's event's records")
}
