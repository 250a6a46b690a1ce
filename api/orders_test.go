package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/session"
)

// TestAnEventsOrdersAreItsOrganisationsOnlyAndABadQueryIsAProblemNamingTheParameter:
// a new event's orders are empty with a zero summary (JSON and a CSV of
// just the header); a status that is none, a search past 200 characters
// and an unknown format are RFC 9457 problems naming the parameter;
// another organisation's organiser is refused.
func TestAnEventsOrdersAreItsOrganisationsOnlyAndABadQueryIsAProblemNamingTheParameter(t *testing.T) {
	s := newAdminStack(t)
	org := "org_orders_" + testenv.RandomSuffix()
	tok := s.token("ordering", org, session.Organiser)
	id := s.event(tok, s.venue(tok, org))
	path := "/v1/admin/events/" + id + "/orders"

	r := s.do(http.MethodGet, path, tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, []any{}, r.Body["orders"])
	require.Equal(t, map[string]any{"paid_bookings": 0.0, "paid_total": 0.0, "valid_tickets": 0.0, "pending_holds": 0.0}, r.Body["summary"])

	r = s.do(http.MethodGet, path+"?format=csv", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "booking_id,email,status,payment_status,places,tickets,total_minor,currency,created_at,paid_at\n", string(r.Raw))

	for _, bad := range []struct{ query, field string }{
		{"?status=SOLD", "status"}, {"?q=" + strings.Repeat("a", 201), "q"}, {"?format=xml", "format"},
	} {
		r = s.do(http.MethodGet, path+bad.query, tok, nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
		require.Contains(t, r.Header.Get("Content-Type"), "application/problem+json")
		require.Equal(t, bad.field, r.Body["errors"].([]any)[0].(map[string]any)["field"], bad.query)
	}

	rival := s.token("rival", org+"_b", session.Organiser)
	r = s.do(http.MethodGet, path, rival, nil)
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
}
