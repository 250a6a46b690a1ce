package api_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

// hotelAdminStack is the admin stack with hotel search on the browse plane
// (answers cached for a millisecond), for the hotelier's routes and the
// fans' hotels of an event.
func hotelAdminStack(t *testing.T) *adminStack {
	t.Helper()
	return newAdminStack(t, func(srv *api.Server) {
		rpool, err := store.OpenReader(context.Background(), testenv.DatabaseURL(t), store.ReaderRole, store.PoolOptions{MaxConns: 2})
		require.NoError(t, err)
		t.Cleanup(rpool.Close)
		srv.Browse.Hotels = hotels.NewSearch(store.NewReader(rpool), time.Millisecond)
	})
}

// propertyBody is a property of one room type at lat, lng in city.
func propertyBody(name, city string, lat, lng float64) map[string]any {
	return map[string]any{"name": name, "city": city, "address": "1 Dam Square", "lat": lat, "lng": lng,
		"timezone": "Europe/Amsterdam", "check_in_time": "14:00", "check_out_time": "10:30",
		"contact_email": "frontdesk@" + strings.ToLower(strings.ReplaceAll(name, " ", "")) + ".test",
		"room_types":    []map[string]any{{"id": "double", "name": "Double", "max_guests": 2}}}
}

// property creates a property for the caller over HTTP and returns its ID.
func (s *adminStack) property(tok string, body map[string]any) string {
	s.t.Helper()
	r := s.do(http.MethodPost, "/v1/admin/properties", tok, body)
	require.Equal(s.t, http.StatusCreated, r.Status, string(r.Raw))
	return r.Body["property_id"].(string)
}

func TestEveryPropertyRouteRefusesAnotherOrganisationAnOrganiserAFanAndAnAnonymousCaller(t *testing.T) {
	t.Parallel()
	s := hotelAdminStack(t)
	sfx := testenv.RandomSuffix()
	orgA, orgB := "org_ha_"+sfx, "org_hb_"+sfx
	owner := s.token("hana", orgA, session.Hotelier)
	prop := s.property(owner, propertyBody("Tenancy Inn", "Tenancy"+sfx, 52.37, 4.89))
	day := time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	base := "/v1/admin/properties/" + prop
	routes := []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, base, nil},
		{http.MethodPatch, base, map[string]any{"name": "Stolen"}},
		{http.MethodPut, base + "/inventory", map[string]any{"room_type": "double", "from": day, "to": day, "allotment": 99,
			"rate": map[string]any{"amount": 1, "currency": "EUR"}}},
		{http.MethodGet, base + "/inventory?from=" + day + "&to=" + day, nil},
		{http.MethodGet, base + "/arrivals?date=" + day, nil},
		{http.MethodGet, base + "/arrivals?date=" + day + "&format=csv", nil},
		{http.MethodGet, base + "/walks/preview?night=" + day + "&rooms=1", nil},
		{http.MethodPut, base + "/overbooking", map[string]any{"room_type": "double", "night": day, "limit": 5}},
		{http.MethodPost, base + "/walks", map[string]any{"night": day, "rooms": 1}},
	}
	callers := []struct {
		name   string
		token  string
		status int
	}{
		{"a hotelier of another organisation", s.token("rex", orgB, session.Hotelier), http.StatusForbidden},
		{"a hotelier without an organisation", s.token("nobody", "", session.Hotelier), http.StatusForbidden},
		{"an organiser of the same organisation", s.token("olga", orgA, session.Organiser), http.StatusForbidden},
		{"a fan", s.token("fan", orgA, session.Fan), http.StatusForbidden},
		{"an anonymous caller", "", http.StatusUnauthorized},
	}
	for _, c := range callers {
		for _, rt := range routes {
			t.Run(c.name+" "+rt.method+" "+rt.path, func(t *testing.T) {
				r := s.do(rt.method, rt.path, c.token, rt.body)
				require.Equal(t, c.status, r.Status, string(r.Raw))
				if c.status == http.StatusForbidden {
					require.Equal(t, problemName("forbidden"), problemType(r))
				}
			})
		}
	}
	rival := s.token("rex", orgB, session.Hotelier)
	r := s.do(http.MethodPost, "/v1/admin/properties?org="+orgA, rival, propertyBody("Squat", "Tenancy"+sfx, 52.37, 4.89))
	require.Equal(t, http.StatusForbidden, r.Status, "a hotelier creates for their own organisation only")
	r = s.do(http.MethodGet, "/v1/admin/properties", rival, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, r.Body["properties"], "another organisation's properties are not listed")

	// Nothing changed; the owner and an admin of no organisation pass.
	require.Zero(t, s.count(`SELECT count(*) FROM room_nights WHERE property_id = $1`, prop))
	require.Equal(t, 1, s.count(`SELECT count(*) FROM properties WHERE id = $1 AND name = 'Tenancy Inn' AND org_id = $2`, prop, orgA))
	r = s.do(http.MethodGet, "/v1/admin/properties", owner, nil)
	require.Len(t, r.Body["properties"], 1)
	admin := s.token("root", "", session.Admin)
	for _, rt := range routes[:7] {
		r := s.do(rt.method, rt.path, admin, rt.body)
		require.Less(t, r.Status, 300, rt.method+" "+rt.path+": "+string(r.Raw))
	}
}

func TestAHotelierCreatesAPropertySetsAYearOfNightsAndIsToldWhichNightsAnEditWouldOverfill(t *testing.T) {
	t.Parallel()
	s := hotelAdminStack(t)
	sfx := testenv.RandomSuffix()
	tok := s.token("hana", "org_hy_"+sfx, session.Hotelier)

	bad := propertyBody("Broken", "Nowhere", 52.37, 4.89)
	delete(bad, "lat")
	bad["room_types"] = []map[string]any{{"id": "Double Room", "name": "Double"}}
	bad["check_in_time"] = "3pm"
	r := s.do(http.MethodPost, "/v1/admin/properties", tok, bad)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
	var fields []string
	for _, e := range r.Body["errors"].([]any) {
		fields = append(fields, e.(map[string]any)["field"].(string))
	}
	require.ElementsMatch(t, []string{"lat", "check_in_time", "room_types[0].id", "room_types[0].max_guests"}, fields)

	prop := s.property(tok, propertyBody("Year Hotel", "Year"+sfx, 52.37, 4.89))
	r = s.do(http.MethodGet, "/v1/admin/properties/"+prop, tok, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "14:00", r.Body["check_in_time"])
	r = s.do(http.MethodPatch, "/v1/admin/properties/"+prop, tok, map[string]any{"name": "Year Hotel & Spa",
		"room_types": []map[string]any{{"id": "suite", "name": "Suite", "max_guests": 4}}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "Year Hotel & Spa", r.Body["name"])
	require.Len(t, r.Body["room_types"], 2, "a room type is added, none removed")

	first := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	day := func(i int) string { return first.AddDate(0, 0, i).Format(time.DateOnly) }
	start := time.Now()
	r = s.do(http.MethodPut, "/v1/admin/properties/"+prop+"/inventory", tok, map[string]any{"room_type": "double",
		"from": day(0), "to": day(364), "allotment": 1, "overbook_limit": 1, "rate": map[string]any{"amount": 11900, "currency": "EUR"}})
	t.Logf("PUT of 365 nights answered in %s", time.Since(start))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, float64(365), r.Body["created"])
	r = s.do(http.MethodGet, "/v1/admin/properties/"+prop+"/inventory?from="+day(0)+"&to="+day(364), tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	nights := r.Body["nights"].([]any)
	require.Len(t, nights, 365)
	require.Equal(t, map[string]any{"night": day(364), "room_type": "double", "allotment": float64(1), "overbook_limit": float64(1),
		"sold": float64(0), "held": float64(0), "available": float64(2), "rate": map[string]any{"amount": float64(11900), "currency": "EUR"},
		"stop_sell": false}, nights[364])
	r = s.do(http.MethodGet, "/v1/admin/properties/"+prop+"/inventory?from="+day(0)+"&to="+day(366), tok, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	require.Contains(t, string(r.Raw), `"field":"to"`)

	// Two fans hold the two rooms of nights 10 and 11; lowering the
	// overbooking limit there is refused, naming both nights.
	for _, who := range []string{"ann", "bob"} {
		r := s.do(http.MethodPost, "/v1/holds", s.fan(who+sfx), map[string]any{"stays": []map[string]any{{"property_id": prop,
			"room_type": "double", "checkin": day(10), "checkout": day(12), "rooms": 1}}})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	}
	r = s.do(http.MethodPut, "/v1/admin/properties/"+prop+"/inventory", tok, map[string]any{"room_type": "double",
		"from": day(0), "to": day(20), "overbook_limit": 0})
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	require.Equal(t, problemName("inventory-conflict"), problemType(r))
	require.Equal(t, []any{
		map[string]any{"night": day(10), "held": float64(2), "sold": float64(0), "allotment": float64(1), "overbook_limit": float64(0)},
		map[string]any{"night": day(11), "held": float64(2), "sold": float64(0), "allotment": float64(1), "overbook_limit": float64(0)},
	}, r.Body["nights"])
	require.Equal(t, "overbook_limit", r.Body["errors"].([]any)[0].(map[string]any)["field"])
	require.Contains(t, r.Body["detail"], day(10)+", "+day(11))
	require.Equal(t, 21, s.count(`SELECT count(*) FROM room_nights WHERE property_id = $1 AND overbook_limit = 1 AND night <= $2`, prop, day(20)),
		"nothing changed")

	// Stop-selling night 12 by itself: a stay through it is refused.
	r = s.do(http.MethodPut, "/v1/admin/properties/"+prop+"/inventory", tok, map[string]any{"room_type": "double",
		"from": day(12), "to": day(12), "stop_sell": true})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.do(http.MethodPost, "/v1/holds", s.fan("cat"+sfx), map[string]any{"stays": []map[string]any{{"property_id": prop,
		"room_type": "double", "checkin": day(12), "checkout": day(13), "rooms": 1}}})
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	require.Equal(t, problemName("room-unavailable"), problemType(r))
	require.Equal(t, day(12), r.Body["night"])
}

func TestArrivalsOverHTTPListTheDaysPaidStaysAndTheirCSVIsNeutralised(t *testing.T) {
	t.Parallel()
	s := hotelAdminStack(t)
	sfx := testenv.RandomSuffix()
	tok := s.token("hana", "org_ar_"+sfx, session.Hotelier)
	prop := s.property(tok, propertyBody("Arrivals Inn", "Arrive"+sfx, 52.37, 4.89))
	first := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	day := func(i int) string { return first.AddDate(0, 0, i).Format(time.DateOnly) }
	r := s.do(http.MethodPut, "/v1/admin/properties/"+prop+"/inventory", tok, map[string]any{"room_type": "double",
		"from": day(0), "to": day(9), "allotment": 5, "rate": map[string]any{"amount": 9900, "currency": "EUR"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	guest := "@SUM(A1)" + sfx
	r = s.do(http.MethodPost, "/v1/holds", s.issuer.Issue(guest, "d", time.Now()), map[string]any{"stays": []map[string]any{{
		"property_id": prop, "room_type": "double", "checkin": day(3), "checkout": day(5), "rooms": 2}}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := uuid.MustParse(r.Body["hold_id"].(string))
	ok, err := s.st.Bookings.ConfirmSale(context.Background(), id)
	require.NoError(t, err)
	require.True(t, ok)
	b, err := s.st.Bookings.Booking(context.Background(), id, "")
	require.NoError(t, err)

	r = s.do(http.MethodGet, "/v1/admin/properties/"+prop+"/arrivals?date="+day(3), tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, []any{map[string]any{"booking_id": id.String(), "confirmation": b.Vouchers[0].Confirmation, "guest": guest,
		"room_type": "double", "room_type_name": "Double", "rooms": float64(2), "nights": float64(2), "checkin": day(3),
		"checkout": day(5)}}, r.Body["arrivals"])
	r = s.do(http.MethodGet, "/v1/admin/properties/"+prop+"/arrivals?date="+day(4), tok, nil)
	require.Empty(t, r.Body["arrivals"], "a guest arrives once")

	r = s.do(http.MethodGet, "/v1/admin/properties/"+prop+"/arrivals?date="+day(3)+"&format=csv", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "text/csv; charset=utf-8", r.Header.Get("Content-Type"))
	recs, err := csv.NewReader(strings.NewReader(string(r.Raw))).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, "'"+guest, recs[1][3], "a guest that looks like a formula stays text")
	require.Equal(t, []string{"2", "2"}, recs[1][6:8])

	cases := []struct{ name, query, field string }{
		{"no date", "", "date"},
		{"a date that is not one", "?date=tomorrow", "date"},
		{"another format", "?date=" + day(3) + "&format=xlsx", "format"},
	}
	for _, c := range cases {
		t.Run(c.name+" is refused naming "+c.field, func(t *testing.T) {
			r := s.do(http.MethodGet, "/v1/admin/properties/"+prop+"/arrivals"+c.query, tok, nil)
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
			require.Contains(t, string(r.Raw), fmt.Sprintf(`"field":%q`, c.field))
		})
	}
}

func TestAFanSeesTheHotelsNearestAnEventWithTheRatesOfItsNight(t *testing.T) {
	t.Parallel()
	s := hotelAdminStack(t)
	ctx := context.Background()
	sfx := testenv.RandomSuffix()
	tok := s.token("hana", "org_ev_"+sfx, session.Hotelier)
	// A venue of its own, somewhere no other test puts hotels.
	lat, lng := 10+float64(time.Now().UnixNano()%1000)/100, 20.0
	eventID := "evt_" + sfx
	show := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 3).Add(19 * time.Hour)
	require.NoError(t, demo.Create(ctx, s.pool, demo.Event{ID: eventID, Title: "Near " + sfx, VenueID: "ven_" + sfx, VenueName: "Hall",
		City: "Near" + sfx, Timezone: "UTC", StartsAt: show, OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Sections: []demo.Section{{ID: "sec_" + sfx, Name: "A", Rows: 1, PerRow: 4, BasePrice: 1000}}}))
	_, err := s.st.Catalogue.PlaceVenue(ctx, "ven_"+sfx, lat, lng)
	require.NoError(t, err)
	night := show.Format(time.DateOnly)
	near := s.property(tok, propertyBody("Next Door", "Near"+sfx, lat+0.001, lng))
	farther := s.property(tok, propertyBody("Down The Road", "Near"+sfx, lat+0.02, lng))
	for i, p := range []string{near, farther} {
		r := s.do(http.MethodPut, "/v1/admin/properties/"+p+"/inventory", tok, map[string]any{"room_type": "double",
			"from": night, "to": night, "allotment": 3, "rate": map[string]any{"amount": 10000 + 1000*i, "currency": "EUR"}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}

	r := s.do(http.MethodGet, "/v1/events/"+eventID+"/hotels?guests=2", "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, night, r.Body["checkin"])
	props := r.Body["properties"].([]any)
	require.Len(t, props, 2)
	require.Equal(t, near, props[0].(map[string]any)["id"], "nearest first")
	require.Equal(t, farther, props[1].(map[string]any)["id"])
	require.InDelta(t, 0.1, props[0].(map[string]any)["distance_km"], 0.01)
	rt := props[1].(map[string]any)["room_types"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"amount": float64(11000), "currency": "EUR"}, rt["total"])

	// The hotelier stops selling the night: the fan's list changes.
	r = s.do(http.MethodPut, "/v1/admin/properties/"+near+"/inventory", tok, map[string]any{"room_type": "double",
		"from": night, "to": night, "stop_sell": true})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool {
		r := s.do(http.MethodGet, "/v1/events/"+eventID+"/hotels?guests=2", "", nil)
		return len(r.Body["properties"].([]any)) == 1
	}, 5*time.Second, 10*time.Millisecond)

	for _, q := range []string{"?guests=0", "?guests=2&nights=30"} {
		r := s.do(http.MethodGet, "/v1/events/"+eventID+"/hotels"+q, "", nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, q)
	}
	r = s.do(http.MethodGet, "/v1/events/evt_missing_"+sfx+"/hotels", "", nil)
	require.Equal(t, http.StatusNotFound, r.Status)
}
