package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
)

func TestBadHoldRequestsAreRefusedNamingTheField(t *testing.T) {
	s := newStack(t)
	fan := s.fan("clumsy")
	cases := []struct {
		name  string
		body  string
		field string
	}{
		{"empty body", ``, "body"},
		{"not JSON", `{"event_id":`, "body"},
		{"wrong type", `{"event_id": 5, "seat_ids": ["x"]}`, "event_id"},
		{"no event", `{"seat_ids": ["x"]}`, "event_id"},
		{"no seats", `{"event_id": "` + s.eventID + `"}`, "seat_ids"},
		{"seven seats", `{"event_id": "` + s.eventID + `", "seat_ids": ["a","b","c","d","e","f","g"]}`, "seat_ids"},
		{"duplicate seat", `{"event_id": "` + s.eventID + `", "seat_ids": ["a","a"]}`, "seat_ids[1]"},
		{"seats and section", `{"event_id": "` + s.eventID + `", "seat_ids": ["a"], "section_id": "b", "quantity": 1}`, "seat_ids"},
		{"zero quantity", `{"event_id": "` + s.eventID + `", "section_id": "b", "quantity": 0}`, "quantity"},
		{"unknown seat", `{"event_id": "` + s.eventID + `", "seat_ids": ["nope-1"]}`, "seat_ids"},
		{"unknown event", `{"event_id": "evt_missing", "seat_ids": ["nope-1"]}`, "event_id"},
		{"unknown section", `{"event_id": "` + s.eventID + `", "section_id": "sec_missing", "quantity": 1}`, "section_id"},
		{"quantity in a seated section", `{"event_id": "` + s.eventID + `", "section_id": "` + s.eventID + `_a", "quantity": 2}`, "section_id"},
		{"trailing data", `{"event_id": "x", "seat_ids": ["a"]} {}`, "body"},
		{"long promo", `{"event_id": "` + s.eventID + `", "seat_ids": ["a"], "promo_code": "` + strings.Repeat("p", 65) + `"}`, "promo_code"},
		{"NUL in the promo", `{"event_id": "` + s.eventID + `", "seat_ids": ["a"], "promo_code": "A\u0000B"}`, "promo_code"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(http.MethodPost, "/v1/holds", fan, []byte(tc.body))
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
			require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
			require.Equal(t, problemName("invalid-request"), problemType(r))
			errs := r.Body["errors"].([]any)
			require.Equal(t, tc.field, errs[0].(map[string]any)["field"])
		})
	}
	r := s.do(http.MethodPost, "/v1/holds", fan, []byte(`{"event_id": "`+s.eventID+`", "seat_ids": ["a"]}`), "Idempotency-Key", "caf\xc3\xa9")
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
	require.Equal(t, "Idempotency-Key", r.Body["errors"].([]any)[0].(map[string]any)["field"])
	require.Equal(t, 0, s.count(`SELECT count(*) FROM reservations WHERE event_id = $1`, s.eventID), "nothing half-written")
}

func TestCallsWithoutAValidTokenAreUnauthorized(t *testing.T) {
	s := newStack(t)
	for _, token := range []string{"", "garbage", s.fan("x") + "tampered"} {
		r := s.hold(token, map[string]any{"seat_ids": []string{s.seat("a", 0, 1)}})
		require.Equal(t, http.StatusUnauthorized, r.Status)
		require.Equal(t, problemName("unauthorized"), problemType(r))
	}
	r := s.do(http.MethodPost, "/v1/sessions", "", map[string]any{"user_id": "u1", "device_id": "d1"})
	require.Equal(t, http.StatusCreated, r.Status)
	require.NotEmpty(t, r.Body["token"])
	bad := s.do(http.MethodPost, "/v1/sessions", "", map[string]any{"user_id": "", "device_id": "d1"})
	require.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	require.Equal(t, http.StatusNotFound, s.do(http.MethodGet, "/v1/nowhere", "", nil).Status)
	require.Equal(t, http.StatusMethodNotAllowed, s.do(http.MethodPut, "/v1/holds", "", nil).Status)
}

// FuzzDecodeHoldRequest: any body either decodes into a cart that satisfies
// every rule the handler relies on, or is refused naming a field; never a panic.
func FuzzDecodeHoldRequest(f *testing.F) {
	f.Add([]byte(`{"event_id":"evt_1","seat_ids":["a-1","b-2"]}`))
	f.Add([]byte(`{"event_id":"evt_1","section_id":"s","quantity":2,"adjacent":true}`))
	f.Add([]byte(`{"event_id":"evt_1","seat_ids":["a","a"],"promo_code":"X"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"event_id":"\u0000"}`))
	f.Add([]byte(`{"event_id":"evt_1","listing_ids":["0b6f2a4e-8f7c-4a53-9a86-2b1b0c3d4e5f"]}`))
	f.Add([]byte(`{"event_id":"evt_1","listing_ids":["x"],"seat_ids":["a"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		cart, errs := api.DecodeHoldRequest(body)
		if len(errs) > 0 {
			for _, e := range errs {
				if e.Field == "" || e.Message == "" {
					t.Fatalf("refusal without field or message: %+v", e)
				}
			}
			return
		}
		if cart.EventID == "" || len(cart.EventID) > 100 {
			t.Fatalf("accepted bad event id %q", cart.EventID)
		}
		n := cart.Units()
		if n < 1 || n > 6 {
			t.Fatalf("accepted %d units", n)
		}
		if len(cart.SeatIDs) > 0 && cart.SectionID != "" {
			t.Fatal("accepted seats and a section")
		}
		for i := 1; i < len(cart.SeatIDs); i++ {
			if cart.SeatIDs[i-1] >= cart.SeatIDs[i] {
				t.Fatalf("seats not sorted and unique: %v", cart.SeatIDs)
			}
		}
		if len(cart.ListingIDs) > 0 && (len(cart.SeatIDs) > 0 || cart.SectionID != "" || len(cart.Stays) > 0 || cart.PromoCode != "") {
			t.Fatal("accepted listings beside seats, a section, stays or a promotion")
		}
		for i, id := range cart.ListingIDs {
			if u, err := uuid.Parse(id); err != nil || u.String() != id || (i > 0 && cart.ListingIDs[i-1] >= id) {
				t.Fatalf("accepted listing IDs not canonical, sorted and unique: %v", cart.ListingIDs)
			}
		}
	})
}
