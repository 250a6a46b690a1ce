package api_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/session"
)

// ids are the event_id (or venue_id, or code) fields of a list's items, in
// order.
func ids(items any, field string) []string {
	var out []string
	for _, it := range items.([]any) {
		out = append(out, it.(map[string]any)[field].(string))
	}
	return out
}

func TestAnOrganiserListsTheirOrganisationsEventsDraftsIncludedNewestFirstPageByPage(t *testing.T) {
	s := newAdminStack(t)
	org := "org_list_" + testenv.RandomSuffix()
	tok := s.token("lister", org, session.Organiser)
	venueID := s.venue(tok, org)
	published := s.event(tok, venueID)
	var drafts []string
	for range 2 {
		r := s.do(http.MethodPost, "/v1/admin/events", tok, eventBody(venueID))
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		drafts = append(drafts, r.Body["event_id"].(string))
	}
	// Another organisation's event, which the list must leave out.
	rival := s.token("rival", org+"_b", session.Organiser)
	s.event(rival, s.venue(rival, org+"_b"))

	r := s.do(http.MethodGet, "/v1/admin/events", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, []string{drafts[1], drafts[0], published}, ids(r.Body["events"], "event_id"), "newest first")
	var statuses []string
	for _, ev := range r.Body["events"].([]any) {
		m := ev.(map[string]any)
		require.Equal(t, org, m["org_id"])
		require.Equal(t, venueID, m["venue_id"])
		statuses = append(statuses, m["status"].(string))
	}
	require.Equal(t, []string{"DRAFT", "DRAFT", "ON_SALE"}, statuses)
	require.Nil(t, r.Body["next_cursor"])

	// Two at a time: the second page holds the rest and ends the list.
	r = s.do(http.MethodGet, "/v1/admin/events?limit=2", tok, nil)
	require.Equal(t, []string{drafts[1], drafts[0]}, ids(r.Body["events"], "event_id"))
	cursor, ok := r.Body["next_cursor"].(string)
	require.True(t, ok, "a full page has a next_cursor: %s", r.Raw)
	r = s.do(http.MethodGet, "/v1/admin/events?limit=2&cursor="+url.QueryEscape(cursor), tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, []string{published}, ids(r.Body["events"], "event_id"))
	require.Nil(t, r.Body["next_cursor"])

	// An admin names the organisation; bad pages are the caller's mistake.
	admin := s.token("root", "", session.Admin)
	r = s.do(http.MethodGet, "/v1/admin/events?org="+org, admin, nil)
	require.Equal(t, []string{drafts[1], drafts[0], published}, ids(r.Body["events"], "event_id"))
	for _, q := range []string{"limit=0", "limit=201", "limit=x", "cursor=nope", "cursor=bm9wZQ"} {
		r = s.do(http.MethodGet, "/v1/admin/events?"+q, tok, nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, q+": "+string(r.Raw))
	}
}

func TestAnOrganiserListsTheirVenuesWithTheirCategoriesAndAnEventsPromotions(t *testing.T) {
	s := newAdminStack(t)
	org := "org_venues_" + testenv.RandomSuffix()
	tok := s.token("lister", org, session.Organiser)
	first, second := s.venue(tok, org), s.venue(tok, org)
	s.venue(s.token("rival", org+"_b", session.Organiser), org+"_b")

	r := s.do(http.MethodGet, "/v1/admin/venues", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, []string{second, first}, ids(r.Body["venues"], "venue_id"), "newest first, this organisation's only")
	v := r.Body["venues"].([]any)[0].(map[string]any)
	require.Equal(t, []any{"balcony", "standing"}, v["categories"])
	require.EqualValues(t, 140, v["seats"])
	require.EqualValues(t, 2, v["sections"])
	require.Equal(t, "Encore Club", v["name"])

	id := s.event(tok, first)
	path := "/v1/admin/events/" + id + "/promotions"
	r = s.do(http.MethodGet, path, tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, r.Body["promotions"])
	require.NotNil(t, r.Body["promotions"], "an empty list, not null")
	code := "LIST" + testenv.RandomSuffix()
	for _, c := range []string{code + "A", code + "B"} {
		r = s.do(http.MethodPost, path, tok, map[string]any{"code": c, "percent_off": 10, "max_uses": 5})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	}
	require.Equal(t, http.StatusOK, s.do(http.MethodDelete, path+"/"+code+"A", tok, nil).Status)
	r = s.do(http.MethodGet, path, tok, nil)
	require.Equal(t, []string{code + "A", code + "B"}, ids(r.Body["promotions"], "code"))
	promos := r.Body["promotions"].([]any)
	require.NotNil(t, promos[0].(map[string]any)["disabled_at"], "the disabled code is listed as such")
	require.Nil(t, promos[1].(map[string]any)["disabled_at"])
	require.EqualValues(t, 1000, promos[1].(map[string]any)["discount_bps"])
}

func TestTheOrganiserListsRefuseAFanAnAnonymousCallerAndAnotherOrganisation(t *testing.T) {
	s := newAdminStack(t)
	org := "org_refuse_" + testenv.RandomSuffix()
	owner := s.token("owner", org, session.Organiser)
	id := s.event(owner, s.venue(owner, org))
	for _, c := range []struct {
		name, token, path string
		status            int
	}{
		{"a fan lists events", s.token("fan", org, session.Fan), "/v1/admin/events", http.StatusForbidden},
		{"a fan lists venues", s.token("fan", org, session.Fan), "/v1/admin/venues", http.StatusForbidden},
		{"an anonymous caller lists events", "", "/v1/admin/events", http.StatusUnauthorized},
		{"an organiser of no organisation lists events", s.token("nobody", "", session.Organiser), "/v1/admin/events", http.StatusForbidden},
		{"an organiser of no organisation lists venues", s.token("nobody", "", session.Organiser), "/v1/admin/venues", http.StatusForbidden},
		{"another organisation lists the promotions", s.token("rival", org+"_b", session.Organiser), "/v1/admin/events/" + id + "/promotions", http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.do(http.MethodGet, c.path, c.token, nil)
			require.Equal(t, c.status, r.Status, string(r.Raw))
		})
	}
}
