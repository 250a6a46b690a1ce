package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/store"
)

// hotelStack is newStack's server with hotel search, and one hotel of two
// rooms a night from tomorrow.
func hotelStack(t *testing.T) (*stack, string, func(int) string) {
	t.Helper()
	s := newStack(t)
	ctx := context.Background()
	prop := "prop_api_" + testenv.RandomSuffix()
	now := time.Now().UTC()
	first := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, s.holds.Store.Hotels.CreateProperty(ctx, store.PropertySpec{ID: prop, Name: "API Hotel", City: "City" + prop,
		Currency: "EUR", RoomTypes: []store.RoomTypeSpec{{ID: "double", Name: "Double", MaxGuests: 2, Allotment: 2, Price: 9900}}}, first, 5))
	rpool, err := store.OpenReader(ctx, testenv.DatabaseURL(t), store.ReaderRole, store.PoolOptions{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(rpool.Close)
	srv := &api.Server{Holds: s.holds, Sessions: s.issuer, Log: s.holds.Log,
		Browse: &api.Browse{Hotels: hotels.NewSearch(store.NewReader(rpool), time.Millisecond)}}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s, prop, func(i int) string { return first.AddDate(0, 0, i).Format(time.DateOnly) }
}

func TestHotelSearchAndHotelOnlyHoldsOverHTTP(t *testing.T) {
	s, prop, day := hotelStack(t)
	stay := func(from, to string, rooms int) map[string]any {
		return map[string]any{"stays": []map[string]any{{"property_id": prop, "room_type": "double", "checkin": from, "checkout": to, "rooms": rooms}}}
	}

	r := s.do(http.MethodGet, "/v1/hotels/search?dest="+prop+"&checkin="+day(0)+"&checkout="+day(2)+"&guests=2", "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	props := r.Body["properties"].([]any)
	require.Len(t, props, 1)
	rt := props[0].(map[string]any)["room_types"].([]any)[0].(map[string]any)
	require.Equal(t, float64(2), rt["available"])
	require.Equal(t, map[string]any{"amount": float64(9900), "currency": "EUR"}, rt["price_per_night"])
	require.Len(t, rt["nights"], 2)

	r = s.do(http.MethodPost, "/v1/holds", s.fan("sleeper"), stay(day(1), day(2), 2))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Len(t, r.Body["stays"], 1)

	r = s.do(http.MethodPost, "/v1/holds", s.fan("late"), stay(day(0), day(3), 1))
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	require.Equal(t, problemName("room-unavailable"), problemType(r))
	require.Equal(t, prop, r.Body["property_id"])
	require.Equal(t, "double", r.Body["room_type"])
	require.Equal(t, day(1), r.Body["night"])
	require.Zero(t, s.count(`SELECT held FROM room_nights WHERE property_id = $1 AND night = $2`, prop, day(0)), "nothing held")

	cases := []struct {
		name, path string
		body       map[string]any
		field      string
	}{
		{"checkout before checkin", "/v1/holds", stay(day(2), day(1), 1), "stays[0].checkout"},
		{"no rooms", "/v1/holds", stay(day(0), day(1), 0), "stays[0].rooms"},
		{"search without dates", "/v1/hotels/search?dest=x", nil, "checkin"},
		{"search for a crowd", "/v1/hotels/search?dest=x&checkin=" + day(0) + "&checkout=" + day(1) + "&guests=99", nil, "guests"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := http.MethodGet
			if c.body != nil {
				method = http.MethodPost
			}
			r := s.do(method, c.path, s.fan("bad"), c.body)
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Raw))
			require.Contains(t, string(r.Raw), `"field":"`+c.field+`"`)
		})
	}
}
