package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/store"
)

// maxGuestsPerRoom bounds the guests a search asks a room to sleep.
const maxGuestsPerRoom = 20

// DecodeHotelQuery validates GET /v1/hotels/search's parameters: dest (a
// city, venue or property ID), checkin and checkout (YYYY-MM-DD, at most
// store.MaxStayNights apart) and guests per room (default 1).
func DecodeHotelQuery(dest, checkin, checkout, guests string) (hotels.Query, []FieldError) {
	q := hotels.Query{Dest: strings.TrimSpace(dest), Guests: 1}
	var errs []FieldError
	switch {
	case q.Dest == "":
		errs = append(errs, FieldError{"dest", "required: a city, venue or property"})
	case len(q.Dest) > 200 || !storableText(q.Dest):
		errs = append(errs, FieldError{"dest", "UTF-8 text without NUL, at most 200 characters"})
	}
	in, err1 := time.Parse(time.DateOnly, checkin)
	out, err2 := time.Parse(time.DateOnly, checkout)
	switch {
	case err1 != nil:
		errs = append(errs, FieldError{"checkin", "required: a date, YYYY-MM-DD"})
	case err2 != nil:
		errs = append(errs, FieldError{"checkout", "required: a date, YYYY-MM-DD"})
	case !out.After(in):
		errs = append(errs, FieldError{"checkout", "must be after checkin"})
	case out.Sub(in) > store.MaxStayNights*24*time.Hour:
		errs = append(errs, FieldError{"checkout", fmt.Sprintf("at most %d nights", store.MaxStayNights)})
	}
	q.Checkin, q.Checkout = in, out
	var bad *FieldError
	if q.Guests, bad = countParam("guests", guests, q.Guests, maxGuestsPerRoom, fmt.Sprintf("1 to %d", maxGuestsPerRoom)); bad != nil {
		errs = append(errs, *bad)
	}
	return q, errs
}

// hotelHandlers serve hotel search (browse plane) and the admin's
// overbooking limits and walks.
type hotelHandlers struct {
	search      *hotels.Search
	overbooking *hotels.Overbooking
	walks       Walker
	audit       auditTrail
	problems    problems
}

// newHotelHandlers builds the hotel routes' handlers: search from the
// browse plane, overbooking and walks from the admin API (either may be
// nil; their routes are then not served).
func newHotelHandlers(b *Browse, a *Admin, p problems) *hotelHandlers {
	h := &hotelHandlers{problems: p, audit: auditTrail{log: p.log}}
	if b != nil {
		h.search = b.Hotels
	}
	if a != nil {
		h.overbooking, h.walks, h.audit.events = a.Overbooking, a.Walks, a.Events
		if h.overbooking == nil {
			h.overbooking = &hotels.Overbooking{Store: a.Store}
		}
	}
	return h
}

// eventHotels is GET /v1/events/{event_id}/hotels?guests=&nights=: the
// properties nearest the event's venue with their rates for the event's
// nights (hotels.Search.NearEvent), for a package beside the seats.
func (h *hotelHandlers) eventHotels(c *gin.Context) {
	eventID, ok := pathID(c, "event_id", "event")
	if !ok {
		return
	}
	var errs []FieldError
	number := func(name string, def, most int) int {
		n, bad := countParam(name, c.Query(name), def, most, fmt.Sprintf("1 to %d", most))
		if bad != nil {
			errs = append(errs, *bad)
		}
		return n
	}
	guests, nights := number("guests", 1, maxGuestsPerRoom), number("nights", 1, hotels.MaxEventNights)
	if len(errs) > 0 {
		writeProblem(c, Invalid(errs...))
		return
	}
	res, err := h.search.NearEvent(c.Request.Context(), eventID, guests, nights)
	h.problems.answer(c, res, err)
}

func (h *hotelHandlers) searchHotels(c *gin.Context) {
	q, errs := DecodeHotelQuery(c.Query("dest"), c.Query("checkin"), c.Query("checkout"), c.Query("guests"))
	if len(errs) > 0 {
		writeProblem(c, Invalid(errs...))
		return
	}
	res, err := h.search.Find(c.Request.Context(), q)
	h.problems.answer(c, res, err)
}

// overbookingRequest is PUT /v1/admin/properties/{id}/overbooking: the
// limit itself, or the walk risk accepted at a show rate.
type overbookingRequest struct {
	RoomType string   `json:"room_type"`
	Night    string   `json:"night"`
	Limit    *int     `json:"limit"`
	WalkRisk *float64 `json:"walk_risk"`
	ShowRate *float64 `json:"show_rate"`
}

// setOverbooking is PUT /v1/admin/properties/{id}/overbooking: a
// room-night's new limit, given or from a walk risk (hotels.Overbooking).
func (h *hotelHandlers) setOverbooking(c *gin.Context) {
	var req overbookingRequest
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	night, err := time.Parse(time.DateOnly, req.Night)
	var errs []FieldError
	if req.RoomType == "" {
		errs = append(errs, FieldError{"room_type", "required"})
	}
	if err != nil {
		errs = append(errs, FieldError{"night", "required: a date, YYYY-MM-DD"})
	}
	switch {
	case (req.Limit == nil) == (req.WalkRisk == nil):
		errs = append(errs, FieldError{"limit", "exactly one of limit and walk_risk (with show_rate)"})
	case req.Limit != nil && (*req.Limit < 0 || *req.Limit > 10000):
		errs = append(errs, FieldError{"limit", "0 to 10000"})
	case req.WalkRisk != nil && req.ShowRate == nil:
		errs = append(errs, FieldError{"show_rate", "required with walk_risk"})
	}
	if len(errs) > 0 {
		writeProblem(c, Invalid(errs...))
		return
	}
	property := c.Param("property_id")
	before, after, err := h.overbooking.Set(c.Request.Context(), hotels.OverbookingChange{PropertyID: property,
		RoomType: req.RoomType, Night: night, Limit: req.Limit, WalkRisk: req.WalkRisk, ShowRate: req.ShowRate})
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	h.audit.record(c, pathProperty(c).OrgID, "hotel.overbooking", property+"/"+req.RoomType+"/"+req.Night, "", roomNightView(before), roomNightView(after))
	c.JSON(http.StatusOK, roomNightView(after))
}

func roomNightView(rn store.RoomNight) gin.H {
	return gin.H{"property_id": rn.PropertyID, "room_type": rn.RoomType, "night": rn.Night.Format(time.DateOnly),
		"allotment": rn.Allotment, "overbook_limit": rn.OverbookLimit, "held": rn.Held, "sold": rn.Sold}
}

// Walker walks hotel guests off an overbooked night.
type Walker interface {
	Walk(ctx context.Context, req hotels.WalkRequest) ([]store.Walk, error)
}

// walkRooms is POST /v1/admin/properties/{id}/walks: walks bookings off an
// overbooked night and answers every walk of it.
func (h *hotelHandlers) walkRooms(c *gin.Context) {
	var req struct {
		Night string `json:"night"`
		Rooms int    `json:"rooms"`
	}
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	night, err := time.Parse(time.DateOnly, req.Night)
	if err != nil {
		writeProblem(c, Invalid(FieldError{"night", "required: a date, YYYY-MM-DD"}))
		return
	}
	property := c.Param("property_id")
	walks, err := h.walks.Walk(c.Request.Context(), hotels.WalkRequest{PropertyID: property, Night: night, Rooms: req.Rooms})
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	out := make([]gin.H, len(walks))
	for i, w := range walks {
		out[i] = gin.H{"booking_id": w.ReservationID, "outcome": w.Outcome, "from_property": w.FromProperty, "to_property": w.ToProperty,
			"to_room_type": w.ToRoomType, "rooms": w.Rooms, "refund": w.Refund, "compensation": w.Compensation,
			"currency": w.Currency, "notified": w.Notified}
	}
	h.audit.record(c, pathProperty(c).OrgID, "hotel.walk", property+"/"+req.Night, "", nil, gin.H{"rooms": req.Rooms, "walks": out})
	c.JSON(http.StatusOK, gin.H{"walks": out})
}
