package api

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/encore-tickets/encore/store"
)

// StayBody is one stay of POST /v1/holds: rooms of one room type from
// checkin to checkout (dates, YYYY-MM-DD; checkout is the morning after the
// last night).
type StayBody struct {
	PropertyID string `json:"property_id"`
	RoomType   string `json:"room_type"`
	Checkin    string `json:"checkin"`
	Checkout   string `json:"checkout"`
	Rooms      int    `json:"rooms"`
}

// Bounds of the stays of one hold.
const (
	maxStaysPerHold = 4
	maxRoomsPerStay = 9
)

// decodeStays validates the stays of a hold and returns them in a canonical
// order (property, room type, check-in): the idempotency hash ignores the
// order they were sent in, and concurrent holds take room-nights in one
// order.
func decodeStays(in []StayBody) ([]store.StayRequest, []FieldError) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > maxStaysPerHold {
		return nil, []FieldError{{"stays", fmt.Sprintf("at most %d stays per hold", maxStaysPerHold)}}
	}
	var errs []FieldError
	out := make([]store.StayRequest, 0, len(in))
	for i, st := range in {
		field := func(name string) string { return fmt.Sprintf("stays[%d].%s", i, name) }
		if !idPattern.MatchString(st.PropertyID) {
			errs = append(errs, FieldError{field("property_id"), "not a property ID"})
		}
		if !idPattern.MatchString(st.RoomType) {
			errs = append(errs, FieldError{field("room_type"), "not a room type ID"})
		}
		in, err1 := time.Parse(time.DateOnly, st.Checkin)
		out2, err2 := time.Parse(time.DateOnly, st.Checkout)
		switch {
		case err1 != nil:
			errs = append(errs, FieldError{field("checkin"), "a date, YYYY-MM-DD"})
		case err2 != nil:
			errs = append(errs, FieldError{field("checkout"), "a date, YYYY-MM-DD"})
		case !out2.After(in):
			errs = append(errs, FieldError{field("checkout"), "must be after checkin"})
		case out2.Sub(in) > store.MaxStayNights*24*time.Hour:
			errs = append(errs, FieldError{field("checkout"), fmt.Sprintf("at most %d nights", store.MaxStayNights)})
		}
		if st.Rooms < 1 || st.Rooms > maxRoomsPerStay {
			errs = append(errs, FieldError{field("rooms"), fmt.Sprintf("must be 1 to %d", maxRoomsPerStay)})
		}
		out = append(out, store.StayRequest{PropertyID: st.PropertyID, RoomType: st.RoomType, Checkin: in, Checkout: out2, Rooms: st.Rooms})
	}
	slices.SortStableFunc(out, func(a, b store.StayRequest) int {
		return cmp.Or(cmp.Compare(a.PropertyID, b.PropertyID), cmp.Compare(a.RoomType, b.RoomType), a.Checkin.Compare(b.Checkin))
	})
	return out, errs
}
