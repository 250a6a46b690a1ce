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
