package hotels

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
)

// Query is a hotel search: destination (a city, a venue ID or a property
// ID), the stay's dates (checkout is the morning after the last night) and
// the guests per room.
type Query struct {
	Dest     string
	Checkin  time.Time
	Checkout time.Time
	Guests   int
}

// Nights is the number of nights of the stay.
func (q Query) Nights() int { return int(q.Checkout.Sub(q.Checkin).Hours()+12) / 24 }

// Results is the search's answer (the public contract's names).
type Results struct {
	Properties []Property `json:"properties"`
}

// Property is one hotel with its room types that fit the query.
type Property struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	City      string     `json:"city"`
	MinStay   int        `json:"min_stay"`
	RoomTypes []RoomType `json:"room_types"`
	// Address, coordinates and the distance from the venue: the hotels
	// of an event only (NearEvent).
	Address    string   `json:"address,omitempty"`
	Lat        *float64 `json:"lat,omitempty"`
	Lng        *float64 `json:"lng,omitempty"`
	DistanceKM *float64 `json:"distance_km,omitempty"`
}

// RoomType is one room type over the stay: Available is the fewest rooms
// left on any night (what a hold of the whole stay can get), PricePerNight
// the stay's total divided by its nights (rounded down), Total the stay's
// price for one room, and Nights each night's own figures.
type RoomType struct {
	ID            string      `json:"id"`
	Name          string      `json:"name"`
	MaxGuests     int         `json:"max_guests"`
	Available     int         `json:"available"`
	PricePerNight money.Money `json:"price_per_night"`
	Total         money.Money `json:"total"`
	Nights        []Night     `json:"nights"`
}

// Night is one night of a room type.
type Night struct {
	Date      string      `json:"date"`
	Available int         `json:"available"`
	Price     money.Money `json:"price"`
}

// Search answers hotel searches from the browse plane's read-only pool
// through a short in-process cache: availability shown may be a few seconds
// old, which only a hold (the database) can settle (rule 2).
type Search struct {
	reader *store.Reader
	ttl    time.Duration
	// RadiusKM is how far from an event's venue its hotels may be
	// (0: DefaultRadiusKM).
	RadiusKM float64
	group    singleflight.Group

	mu      sync.Mutex
	entries map[string]cached
}

type cached struct {
	res Results
	at  time.Time
}

// NewSearch searches through reader, caching each answer for ttl (0: 2s).
func NewSearch(reader *store.Reader, ttl time.Duration) *Search {
	if ttl <= 0 {
		ttl = 2 * time.Second
	}
	return &Search{reader: reader, ttl: ttl, entries: map[string]cached{}}
}

// maxCacheEntries bounds the cache; past it the cache starts over.
const maxCacheEntries = 4096

// Find answers q. A room type is listed when it sleeps q.Guests and is on
// sale every night; a property whose minimum stay is longer than the stay is
// left out.
func (s *Search) Find(ctx context.Context, q Query) (Results, error) {
	key := fmt.Sprintf("%s|%s|%s|%d", q.Dest, q.Checkin.Format(time.DateOnly), q.Checkout.Format(time.DateOnly), q.Guests)
	return s.cached(key, func() (Results, error) {
		props, err := s.reader.SearchHotels(ctx, store.HotelQuery{Dest: q.Dest, Checkin: q.Checkin, Checkout: q.Checkout, Guests: q.Guests})
		if err != nil {
			return Results{}, err
		}
		return shape(props, q.Nights()), nil
	})
}

// cached answers key from the cache, or by find (once for every caller
// asking the same at the same time), keeping the answer for the TTL.
func (s *Search) cached(key string, find func() (Results, error)) (Results, error) {
	s.mu.Lock()
	if e, ok := s.entries[key]; ok && time.Since(e.at) < s.ttl {
		s.mu.Unlock()
		return e.res, nil
	}
	s.mu.Unlock()
	v, err, _ := s.group.Do(key, func() (any, error) {
		res, err := find()
		if err != nil {
			return Results{}, err
		}
		s.mu.Lock()
		if len(s.entries) >= maxCacheEntries {
			s.entries = map[string]cached{}
		}
		s.entries[key] = cached{res: res, at: time.Now()}
		s.mu.Unlock()
		return res, nil
	})
	if err != nil {
		return Results{}, err
	}
	return v.(Results), nil
}

// shape applies the minimum stay and turns rows into the contract.
func shape(props []store.HotelProperty, nights int) Results {
	res := Results{Properties: []Property{}}
	for _, p := range props {
		if nights < p.MinStay {
			continue
		}
		out := Property{ID: p.ID, Name: p.Name, City: p.City, MinStay: p.MinStay, RoomTypes: []RoomType{},
			Address: p.Address, Lat: p.Lat, Lng: p.Lng}
		if p.DistanceKM != nil {
			km := math.Round(*p.DistanceKM*10) / 10 // to 100 m: a walk, not a survey
			out.DistanceKM = &km
		}
		for _, rt := range p.RoomTypes {
			r := RoomType{ID: rt.ID, Name: rt.Name, MaxGuests: rt.MaxGuests, Available: -1,
				Total: money.Money{Currency: p.Currency}, Nights: []Night{}}
			for _, n := range rt.Nights {
				if r.Available < 0 || n.Available < r.Available {
					r.Available = n.Available
				}
				r.Total.Amount += n.Price
				r.Nights = append(r.Nights, Night{Date: n.Night.Format(time.DateOnly), Available: n.Available,
					Price: money.Money{Amount: n.Price, Currency: p.Currency}})
			}
			r.Available = max(r.Available, 0)
			r.PricePerNight = money.Money{Amount: r.Total.Amount / int64(max(len(rt.Nights), 1)), Currency: p.Currency}
			out.RoomTypes = append(out.RoomTypes, r)
		}
		res.Properties = append(res.Properties, out)
	}
	return res
}
