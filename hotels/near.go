package hotels

import (
	"context"
	"fmt"
	"time"

	"github.com/encore-tickets/encore/store"
)

// DefaultRadiusKM is how far from a venue its event's hotels may be.
const DefaultRadiusKM = 25

// MaxEventNights bounds the nights a fan may ask an event's hotels for.
const MaxEventNights = 7

// EventHotels is GET /v1/events/{event_id}/hotels: the properties near the
// event's venue, nearest first, with their rates for the event's nights
// (the night of the show, and Nights-1 after it), ready to hold beside the
// seats as a package.
type EventHotels struct {
	EventID    string     `json:"event_id"`
	Checkin    string     `json:"checkin"`
	Checkout   string     `json:"checkout"`
	Guests     int        `json:"guests"`
	Properties []Property `json:"properties"`
}

// ShowNight is the night a fan going to a show starting at startsAt in
// zone sleeps near it: the show's own calendar day on the venue's clocks,
// or the day before for a show starting before 06:00 (an all-nighter's
// guests check in the evening before).
func ShowNight(startsAt time.Time, zone string) time.Time {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		loc = time.UTC
	}
	t := startsAt.In(loc)
	if t.Hour() < 6 {
		t = t.AddDate(0, 0, -1)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// NearEvent answers an event's hotels for guests per room over nights
// nights from the show's night, through the cache as Find does (a rate or
// stop-sell changed by a hotelier shows within the cache's TTL). An event
// fans cannot see is store.ErrNotFound.
func (s *Search) NearEvent(ctx context.Context, eventID string, guests, nights int) (EventHotels, error) {
	place, err := s.reader.EventPlace(ctx, eventID)
	if err != nil {
		return EventHotels{}, err
	}
	in := ShowNight(place.StartsAt, place.Timezone)
	out := in.AddDate(0, 0, nights)
	radius := s.RadiusKM
	if radius <= 0 {
		radius = DefaultRadiusKM
	}
	key := fmt.Sprintf("near|%s|%s|%d|%d", eventID, in.Format(time.DateOnly), nights, guests)
	res, err := s.cached(key, func() (Results, error) {
		props, err := s.reader.HotelsNear(ctx, place, store.NearQuery{EventID: eventID, Checkin: in, Checkout: out, Guests: guests,
			RadiusKM: radius})
		if err != nil {
			return Results{}, err
		}
		return shape(props, nights), nil
	})
	if err != nil {
		return EventHotels{}, err
	}
	return EventHotels{EventID: eventID, Checkin: in.Format(time.DateOnly), Checkout: out.Format(time.DateOnly), Guests: guests,
		Properties: res.Properties}, nil
}
