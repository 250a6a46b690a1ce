package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/store"
)

// hoardStack is newStack with n hotels of 20 doubles a night for ten nights
// from tomorrow: rooms enough that only a fan's own limits refuse a hold.
type hoardStack struct {
	*stack
	props []string
	first time.Time
}

func newHoardStack(t *testing.T, n int, opts ...stackOption) *hoardStack {
	t.Helper()
	s := newStack(t, opts...)
	now := time.Now().UTC()
	h := &hoardStack{stack: s, first: time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)}
	for i := range n {
		prop := fmt.Sprintf("prop_hoard%d_%s", i, testenv.RandomSuffix())
		require.NoError(t, s.holds.Store.Hotels.CreateProperty(context.Background(), store.PropertySpec{ID: prop,
			Name: "Hoard Hotel", City: "Hoardville", Currency: "EUR", RoomTypes: []store.RoomTypeSpec{
				{ID: "double", Name: "Double", MaxGuests: 2, Allotment: 20, Price: 9900}}}, h.first, 10))
		h.props = append(h.props, prop)
	}
	return h
}

// stay is a hold body of one stay: rooms doubles at property p from night
// from (0 is tomorrow) for nights nights.
func (h *hoardStack) stay(p, from, nights, rooms int) map[string]any {
	day := func(i int) string { return h.first.AddDate(0, 0, i).Format(time.DateOnly) }
	return map[string]any{"stays": []map[string]any{{"property_id": h.props[p], "room_type": "double",
		"checkin": day(from), "checkout": day(from + nights), "rooms": rooms}}}
}

func (h *hoardStack) holdStay(token string, body map[string]any, headers ...string) apitest.Response {
	h.t.Helper()
	return h.do(http.MethodPost, "/v1/holds", token, body, headers...)
}

// unpaidRoomNights is the audit: the live room-nights of userID's pending
// holds, read from the reservations themselves.
func (h *hoardStack) unpaidRoomNights(userID string) int {
	h.t.Helper()
	return h.count(`SELECT coalesce(sum(n.rooms), 0)::int FROM reservations r
		JOIN reservation_nights n ON n.reservation_id = r.id AND n.live
		WHERE r.user_id = $1 AND r.status = 'PENDING_PAYMENT'`, userID)
}

// The user ID behind a stack token (fan's naming).
func (h *hoardStack) userID(name string) string { return name + "_" + h.eventID }

func TestASecondUnpaidHoldOfTheSamePropertyOnAHeldNightIsRefusedNamingTheFirst(t *testing.T) {
	t.Parallel()
	h := newHoardStack(t, 2)
	fan := h.fan("twice")

	first := h.holdStay(fan, h.stay(0, 0, 2, 1), "Idempotency-Key", "stay-1")
	require.Equal(t, http.StatusCreated, first.Status, string(first.Raw))
	holdID := first.Body["hold_id"].(string)

	// The same request again under its key is the first answer, not a refusal.
	again := h.holdStay(fan, h.stay(0, 0, 2, 1), "Idempotency-Key", "stay-1")
	require.Equal(t, http.StatusCreated, again.Status, string(again.Raw))
	require.Equal(t, holdID, again.Body["hold_id"])

	for name, body := range map[string]map[string]any{
		"the same stay":        h.stay(0, 0, 2, 1),
		"more rooms":           h.stay(0, 0, 2, 2),
		"an overlapping stay":  h.stay(0, 1, 2, 1),
		"a night inside":       h.stay(0, 1, 1, 1),
		"a stay that encloses": h.stay(0, 0, 4, 1),
	} {
		r := h.holdStay(fan, body, "Idempotency-Key", uuid.NewString())
		require.Equal(t, http.StatusConflict, r.Status, "%s: %s", name, r.Raw)
		require.Equal(t, problemName("stay-already-held"), problemType(r), name)
		require.Equal(t, holdID, r.Body["hold_id"], name)
		require.Equal(t, h.props[0], r.Body["property_id"], name)
		require.Contains(t, string(r.Raw), `"field":"stays[0].property_id"`, name)
	}
	require.Equal(t, 2, h.unpaidRoomNights(h.userID("twice")), "only the first hold holds")

	// The nights after, another property, and another fan are all free to hold.
	require.Equal(t, http.StatusCreated, h.holdStay(fan, h.stay(0, 2, 1, 1)).Status)
	require.Equal(t, http.StatusCreated, h.holdStay(fan, h.stay(1, 0, 2, 1)).Status)
	require.Equal(t, http.StatusCreated, h.holdStay(h.fan("other"), h.stay(0, 0, 2, 1)).Status)

	// Once the first hold is released the fan may hold those nights again.
	rel := h.do(http.MethodDelete, "/v1/holds/"+holdID, fan, nil)
	require.Equal(t, http.StatusNoContent, rel.Status, string(rel.Raw))
	r := h.holdStay(fan, h.stay(0, 0, 2, 2))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
}

func TestAFansUnpaidRoomNightsStopAtTheLimitWithAProblemNamingItAndPackagesCountToo(t *testing.T) {
	t.Parallel()
	h := newHoardStack(t, 3)
	fan := h.fan("hoarder")

	r := h.holdStay(fan, h.stay(0, 0, 2, 3)) // 6 room-nights
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	first := r.Body["hold_id"].(string)

	r = h.holdStay(fan, h.stay(1, 0, 3, 1)) // 6 + 3 > 8
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
	require.Equal(t, problemName("stay-limit"), problemType(r))
	require.EqualValues(t, 8, r.Body["limit"])
	require.Contains(t, r.Body["detail"], "at most 8 unpaid room-nights per fan")
	require.Contains(t, r.Body["detail"], "you hold 6 and this hold asks for 3")
	require.Equal(t, []any{map[string]any{"field": "stays", "message": "at most 8 unpaid room-nights per fan"}}, r.Body["errors"])
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))

	// A package's stays count as well; refused, it holds no seat either.
	seat := h.seat("a", 1, 1)
	r = h.hold(fan, map[string]any{"seat_ids": []string{seat}, "stays": h.stay(2, 5, 3, 1)["stays"]})
	require.Equal(t, problemName("stay-limit"), problemType(r), string(r.Raw))
	require.Equal(t, "AVAILABLE", h.seatStatus(seat))

	r = h.holdStay(fan, h.stay(1, 0, 2, 1)) // exactly 8
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Equal(t, 8, h.unpaidRoomNights(h.userID("hoarder")))
	r = h.holdStay(fan, h.stay(2, 0, 1, 1))
	require.Equal(t, problemName("stay-limit"), problemType(r), string(r.Raw))

	// Paid stays are not hoarding: once the first hold is paid, the fan may
	// hold again.
	ok, err := h.holds.Store.Bookings.ConfirmSale(context.Background(), uuid.MustParse(first))
	require.NoError(t, err)
	require.True(t, ok)
	r = h.holdStay(fan, h.stay(2, 0, 3, 2))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Equal(t, 8, h.unpaidRoomNights(h.userID("hoarder")))
}

func TestTheRoomNightLimitIsConfigurable(t *testing.T) {
	t.Parallel()
	h := newHoardStack(t, 2, func(_ *demo.Event, svc *holds.Service) { svc.MaxUnpaidRoomNights = 3 })
	fan := h.fan("modest")
	require.Equal(t, http.StatusCreated, h.holdStay(fan, h.stay(0, 0, 3, 1)).Status)
	r := h.holdStay(fan, h.stay(1, 0, 1, 1))
	require.Equal(t, problemName("stay-limit"), problemType(r), string(r.Raw))
	require.EqualValues(t, 3, r.Body["limit"])
}

// parallelStays sends n hotel-only holds of one fan at once, the i-th with
// body(i) and a key of its own, each retried while busy as the app does
// (retryBusy), and returns the answers in order.
func (h *hoardStack) parallelStays(token string, n int, body func(i int) map[string]any) []apitest.Response {
	out := make([]apitest.Response, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			key := uuid.NewString()
			out[i] = retryBusy(func() apitest.Response { return h.holdStay(token, body(i), "Idempotency-Key", key) })
		}()
	}
	close(start)
	wg.Wait()
	return out
}

func TestManyParallelHoldsOfOneFanNeverTakeItPastTheRoomNightLimit(t *testing.T) {
	t.Parallel()
	h := newHoardStack(t, 3)
	fan := h.fan("stampede")
	const holds = 24 // 2 room-nights each, every one a property and night of its own
	answers := h.parallelStays(fan, holds, func(i int) map[string]any { return h.stay(i%3, i/3, 1, 2) })
	created := 0
	for _, r := range answers {
		switch r.Status {
		case http.StatusCreated:
			created++
		default:
			require.Equal(t, problemName("stay-limit"), problemType(r), string(r.Raw))
		}
	}
	require.Equal(t, 4, created, "8 room-nights are 4 holds of 2")
	// The audit: what the fan holds unpaid, and what the hotels count held.
	require.Equal(t, 8, h.unpaidRoomNights(h.userID("stampede")))
	require.Equal(t, 8, h.count(`SELECT coalesce(sum(held), 0)::int FROM room_nights WHERE property_id = ANY($1)`, h.props))
}

func TestManyParallelIdenticalStaysOfOneFanMakeOneHold(t *testing.T) {
	t.Parallel()
	h := newHoardStack(t, 1)
	fan := h.fan("copies")
	answers := h.parallelStays(fan, 16, func(int) map[string]any { return h.stay(0, 0, 2, 1) })
	var holdID string
	for _, r := range answers {
		if r.Status == http.StatusCreated {
			require.Empty(t, holdID, "a second hold was created")
			holdID = r.Body["hold_id"].(string)
		}
	}
	require.NotEmpty(t, holdID)
	for _, r := range answers {
		if r.Status != http.StatusCreated {
			require.Equal(t, problemName("stay-already-held"), problemType(r), string(r.Raw))
			require.Equal(t, holdID, r.Body["hold_id"])
		}
	}
	require.Equal(t, 2, h.unpaidRoomNights(h.userID("copies")))
	require.Equal(t, 2, h.count(`SELECT coalesce(sum(held), 0)::int FROM room_nights WHERE property_id = $1`, h.props[0]))
}
