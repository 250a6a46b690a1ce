package api_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
)

// adminStack is the fan API with the browse routes and the /v1/admin routes,
// the sales report on the read-only pool.
type adminStack struct {
	*stack
	st *store.Store
}

// newAdminStack starts the admin stack; edits then change its server (the
// operator's routes mounted, say) before it serves.
func newAdminStack(t *testing.T, edits ...func(*api.Server)) *adminStack {
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
		for _, edit := range edits {
			edit(srv)
		}
	})
	return &adminStack{stack: s, st: st}
}

// token is a caller of the given org and roles (org may be empty).
func (s *adminStack) token(user, org string, roles ...session.Role) string {
	tok, err := s.issuer.Mint(session.Identity{UserID: user, DeviceID: "d", Roles: roles, Org: org}, time.Now())
	require.NoError(s.t, err)
	return tok
}

// venue imports the club (600 standing, 140 balcony seats) for org over
// HTTP and returns its ID.
func (s *adminStack) venue(tok, org string) string {
	s.t.Helper()
	body, err := venues.EncodeJSON(venues.ClubVenue())
	require.NoError(s.t, err)
	r := s.do(http.MethodPost, "/v1/admin/venues?org="+org, tok, body, "Content-Type", "application/json")
	require.Equal(s.t, http.StatusCreated, r.Status, string(r.Raw))
	return r.Body["venue_id"].(string)
}

func eventBody(venueID string) map[string]any {
	return map[string]any{"venue_id": venueID, "title": "Admin Night", "currency": "EUR",
		"starts_at": time.Now().Add(30 * 24 * time.Hour), "onsale_at": time.Now().Add(-time.Minute),
		"prices": map[string]any{"standing": map[string]any{"amount": 2500, "currency": "EUR"},
			"balcony": map[string]any{"amount": 4000, "currency": "EUR"}}}
}

// event creates and publishes an event of the club for the caller.
func (s *adminStack) event(tok, venueID string) string {
	s.t.Helper()
	r := s.do(http.MethodPost, "/v1/admin/events", tok, eventBody(venueID))
	require.Equal(s.t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["event_id"].(string)
	r = s.do(http.MethodPost, "/v1/admin/events/"+id+"/publish", tok, nil)
	require.Equal(s.t, http.StatusOK, r.Status, string(r.Raw))
	return id
}

func TestEveryOrganiserRouteRefusesAnotherOrganisationAFanAndAnAnonymousCaller(t *testing.T) {
	s := newAdminStack(t)
	owner := s.token("owner", "org_a", session.Organiser)
	venueID := s.venue(owner, "org_a")
	eventID := s.event(owner, venueID)
	ev := "/v1/admin/events/" + eventID
	routes := []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/v1/admin/venues?org=org_a", map[string]any{}},
		{http.MethodPost, "/v1/admin/events", eventBody(venueID)},
		{http.MethodGet, ev, nil},
		{http.MethodPatch, ev, map[string]any{"title": "Stolen"}},
		{http.MethodPost, ev + "/publish", nil},
		{http.MethodPost, ev + "/seats/block", map[string]any{"seat_ids": []string{"x"}, "reason": "r"}},
		{http.MethodPost, ev + "/seats/unblock", map[string]any{"seat_ids": []string{"x"}, "reason": "r"}},
		{http.MethodPost, ev + "/promotions", map[string]any{"code": "STEAL", "percent_off": 50, "max_uses": 1}},
		{http.MethodDelete, ev + "/promotions/STEAL", nil},
		{http.MethodGet, ev + "/sales", nil},
	}
	callers := []struct {
		name   string
		token  string
		status int
	}{
		{"an organiser of another organisation", s.token("rival", "org_b", session.Organiser), http.StatusForbidden},
		{"an organiser without an organisation", s.token("nobody", "", session.Organiser), http.StatusForbidden},
		{"a fan", s.token("fan", "org_a", session.Fan), http.StatusForbidden},
		{"support staff", s.token("support", "org_a", session.Support), http.StatusForbidden},
		{"an anonymous caller", "", http.StatusUnauthorized},
	}
	for _, c := range callers {
		for _, rt := range routes {
			t.Run(c.name+" "+rt.method+" "+rt.path, func(t *testing.T) {
				r := s.do(rt.method, rt.path, c.token, rt.body)
				require.Equal(t, c.status, r.Status, string(r.Raw))
			})
		}
	}
	// Nothing changed, and an admin of no organisation passes every route.
	require.Equal(t, 1, s.count(`SELECT count(*) FROM events WHERE org_id = 'org_a'`))
	require.Zero(t, s.count(`SELECT count(*) FROM promotions WHERE code = 'STEAL'`))
	admin := s.token("root", "", session.Admin)
	for _, rt := range routes[2:] {
		r := s.do(rt.method, rt.path, admin, rt.body)
		require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, r.Status, rt.method+" "+rt.path+": "+string(r.Raw))
	}
	r := s.do(http.MethodGet, "/v1/admin/audit", s.token("fan", "", session.Fan), nil)
	require.Equal(t, http.StatusForbidden, r.Status)
	for _, path := range []string{"/v1/admin/properties/p/overbooking", "/v1/admin/properties/p/walks"} {
		method := http.MethodPut
		if strings.HasSuffix(path, "walks") {
			method = http.MethodPost
		}
		r := s.do(method, path, owner, map[string]any{})
		require.Equal(t, http.StatusForbidden, r.Status, "hotels are hoteliers' and admins', never an organiser's: "+path)
	}
}

func TestAVenueImportsOverHTTPAsJSONOrCSVAndABadLayoutNamesEveryPathAndWritesNothing(t *testing.T) {
	s := newAdminStack(t)
	tok := s.token("owner", "org_v", session.Organiser)
	s.venue(tok, "org_v")

	bad := venues.ClubVenue()
	bal := &bad.Layout.Sections[1]
	bal.Rows[2].Seats[7].Number = bal.Rows[2].Seats[6].Number // a duplicate
	bal.Rows[3].Label = ""
	body, err := venues.EncodeJSON(bad)
	require.NoError(t, err)
	r := s.do(http.MethodPost, "/v1/admin/venues", tok, body)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
	require.Equal(t, problemName("invalid-request"), problemType(r))
	var fields []string
	for _, e := range r.Body["errors"].([]any) {
		fields = append(fields, e.(map[string]any)["field"].(string))
	}
	require.Contains(t, fields, "layout.sections[1].rows[2].seats[7].number")
	require.Contains(t, fields, "layout.sections[1].rows[3].label")
	require.Equal(t, 1, s.count(`SELECT count(*) FROM venues WHERE org_id = 'org_v'`), "nothing written")

	csvBody, err := venues.EncodeCSV(venues.ClubVenue().Layout)
	require.NoError(t, err)
	r = s.do(http.MethodPost, "/v1/admin/venues?name=Club+CSV&city=Rotterdam&timezone=Europe/Amsterdam", tok, csvBody,
		"Content-Type", "text/csv")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.EqualValues(t, 140, r.Body["seats"])

	r = s.do(http.MethodPost, "/v1/admin/venues?name=Club&city=Rotterdam&timezone=Europe/Amsterdam", tok,
		[]byte("section,kind,category,row,seat,x,y\ns,seated,c,A,x,0,0\n"), "Content-Type", "text/csv")
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), "line 2, column seat")
	require.Equal(t, 2, s.count(`SELECT count(*) FROM venues WHERE org_id = 'org_v'`))
}

func TestAVenueImportPastTheSeatCapIsRefusedAsTooLargeBeforeTheRestOfTheBodyIsRead(t *testing.T) {
	t.Parallel()
	st := store.New(testenv.DB(t), store.Options{})
	issuer := session.NewIssuer("caps-test-secret")
	srv := &api.Server{Sessions: issuer, Log: quiet(t),
		Admin: &api.Admin{Venues: venues.NewService(st), Events: organiser.NewService(st), Store: st}}
	handler := srv.Handler()
	tok, err := issuer.Mint(session.Identity{UserID: "caps", DeviceID: "d", Roles: []session.Role{session.Organiser}, Org: "org_caps"}, time.Now())
	require.NoError(t, err)
	post := func(contentType string, body *apitest.Endless) (*httptest.ResponseRecorder, map[string]any) {
		req := httptest.NewRequest(http.MethodPost, "/v1/admin/venues?name=Hall&city=Ghent&timezone=Europe/Brussels", body)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		var p map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p), rec.Body.String())
		return rec, p
	}
	requireTooLarge := func(rec *httptest.ResponseRecorder, p map[string]any, field string, limit int) {
		t.Helper()
		require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
		require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
		require.Equal(t, "/problems/layout-too-large", p["type"])
		require.EqualValues(t, limit, p["limit"])
		require.Equal(t, field, p["errors"].([]any)[0].(map[string]any)["field"])
	}

	// Thirty megabytes of one row's seats: past the cap of 100,000 seats at
	// about three.
	js := &apitest.Endless{Head: `{"name": "Hall", "city": "Ghent", "timezone": "Europe/Brussels", "layout": {"sections": [
		{"id": "s", "kind": "seated", "category": "c", "rows": [{"label": "A", "seats": [{"number": 1, "x": 0, "y": 0}`,
		Rep: `, {"number": 2, "x": 0, "y": 0}`, Size: 30 << 20}
	rec, p := post("application/json", js)
	requireTooLarge(rec, p, "layout", venues.MaxSeats)
	require.Less(t, js.N, 4<<20, "the server read %d of %d bytes", js.N, js.Size)

	csv := &apitest.Endless{Head: "section,kind,category,row,seat,x,y\n", Rep: "s,seated,c,A,1,0,0\n", Size: 30 << 20}
	rec, p = post("text/csv", csv)
	requireTooLarge(rec, p, "layout", venues.MaxSeats)
	require.Less(t, csv.N, 3<<20, "the server read %d of %d bytes", csv.N, csv.Size)

	// A body past the size cap, however cheap to parse, stops at the cap.
	blank := &apitest.Endless{Head: `{"name": `, Rep: strings.Repeat(" ", 4096), Size: 40 << 20}
	rec, p = post("application/json", blank)
	requireTooLarge(rec, p, "body", venues.MaxFileBytes)
	require.LessOrEqual(t, blank.N, venues.MaxFileBytes+64<<10, "the server read %d of %d bytes", blank.N, blank.Size)
}

func TestAnOrganiserCreatesPatchesPublishesAndBlocksSeatsOverHTTP(t *testing.T) {
	s := newAdminStack(t)
	tok := s.token("owner", "org_e", session.Organiser)
	venueID := s.venue(tok, "org_e")

	r := s.do(http.MethodPost, "/v1/admin/events", tok, eventBody(venueID))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Equal(t, "DRAFT", r.Body["status"])
	id := r.Body["event_id"].(string)
	r = s.do(http.MethodGet, "/v1/events/"+id, "", nil)
	require.Equal(t, http.StatusNotFound, r.Status, "fans do not see a draft")

	r = s.do(http.MethodPatch, "/v1/admin/events/"+id, tok, map[string]any{"title": "Renamed", "per_customer_limit": 4})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "Renamed", r.Body["title"])
	r = s.do(http.MethodPatch, "/v1/admin/events/"+id, tok, map[string]any{"per_customer_limit": 0})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))

	r = s.do(http.MethodPost, "/v1/admin/events/"+id+"/publish", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "ON_SALE", r.Body["status"])
	r = s.do(http.MethodPatch, "/v1/admin/events/"+id, tok, map[string]any{
		"prices": map[string]any{"standing": map[string]any{"amount": 1, "currency": "EUR"},
			"balcony": map[string]any{"amount": 1, "currency": "EUR"}}})
	require.Equal(t, http.StatusConflict, r.Status, "a published event's prices are fixed: "+string(r.Raw))

	r = s.do(http.MethodGet, "/v1/admin/events/"+id, tok, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "ON_SALE", r.Body["status"])
	require.EqualValues(t, 140, r.Body["seats"])

	seat := store.SectionPrefix(id) + "balcony-A-2"
	r = s.do(http.MethodPost, "/v1/admin/events/"+id+"/seats/block", tok, map[string]any{"seat_ids": []string{seat}, "reason": "camera"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, []any{seat}, r.Body["changed"])

	section := store.SectionPrefix(id) + "balcony"
	bin := s.do(http.MethodGet, "/v1/events/"+id+"/sections/"+section+"/seats.bin", "", nil)
	require.Equal(t, http.StatusOK, bin.Status, string(bin.Raw))
	statuses, err := seatmap.DecodeBitmap(bin.Raw, 140)
	require.NoError(t, err)
	require.Equal(t, vocab.SeatBlocked, statuses[1], "seat A-2 is BLOCKED (3) in the bitmap")
	require.Equal(t, byte(3), (bin.Raw[0]>>4)&3)
	require.Equal(t, vocab.SeatAvailable, statuses[0])

	r = s.do(http.MethodPost, "/v1/holds", s.fan("buyer"), map[string]any{"event_id": id, "seat_ids": []string{seat}})
	require.Equal(t, http.StatusConflict, r.Status, "a blocked seat cannot be held: "+string(r.Raw))

	r = s.do(http.MethodPost, "/v1/admin/events/"+id+"/seats/unblock", tok, map[string]any{"seat_ids": []string{seat}, "reason": "moved"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.do(http.MethodPost, "/v1/holds", s.fan("buyer"), map[string]any{"event_id": id, "seat_ids": []string{seat}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
}

func TestAPromotionCapHoldsUnderFiftyConcurrentBuyers(t *testing.T) {
	s := newAdminStack(t)
	tok := s.token("owner", "org_p", session.Organiser)
	id := s.event(tok, s.venue(tok, "org_p"))
	const maxUses, buyers = 7, 50
	r := s.do(http.MethodPost, "/v1/admin/events/"+id+"/promotions", tok,
		map[string]any{"code": "RUSH7", "percent_off": 20, "max_uses": maxUses, "per_user": 1})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

	floor := store.SectionPrefix(id) + "floor"
	s.eventID = id
	results := s.race(buyers, func(i int) (string, map[string]any, []string) {
		return s.fan(fmt.Sprintf("rush%d", i)), map[string]any{"section_id": floor, "quantity": 1, "promo_code": "RUSH7"}, nil
	})
	won := 0
	for _, res := range results {
		switch res.Status {
		case http.StatusCreated:
			won++
			require.EqualValues(t, 2000, res.Body["total"].(map[string]any)["amount"], "20% off 25.00")
		default:
			require.Equal(t, problemName("promotion-unavailable"), problemType(res), string(res.Raw))
		}
	}
	require.Equal(t, maxUses, won)
	require.Equal(t, maxUses, s.count(`SELECT used FROM promotions WHERE code = 'RUSH7'`))
	require.Equal(t, maxUses, s.count(`SELECT count(*) FROM promotion_uses WHERE code = 'RUSH7'`))
	require.Equal(t, maxUses, s.count(`SELECT count(*) FROM reservations WHERE promo_code = 'RUSH7'`))
}

// TestAPromotionOfTwoUsesPerAccountAllowsTwoLiveUsesAndGivesOneBackOnRelease:
// an account's live uses of a code (paid, or a pending hold) count against
// per_user; a released hold gives its use back.
func TestAPromotionOfTwoUsesPerAccountAllowsTwoLiveUsesAndGivesOneBackOnRelease(t *testing.T) {
	s := newAdminStack(t)
	ctx := context.Background()
	tok := s.token("owner", "org_u", session.Organiser)
	id := s.event(tok, s.venue(tok, "org_u"))
	r := s.do(http.MethodPost, "/v1/admin/events/"+id+"/promotions", tok,
		map[string]any{"code": "TWICE", "percent_off": 10, "max_uses": 100, "per_user": 2})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	floor := store.SectionPrefix(id) + "floor"
	hold := func(fan string) apitest.Response {
		return s.do(http.MethodPost, "/v1/holds", s.fan(fan), map[string]any{"event_id": id, "section_id": floor, "quantity": 1,
			"promo_code": "TWICE"}, "Idempotency-Key", uuid.NewString())
	}
	for range 2 {
		r = hold("twice")
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		ok, err := s.st.Bookings.ConfirmSale(ctx, uuid.MustParse(r.Body["hold_id"].(string)))
		require.NoError(t, err)
		require.True(t, ok)
	}
	r = hold("twice")
	require.Equal(t, problemName("promotion-unavailable"), problemType(r), string(r.Raw))
	require.Contains(t, string(r.Raw), "already used 2 times by this account")
	r = hold("someone-else")
	require.Equal(t, http.StatusCreated, r.Status, "another account has uses of its own: %s", r.Raw)

	// A released hold gives its use back.
	require.Equal(t, 3, s.count(`SELECT used FROM promotions WHERE code = 'TWICE'`))
	rel := s.do(http.MethodDelete, "/v1/holds/"+r.Body["hold_id"].(string), s.fan("someone-else"), nil)
	require.Equal(t, http.StatusNoContent, rel.Status, string(rel.Raw))
	require.Equal(t, 2, s.count(`SELECT used FROM promotions WHERE code = 'TWICE'`), "the release gave the use back")
	require.Zero(t, s.count(`SELECT count(*) FROM promotion_uses WHERE reservation_id = $1`, uuid.MustParse(r.Body["hold_id"].(string))))
}

func TestAnAmountOffPromotionIsRefusedOutsideItsWindowAndOnceDisabled(t *testing.T) {
	s := newAdminStack(t)
	tok := s.token("owner", "org_w", session.Organiser)
	id := s.event(tok, s.venue(tok, "org_w"))
	floor := store.SectionPrefix(id) + "floor"
	promo := func(body map[string]any) apitest.Response {
		return s.do(http.MethodPost, "/v1/admin/events/"+id+"/promotions", tok, body)
	}
	hold := func(fan, code string) apitest.Response {
		return s.do(http.MethodPost, "/v1/holds", s.fan(fan), map[string]any{"event_id": id, "section_id": floor, "quantity": 2, "promo_code": code})
	}
	for name, c := range map[string]struct {
		body  map[string]any
		field string
	}{
		"both kinds":       {map[string]any{"code": "BOTH", "percent_off": 10, "amount_off": map[string]any{"amount": 1, "currency": "EUR"}, "max_uses": 1}, "percent_off"},
		"wrong currency":   {map[string]any{"code": "USD", "amount_off": map[string]any{"amount": 500, "currency": "USD"}, "max_uses": 1}, "amount_off.currency"},
		"per user of none": {map[string]any{"code": "ZERO", "percent_off": 10, "max_uses": 5, "per_user": 0}, "per_user"},
		"no uses":          {map[string]any{"code": "NONE", "percent_off": 10}, "max_uses"},
		"a bad window":     {map[string]any{"code": "WIN", "percent_off": 10, "max_uses": 1, "starts_at": time.Now(), "ends_at": time.Now().Add(-time.Hour)}, "ends_at"},
	} {
		t.Run(name, func(t *testing.T) {
			r := promo(c.body)
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
			require.Contains(t, string(r.Raw), `"field":"`+c.field+`"`)
		})
	}

	r := promo(map[string]any{"code": "FIVER", "amount_off": map[string]any{"amount": 500, "currency": "EUR"}, "max_uses": 10})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Equal(t, http.StatusConflict, promo(map[string]any{"code": "FIVER", "percent_off": 5, "max_uses": 1}).Status, "codes are unique")
	r = promo(map[string]any{"code": "LATER", "percent_off": 10, "max_uses": 10, "starts_at": time.Now().Add(time.Hour)})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	r = promo(map[string]any{"code": "OVER", "percent_off": 10, "max_uses": 10, "starts_at": time.Now().Add(-2 * time.Hour), "ends_at": time.Now().Add(-time.Hour)})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

	h := hold("early", "FIVER")
	require.Equal(t, http.StatusCreated, h.Status, string(h.Raw))
	require.EqualValues(t, 2*(2500-500), h.Body["total"].(map[string]any)["amount"], "5.00 off each ticket")
	for _, code := range []string{"LATER", "OVER"} {
		r := hold("window"+code, code)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
		require.Contains(t, string(r.Raw), `"field":"promo_code"`)
	}

	r = s.do(http.MethodDelete, "/v1/admin/events/"+id+"/promotions/FIVER", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.NotNil(t, r.Body["disabled_at"])
	r = hold("late", "FIVER")
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), "withdrawn")
	got := s.do(http.MethodGet, "/v1/holds/"+h.Body["hold_id"].(string), s.fan("early"), nil)
	require.Equal(t, http.StatusOK, got.Status, string(got.Raw))
	require.EqualValues(t, 4000, got.Body["total"].(map[string]any)["amount"], "a hold keeps its frozen price")
	require.Equal(t, http.StatusNotFound, s.do(http.MethodDelete, "/v1/admin/events/"+id+"/promotions/NOPE", tok, nil).Status)
}

func TestTheSalesReportCountsSoldHeldBlockedRevenueAndRefundsAsJSONAndCSV(t *testing.T) {
	s := newAdminStack(t)
	tok := s.token("owner", "org_s", session.Organiser)
	id := s.event(tok, s.venue(tok, "org_s"))
	ctx := context.Background()
	prefix := store.SectionPrefix(id)
	hold := func(fan string, body map[string]any) uuid.UUID {
		body["event_id"] = id
		r := s.do(http.MethodPost, "/v1/holds", s.fan(fan), body)
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		return uuid.MustParse(r.Body["hold_id"].(string))
	}
	// Sold: 3 on the floor (3 x 25.00) and balcony A-1, A-2 (2 x 40.00);
	// held: 2 on the floor, balcony B-1; refunded: balcony C-1; blocked: D-1.
	sold := []uuid.UUID{
		hold("f1", map[string]any{"section_id": prefix + "floor", "quantity": 3}),
		hold("f2", map[string]any{"seat_ids": []string{prefix + "balcony-A-1", prefix + "balcony-A-2"}}),
	}
	hold("f3", map[string]any{"section_id": prefix + "floor", "quantity": 2})
	hold("f4", map[string]any{"seat_ids": []string{prefix + "balcony-B-1"}})
	refunded := hold("f5", map[string]any{"seat_ids": []string{prefix + "balcony-C-1"}})
	for _, h := range append(sold, refunded) {
		ok, err := s.st.Bookings.ConfirmSale(ctx, h)
		require.NoError(t, err)
		require.True(t, ok)
	}
	_, err := s.pool.Exec(ctx, `UPDATE reservations SET status = 'CANCELLED' WHERE id = $1`, refunded)
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, `INSERT INTO payments (reservation_id, amount, currency, status) VALUES ($1, 4000, 'EUR', 'REFUNDED')`, refunded)
	require.NoError(t, err)
	r := s.do(http.MethodPost, "/v1/admin/events/"+id+"/seats/block", tok, map[string]any{"seat_ids": []string{prefix + "balcony-D-1"}, "reason": "desk"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	r = s.do(http.MethodGet, "/v1/admin/events/"+id+"/sales", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	bySection := map[string]map[string]any{}
	for _, sec := range r.Body["sections"].([]any) {
		m := sec.(map[string]any)
		bySection[m["section_id"].(string)] = m
	}
	want := map[string]map[string]float64{
		prefix + "floor":   {"capacity": 600, "sold": 3, "held": 2, "available": 595, "revenue": 7500, "refunded": 0},
		prefix + "balcony": {"capacity": 140, "sold": 2, "held": 1, "blocked": 1, "available": 136, "revenue": 8000, "refunded": 4000},
		"total":            {"capacity": 740, "sold": 5, "held": 3, "blocked": 1, "available": 731, "revenue": 15500, "refunded": 4000},
	}
	bySection["total"] = r.Body["totals"].(map[string]any)
	for sec, fields := range want {
		for f, v := range fields {
			require.EqualValues(t, v, bySection[sec][f], sec+" "+f)
		}
	}

	r = s.do(http.MethodGet, "/v1/admin/events/"+id+"/sales?format=csv", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv"))
	rows, err := csv.NewReader(strings.NewReader(string(r.Raw))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"section_id", "name", "capacity", "sold", "held", "blocked", "available", "revenue", "refunded", "charged_back_tickets", "charged_back", "resale_sold", "resale_volume", "resale_fees", "fees", "currency"}, rows[0])
	require.Equal(t, []string{prefix + "balcony", "Balcony", "140", "2", "1", "1", "136", "8000", "4000", "0", "0", "0", "0", "0", "0", "EUR"}, findRow(rows, prefix+"balcony"))
	require.Equal(t, []string{"total", "", "740", "5", "3", "1", "731", "15500", "4000", "0", "0", "0", "0", "0", "0", "EUR"}, findRow(rows, "total"))
}

func findRow(rows [][]string, first string) []string {
	for _, r := range rows {
		if r[0] == first {
			return r
		}
	}
	return nil
}

func TestTheSalesCSVNeutralisesSectionNamesThatASpreadsheetWouldRunAsFormulas(t *testing.T) {
	t.Parallel()
	s := newAdminStack(t)
	tok := s.token("owner", "org_csv", session.Organiser)
	v := venues.ClubVenue()
	require.Len(t, v.Layout.Sections, 2)
	formula := `=HYPERLINK("http://x.invalid","x")`
	v.Layout.Sections[0].Name = formula
	v.Layout.Sections[1].Name = "@SUM(1+1)"
	body, err := venues.EncodeJSON(v)
	require.NoError(t, err)
	r := s.do(http.MethodPost, "/v1/admin/venues?org=org_csv", tok, body, "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := s.event(tok, r.Body["venue_id"].(string))

	r = s.do(http.MethodGet, "/v1/admin/events/"+id+"/sales?format=csv", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	rows, err := csv.NewReader(strings.NewReader(string(r.Raw))).ReadAll()
	require.NoError(t, err)
	prefix := store.SectionPrefix(id)
	first, second := findRow(rows, prefix+v.Layout.Sections[0].ID), findRow(rows, prefix+v.Layout.Sections[1].ID)
	require.NotNil(t, first, "rows: %v", rows)
	require.NotNil(t, second, "rows: %v", rows)
	require.Equal(t, "'"+formula, first[1], "a leading quote makes the cell text")
	require.Equal(t, "'@SUM(1+1)", second[1])
	for _, row := range rows {
		for _, cell := range row {
			require.False(t, cell != "" && strings.ContainsRune("=+@\t\r", rune(cell[0])), "cell %q of %v", cell, row)
		}
	}
	// The report's own numbers stay numbers; the JSON keeps the names as typed.
	require.Equal(t, "140", findRow(rows, prefix+"balcony")[2])
	r = s.do(http.MethodGet, "/v1/admin/events/"+id+"/sales", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), `"=HYPERLINK(`)
}

func TestEveryMutatingAdminRouteLeavesAnAuditRecordListedByTheAuditRoute(t *testing.T) {
	s := newAdminStack(t)
	tok := s.token("auditee", "org_x", session.Organiser)
	venueID := s.venue(tok, "org_x")
	id := s.event(tok, venueID)
	r := s.do(http.MethodPatch, "/v1/admin/events/"+id, tok, map[string]any{"title": "Audited"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	seat := store.SectionPrefix(id) + "balcony-A-1"
	for _, action := range []string{"block", "unblock"} {
		r = s.do(http.MethodPost, "/v1/admin/events/"+id+"/seats/"+action, tok, map[string]any{"seat_ids": []string{seat}, "reason": "audit " + action})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}
	r = s.do(http.MethodPost, "/v1/admin/events/"+id+"/promotions", tok, map[string]any{"code": "AUDIT1", "percent_off": 10, "max_uses": 3})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	r = s.do(http.MethodDelete, "/v1/admin/events/"+id+"/promotions/AUDIT1", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	// Another organisation's record, which org_x's organiser must not see.
	other := s.token("other", "org_y", session.Organiser)
	s.venue(other, "org_y")

	r = s.do(http.MethodGet, "/v1/admin/audit?actor=auditee", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var actions []string
	for _, a := range r.Body["actions"].([]any) {
		m := a.(map[string]any)
		require.Equal(t, "auditee", m["actor"])
		require.Equal(t, "org_x", m["org_id"])
		require.NotEmpty(t, m["at"])
		actions = append(actions, m["action"].(string))
	}
	require.Equal(t, []string{"promotion.disable", "promotion.create", "seats.unblock", "seats.block", "event.patch",
		"event.publish", "event.create", "venue.create"}, actions, "newest first")

	r = s.do(http.MethodGet, "/v1/admin/audit?action=event.patch&target="+id, tok, nil)
	require.Equal(t, http.StatusOK, r.Status)
	patch := r.Body["actions"].([]any)[0].(map[string]any)
	require.Equal(t, "Admin Night", patch["before"].(map[string]any)["title"])
	require.Equal(t, "Audited", patch["after"].(map[string]any)["title"])
	r = s.do(http.MethodGet, "/v1/admin/audit?action=seats.block", tok, nil)
	require.Equal(t, "audit block", r.Body["actions"].([]any)[0].(map[string]any)["reason"])

	r = s.do(http.MethodGet, "/v1/admin/audit?actor=other", tok, nil)
	require.Empty(t, r.Body["actions"], "an organiser sees only their organisation's records")
	admin := s.token("root", "", session.Admin)
	r = s.do(http.MethodGet, "/v1/admin/audit?actor=other", admin, nil)
	require.Len(t, r.Body["actions"], 1)

	// Paging: two at a time until next_before is null.
	seen, before := 0, ""
	for range 10 {
		r = s.do(http.MethodGet, "/v1/admin/audit?actor=auditee&limit=2"+before, tok, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		seen += len(r.Body["actions"].([]any))
		if r.Body["next_before"] == nil {
			break
		}
		before = fmt.Sprintf("&before=%.0f", r.Body["next_before"])
	}
	require.Equal(t, len(actions), seen)
	require.Equal(t, http.StatusUnprocessableEntity, s.do(http.MethodGet, "/v1/admin/audit?before=x", tok, nil).Status)
}

func TestAnAdminsChangeToAnotherOrganisationsEventLandsInThatOrganisationsAuditLog(t *testing.T) {
	t.Parallel()
	// With the operator's routes too: an admin also sets an event's dials.
	s := newAdminStack(t, func(srv *api.Server) { srv.Operator = &api.Operator{Store: srv.Holds.Store} })
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
