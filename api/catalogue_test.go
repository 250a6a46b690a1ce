package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

func eur(amount int) map[string]any { return map[string]any{"amount": amount, "currency": "EUR"} }

// TestAnOrganiserSellsAdultAndChildTicketsWithAFeeAndTheirTaxOverHTTP: the
// organiser sets the organisation's VAT (a bad rate is refused naming the
// field), creates an event with adult and child types and a service fee,
// and publishes it; fans see the types with their prices; a hold naming
// child for one seat and nothing for another is priced per type, with the
// fee and the tax apart; a general-admission hold names its type.
func TestAnOrganiserSellsAdultAndChildTicketsWithAFeeAndTheirTaxOverHTTP(t *testing.T) {
	t.Parallel()
	s := newAdminStack(t)
	tok := s.token("owner", "org_types", session.Organiser)
	venueID := s.venue(tok, "org_types")

	r := s.do(http.MethodPatch, "/v1/admin/org", tok, map[string]any{"tax_rate_bp": 20001})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), `"field":"tax_rate_bp"`)
	r = s.do(http.MethodPatch, "/v1/admin/org", tok, map[string]any{"legal_name": "Types BV", "vat_id": "NL1B01",
		"tax_rate_bp": 900, "prices_include_tax": true, "invoice_prefix": "TYP"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.do(http.MethodGet, "/v1/admin/org", tok, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "Types BV", r.Body["legal_name"])
	require.EqualValues(t, 900, r.Body["tax_rate_bp"])

	body := eventBody(venueID)
	delete(body, "prices")
	body["ticket_types"] = []any{
		map[string]any{"id": "adult", "name": "Adult", "prices": map[string]any{"standing": eur(2500), "balcony": eur(4000)}},
		map[string]any{"id": "child", "name": "Child", "prices": map[string]any{"standing": eur(1200), "balcony": eur(2000)}, "max_per_order": 4},
	}
	body["service_fee"] = eur(150)
	r = s.do(http.MethodPost, "/v1/admin/events", tok, body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["event_id"].(string)
	require.Len(t, r.Body["ticket_types"], 2)
	require.EqualValues(t, 2500, r.Body["prices"].(map[string]any)["standing"].(map[string]any)["amount"], "the first type's prices are the event's")
	r = s.do(http.MethodPost, "/v1/admin/events/"+id+"/publish", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.do(http.MethodPatch, "/v1/admin/events/"+id, tok, map[string]any{"service_fee": eur(0)})
	require.Equal(t, http.StatusConflict, r.Status, "a published event's fee is fixed: "+string(r.Raw))

	r = s.do(http.MethodGet, "/v1/events/"+id, "", nil)
	require.Equal(t, http.StatusOK, r.Status)
	types := r.Body["ticket_types"].([]any)
	require.Equal(t, "child", types[1].(map[string]any)["id"])
	require.EqualValues(t, 1200, types[1].(map[string]any)["prices"].(map[string]any)["standing"].(map[string]any)["amount"])
	require.EqualValues(t, 150, r.Body["service_fee"].(map[string]any)["amount"])

	a, b := store.SectionPrefix(id)+"balcony-A-1", store.SectionPrefix(id)+"balcony-A-2"
	r = s.do(http.MethodPost, "/v1/holds", s.fan("family"), map[string]any{"event_id": id, "seat_ids": []string{a, b},
		"ticket_types": map[string]string{b: "child"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	items := r.Body["items"].([]any)
	require.Equal(t, "adult", items[0].(map[string]any)["ticket_type"])
	require.Equal(t, "child", items[1].(map[string]any)["ticket_type"])
	require.EqualValues(t, 2000, items[1].(map[string]any)["base_price"])
	require.EqualValues(t, 300, r.Body["fees"].(map[string]any)["amount"])
	tax := r.Body["tax"].(map[string]any)
	require.EqualValues(t, 900, tax["rate_bp"])
	total := r.Body["total"].(map[string]any)["amount"].(float64)
	require.InDelta(t, total*900/10900, tax["amount"].(float64), 1, "9 % VAT included in the total")

	r = s.do(http.MethodPost, "/v1/holds", s.fan("kid"), map[string]any{"event_id": id,
		"section_id": store.SectionPrefix(id) + "floor", "quantity": 2, "ticket_type": "child"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.EqualValues(t, 1200, r.Body["items"].([]any)[0].(map[string]any)["base_price"])

	r = s.do(http.MethodPost, "/v1/holds", s.fan("odd"), map[string]any{"event_id": id, "seat_ids": []string{store.SectionPrefix(id) + "balcony-A-3"},
		"ticket_types": map[string]string{store.SectionPrefix(id) + "balcony-A-3": "senior"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), `"field":"ticket_types.`+store.SectionPrefix(id)+`balcony-A-3"`)
}

// TestAnOrganiserCreatesASeriesOfDatesAndFansListThem: one request makes
// an event per date sharing the venue, prices and fee, published at once;
// GET /v1/events?series= lists the dates in order. A bad date is refused
// naming it, and nothing of the series is written.
func TestAnOrganiserCreatesASeriesOfDatesAndFansListThem(t *testing.T) {
	t.Parallel()
	s := newAdminStack(t)
	tok := s.token("owner", "org_series", session.Organiser)
	venueID := s.venue(tok, "org_series")
	day := func(d int) time.Time {
		return time.Now().Add(time.Duration(30+d) * 24 * time.Hour).Truncate(time.Second)
	}
	body := eventBody(venueID)
	body["title"] = "Summer Residency"
	body["service_fee"] = eur(100)
	delete(body, "starts_at")
	delete(body, "onsale_at")
	body["dates"] = []any{
		map[string]any{"starts_at": day(2), "onsale_at": time.Now().Add(-time.Minute)},
		map[string]any{"starts_at": day(1), "onsale_at": day(3)},
	}
	r := s.do(http.MethodPost, "/v1/admin/series", tok, body)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), `"field":"dates[1].onsale_at"`)

	body["dates"] = []any{
		map[string]any{"starts_at": day(3), "onsale_at": time.Now().Add(-time.Minute)},
		map[string]any{"starts_at": day(1), "onsale_at": time.Now().Add(-time.Minute)},
		map[string]any{"starts_at": day(2), "onsale_at": time.Now().Add(-time.Minute)},
	}
	body["publish"] = true
	r = s.do(http.MethodPost, "/v1/admin/series", tok, body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	series := r.Body["series_id"].(string)
	events := r.Body["events"].([]any)
	require.Len(t, events, 3)
	for _, ev := range events {
		require.Equal(t, series, ev.(map[string]any)["series_id"])
		require.Equal(t, "ON_SALE", ev.(map[string]any)["status"])
		require.EqualValues(t, 100, ev.(map[string]any)["service_fee"].(map[string]any)["amount"])
	}

	r = s.do(http.MethodGet, "/v1/events?series="+series, "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	listed := r.Body["events"].([]any)
	require.Len(t, listed, 3)
	var starts []string
	for _, ev := range listed {
		starts = append(starts, ev.(map[string]any)["starts_at"].(string))
	}
	require.IsIncreasing(t, starts, "the dates in order")
	r = s.do(http.MethodGet, "/v1/events/"+listed[0].(map[string]any)["id"].(string), "", nil)
	require.Equal(t, series, r.Body["series_id"])
}

func TestAnEventsQuestionsAreCheckedAsTheOrganiserSetsThem(t *testing.T) {
	t.Parallel()
	s := newAdminStack(t)
	tok := s.token("owner", "org_q", session.Organiser)
	body := eventBody(s.venue(tok, "org_q"))
	r := s.do(http.MethodPost, "/v1/admin/events", tok, body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["event_id"].(string)
	for _, tc := range []struct {
		name  string
		patch map[string]any
		field string
	}{
		{"an unknown kind", map[string]any{"questions": []any{map[string]any{"id": "name", "label": "Name", "kind": "essay"}}}, "questions[0].kind"},
		{"a choice without choices", map[string]any{"questions": []any{map[string]any{"id": "size", "label": "Size", "kind": "choice"}}}, "questions[0].choices"},
		{"a type requiring no such question", map[string]any{"ticket_types": []any{
			map[string]any{"id": "adult", "name": "Adult", "prices": map[string]any{"standing": eur(2500), "balcony": eur(4000)}, "requires": "age"}}},
			"ticket_types[0].requires"},
	} {
		r := s.do(http.MethodPatch, "/v1/admin/events/"+id, tok, tc.patch)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, tc.name+": "+string(r.Raw))
		require.Contains(t, string(r.Raw), `"field":"`+tc.field+`"`, tc.name)
	}
	r = s.do(http.MethodPatch, "/v1/admin/events/"+id, tok, map[string]any{"questions": []any{
		map[string]any{"id": "name", "label": "Attendee name", "kind": "text", "required": true}}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "ticket", r.Body["questions"].([]any)[0].(map[string]any)["per"], "per ticket unless said")
	r = s.do(http.MethodGet, "/v1/admin/events/"+id+"/sales?format=csv&answers=1", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), "\nticket_id,booking_id,section_id,seat_id,email,name\n", "the answers' columns after the sections")
}

// TestAnOrganiserChangesAPromotionsTermsAndHoldsTakenKeepTheirPrice: the
// organiser raises a code's discount and its limit; a hold taken before
// keeps its price, one after gets the new discount; a limit below the uses
// made, or a bad percentage, is refused naming the field; the change is in
// the audit log.
func TestAnOrganiserChangesAPromotionsTermsAndHoldsTakenKeepTheirPrice(t *testing.T) {
	t.Parallel()
	s := newAdminStack(t)
	tok := s.token("owner", "org_promo_edit", session.Organiser)
	id := s.event(tok, s.venue(tok, "org_promo_edit"))
	r := s.do(http.MethodPost, "/v1/admin/events/"+id+"/promotions", tok, map[string]any{"code": "EDIT10", "percent_off": 10, "max_uses": 5})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	floor := store.SectionPrefix(id) + "floor"
	hold := func(fan string) map[string]any {
		r := s.do(http.MethodPost, "/v1/holds", s.fan(fan), map[string]any{"event_id": id, "section_id": floor, "quantity": 1, "promo_code": "EDIT10"})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		return r.Body["items"].([]any)[0].(map[string]any)
	}
	early := hold("early")
	require.EqualValues(t, 250, early["discount"], "10 % of 25.00")

	for _, tc := range []struct {
		patch map[string]any
		field string
	}{
		{map[string]any{"max_uses": 0}, "max_uses"},
		{map[string]any{"percent_off": 150}, "percent_off"},
	} {
		r = s.do(http.MethodPatch, "/v1/admin/events/"+id+"/promotions/EDIT10", tok, tc.patch)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
		require.Contains(t, string(r.Raw), `"field":"`+tc.field+`"`)
	}
	r = s.do(http.MethodPatch, "/v1/admin/events/"+id+"/promotions/EDIT10", tok, map[string]any{"percent_off": 20, "max_uses": 50})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.EqualValues(t, 2000, r.Body["discount_bps"])
	require.EqualValues(t, 50, r.Body["max_uses"])
	require.EqualValues(t, 1, r.Body["used"], "the use already made stays counted")

	late := hold("late")
	require.EqualValues(t, 500, late["discount"], "20 % now")
	r = s.do(http.MethodGet, "/v1/admin/audit?action=promotion.update", tok, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Len(t, r.Body["actions"], 1)
	r = s.do(http.MethodPatch, "/v1/admin/events/"+id+"/promotions/NOPE", tok, map[string]any{"max_uses": 3})
	require.Equal(t, http.StatusNotFound, r.Status)
}
