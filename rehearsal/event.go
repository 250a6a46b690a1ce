package rehearsal

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Organiser is the demo organiser whose token creates rehearsal events:
// olga of org_encore, the organisation every demo event belongs to.
const (
	Organiser    = "olga"
	OrganiserOrg = "org_encore"
)

// A created event has sections of up to 500
// numbered seats in rows of 25; the first section is the dearest.
const (
	seatsPerRow     = 25
	seatsPerSection = 500
)

// rehearsalLayout is a venue of n numbered seats: sections "front" (the
// dearest), then "mid-1", "mid-2", ... of 20 rows of 25 seats.
func rehearsalLayout(n, standing int) map[string]any {
	var sections []map[string]any
	for s := 0; n > 0; s++ {
		inSection := min(n, seatsPerSection)
		n -= inSection
		id, category := "front", "front"
		if s > 0 {
			id, category = fmt.Sprintf("mid-%d", s), "mid"
		}
		var rows []map[string]any
		for r := 0; inSection > 0; r++ {
			inRow := min(inSection, seatsPerRow)
			inSection -= inRow
			seats := make([]map[string]any, inRow)
			for k := range seats {
				seats[k] = map[string]any{"number": k + 1, "x": float64(k) - float64(seatsPerRow)/2, "y": float64(s*22 + r)}
			}
			rows = append(rows, map[string]any{"label": rowLabel(r), "seats": seats})
		}
		sections = append(sections, map[string]any{"id": id, "name": fmt.Sprintf("Block %d", s+1), "kind": "seated",
			"category": category, "rows": rows})
	}
	if standing > 0 {
		sections = append(sections, map[string]any{"id": "pit", "name": "Standing pit", "kind": "general", "category": "pit",
			"capacity": standing})
	}
	return map[string]any{"sections": sections}
}

// rowLabel is A..Z, then AA, AB, ...
func rowLabel(row int) string {
	label := ""
	for row++; row > 0; row = (row - 1) / 26 {
		label = string(rune('A'+(row-1)%26)) + label
	}
	return label
}

// created is what createEvent made.
type created struct {
	EventID, VenueID string
	StartsAt         time.Time
}

// createEvent makes a fresh metered event of seats numbered seats through
// the organiser API, as the demo organiser: a venue, a draft on sale at
// opensAt with the given hold lifetime, published. It returns the event's
// ID.
func createEvent(ctx context.Context, e *edge, c *http.Client, run string, seats, standing int, opensAt time.Time, holdTTL time.Duration) (created, error) {
	a := e.api(ctx, c, "organiser", http.MethodPost, "/v1/sessions", "", map[string]any{"user_id": Organiser,
		"device_id": "d-" + Organiser + "-rehearsal", "email": Organiser + "@encore.test", "roles": []string{"organiser"}, "org": OrganiserOrg})
	var s struct {
		Token string `json:"token"`
	}
	if !a.ok() || a.decode(&s) != nil {
		return created{}, fmt.Errorf("sign in as %s: %s %s (is the demo login on? encore dev turns it on)", Organiser, a.name(), a.problem.Detail)
	}
	a = e.api(ctx, c, "organiser", http.MethodPost, "/v1/admin/venues", s.Token, map[string]any{
		"name": "Rehearsal Hall " + run, "city": "Rotterdam", "timezone": "Europe/Amsterdam", "layout": rehearsalLayout(seats, standing)},
		"Idempotency-Key", "venue-"+run)
	var v struct {
		VenueID string `json:"venue_id"`
	}
	if !a.ok() || a.decode(&v) != nil {
		return created{}, fmt.Errorf("create the venue: %s %s", a.name(), a.problem.Detail)
	}
	starts := time.Now().AddDate(0, 2, 0).UTC().Truncate(time.Hour)
	ttl := int(holdTTL / time.Second)
	prices := map[string]any{"front": map[string]any{"amount": 8000, "currency": "EUR"}}
	if seats > seatsPerSection {
		prices["mid"] = map[string]any{"amount": 5000, "currency": "EUR"}
	}
	if standing > 0 {
		prices["pit"] = map[string]any{"amount": 4000, "currency": "EUR"}
	}
	a = e.api(ctx, c, "organiser", http.MethodPost, "/v1/admin/events", s.Token, map[string]any{
		"venue_id": v.VenueID, "title": "Rehearsal " + run, "artist": "The Rehearsals", "genre": "pop",
		"starts_at": starts, "onsale_at": opensAt.UTC(), "currency": "EUR", "metered": true, "hold_ttl_seconds": ttl,
		"prices": prices, "resale": map[string]any{"enabled": true}}, "Idempotency-Key", "event-"+run)
	var ev struct {
		ID string `json:"event_id"`
	}
	if !a.ok() || a.decode(&ev) != nil || ev.ID == "" {
		return created{}, fmt.Errorf("create the event: %s %s", a.name(), a.problem.Detail)
	}
	a = e.api(ctx, c, "organiser", http.MethodPost, "/v1/admin/events/"+ev.ID+"/publish", s.Token, struct{}{},
		"Idempotency-Key", "publish-"+run)
	if !a.ok() {
		return created{}, fmt.Errorf("publish %s: %s %s", ev.ID, a.name(), a.problem.Detail)
	}
	return created{EventID: ev.ID, VenueID: v.VenueID, StartsAt: starts}, nil
}

// Hotelier and HotelierOrg are the hotelier who offers the rehearsal's
// package rooms.
const (
	Hotelier    = "hana"
	HotelierOrg = "org_rehearsal_hotels"
)

// createHotel makes a hotel beside the created venue, as a hotelier: one
// room type, "double", with rooms for the night of the show at 120 EUR.
// It returns the property's ID.
func createHotel(ctx context.Context, e *edge, c *http.Client, run string, ev created, rooms int) (string, error) {
	a := e.api(ctx, c, "hotelier", http.MethodPost, "/v1/sessions", "", map[string]any{"user_id": Hotelier,
		"device_id": "d-" + Hotelier + "-rehearsal", "email": Hotelier + "@encore.test", "roles": []string{"hotelier"}, "org": HotelierOrg})
	var s struct {
		Token string `json:"token"`
	}
	if !a.ok() || a.decode(&s) != nil {
		return "", fmt.Errorf("sign in as %s: %s %s", Hotelier, a.name(), a.problem.Detail)
	}
	a = e.api(ctx, c, "hotelier", http.MethodPost, "/v1/admin/properties", s.Token, map[string]any{
		"name": "Rehearsal Inn " + run, "city": "Rotterdam", "address": "1 Coolsingel", "lat": 51.92, "lng": 4.48,
		"timezone": "Europe/Amsterdam", "check_in_time": "14:00", "check_out_time": "11:00", "currency": "EUR",
		"contact_email": "frontdesk@rehearsal.test", "venue_id": ev.VenueID,
		"room_types": []map[string]any{{"id": "double", "name": "Double", "max_guests": 2}}}, "Idempotency-Key", "hotel-"+run)
	var p struct {
		ID string `json:"property_id"`
	}
	if !a.ok() || a.decode(&p) != nil || p.ID == "" {
		return "", fmt.Errorf("create the hotel: %s %s", a.name(), a.problem.Detail)
	}
	night := packageNight(ev).Format(time.DateOnly)
	a = e.api(ctx, c, "hotelier", http.MethodPut, "/v1/admin/properties/"+p.ID+"/inventory", s.Token, map[string]any{
		"room_type": "double", "from": night, "to": night, "allotment": rooms, "rate": map[string]any{"amount": 12000, "currency": "EUR"}},
		"Idempotency-Key", "rooms-"+run)
	if !a.ok() {
		return "", fmt.Errorf("the hotel's rooms: %s %s", a.name(), a.problem.Detail)
	}
	return p.ID, nil
}

// packageNight is the night a package stays: the show's, in the venue's
// zone.
func packageNight(ev created) time.Time {
	if tz, err := time.LoadLocation("Europe/Amsterdam"); err == nil {
		return ev.StartsAt.In(tz)
	}
	return ev.StartsAt
}
