package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// Demo hotel IDs: three hotels in Amsterdam near Encore Arena.
const (
	CanalHouse = "prop_canal_house"
	ArenaInn   = "prop_arena_inn"
	ZuidSuites = "prop_zuid_suites"
	// HotelNights is how many nights ahead the demo hotels sell.
	HotelNights = 90
	// DemoHotelier runs the demo hotels (org_encore, role hotelier).
	DemoHotelier = "hana"
)

// Where the demo arena stands: fans of its events are offered the hotels
// nearest it.
const arenaLat, arenaLng = 52.31237, 4.93712

// DemoHotel is a demo property as its hotelier would create it, and its
// nightly inventory per room type.
type DemoHotel struct {
	ID        string
	Fields    hotels.PropertyFields
	Inventory []DemoRoomNights
}

// DemoRoomNights is a room type's inventory: allotment, overbooking limit,
// the weekday rate and Friday's and Saturday's.
type DemoRoomNights struct {
	RoomType            string
	Allotment, Overbook int
	Rate, WeekendRate   int64
}

// DemoHotels are the demo hotels, each with two room types, at their
// distances from the arena (Arena Inn next door, Zuid Suites and Canal
// House across town). The Arena Inn overbooks its doubles by 4 rooms a
// night; Zuid Suites sells two nights at least.
func DemoHotels() []DemoHotel {
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	deg := func(f float64) *float64 { return &f }
	room := func(id, name string, guests int) hotels.RoomTypeFields {
		return hotels.RoomTypeFields{ID: id, Name: str(name), MaxGuests: num(guests)}
	}
	prop := func(name, address, email string, lat, lng float64, freeCancel, minStay int, rooms ...hotels.RoomTypeFields) hotels.PropertyFields {
		return hotels.PropertyFields{Name: str(name), City: str(demoCity), Address: str(address), Lat: deg(lat), Lng: deg(lng),
			Timezone: str(demoTimezone), CheckInTime: str("15:00"), CheckOutTime: str("11:00"), ContactEmail: str(email),
			Currency: str(demoCurrency), VenueID: str(ArenaVenueID), MinStay: num(minStay), FreeCancelDays: num(freeCancel),
			RoomTypes: rooms}
	}
	return []DemoHotel{
		{ID: CanalHouse, Fields: prop("Canal House", "Herengracht 341", "frontdesk@canalhouse.test", 52.36920, 4.88750, 2, 1,
			room("double", "Canal-view double", 2), room("family", "Family room", 4)),
			Inventory: []DemoRoomNights{{"double", 20, 0, 18900, 22900}, {"family", 6, 0, 26900, 31900}}},
		{ID: ArenaInn, Fields: prop("Arena Inn", "Arena Boulevard 12", "frontdesk@arenainn.test", 52.31420, 4.94150, 1, 1,
			room("double", "Standard double", 2), room("single", "Single", 1)),
			Inventory: []DemoRoomNights{{"double", 40, 4, 11900, 14900}, {"single", 15, 0, 8900, 8900}}},
		{ID: ZuidSuites, Fields: prop("Zuid Suites", "Beethovenstraat 60", "frontdesk@zuidsuites.test", 52.33870, 4.87320, 7, 2,
			room("suite", "Junior suite", 3), room("studio", "Studio", 2)),
			Inventory: []DemoRoomNights{{"suite", 10, 0, 24900, 24900}, {"studio", 12, 0, 16900, 16900}}},
	}
}

// SeedHotels makes the demo hotels as their hotelier would, through the
// hotels service (org_encore's properties, the arena placed on the map
// first), and puts nights from today for HotelNights nights on sale,
// idempotently: a property there already is completed with what it lacks
// (a database seeded before properties had an address), and only nights
// not yet on sale are added, so the counters, rates and stop-sells of
// nights already there (a hotelier's edits included) are kept. The venue
// must exist.
func SeedHotels(ctx context.Context, pool *pgxpool.Pool, now time.Time) error {
	st := store.New(pool, store.Options{})
	svc := hotels.NewService(st)
	scope := venues.Admin(venues.DemoOrg, "demo")
	if _, err := st.Catalogue.PlaceVenue(ctx, ArenaVenueID, arenaLat, arenaLng); err != nil {
		return fmt.Errorf("demo: place the arena: %w", err)
	}
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	last := today.AddDate(0, 0, HotelNights-1)
	for _, h := range DemoHotels() {
		p, err := st.Hotels.Property(ctx, h.ID, "")
		switch {
		case errors.Is(err, store.ErrNotFound):
			_, err = svc.CreateAs(ctx, scope, h.ID, h.Fields)
		case err == nil && (p.Lat == nil || p.ContactEmail == ""):
			_, err = svc.Patch(ctx, scope, h.ID, h.Fields)
		}
		if err != nil {
			return fmt.Errorf("demo: seed %s: %w", h.ID, err)
		}
		if err := seedNights(ctx, svc, scope, h, today, last); err != nil {
			return fmt.Errorf("demo: seed %s's nights: %w", h.ID, err)
		}
	}
	return nil
}

// seedNights puts a demo hotel's nights after the last one on sale (from
// today at the earliest) up to last on sale: the weekday rate on every
// night, then the weekend rate on Fridays and Saturdays.
func seedNights(ctx context.Context, svc *hotels.Service, scope venues.Scope, h DemoHotel, today, last time.Time) error {
	inv, err := svc.Inventory(ctx, scope, h.ID, today.Format(time.DateOnly), last.Format(time.DateOnly))
	if err != nil {
		return err
	}
	for _, rn := range h.Inventory {
		from := today
		for _, n := range inv.Nights {
			if night, _ := time.Parse(time.DateOnly, n.Night); n.RoomType == rn.RoomType && !night.Before(from) {
				from = night.AddDate(0, 0, 1)
			}
		}
		if from.After(last) {
			continue
		}
		allot, limit := rn.Allotment, rn.Overbook
		req := hotels.InventoryRequest{RoomType: rn.RoomType, From: from.Format(time.DateOnly), To: last.Format(time.DateOnly),
			Allotment: &allot, OverbookLimit: &limit, Rate: &money.Money{Amount: rn.Rate, Currency: demoCurrency}}
		if _, err := svc.SetInventory(ctx, scope, h.ID, req); err != nil {
			return err
		}
		if rn.WeekendRate != rn.Rate {
			weekend := hotels.InventoryRequest{RoomType: rn.RoomType, From: req.From, To: req.To, Weekdays: []int{5, 6},
				Rate: &money.Money{Amount: rn.WeekendRate, Currency: demoCurrency}}
			if _, err := svc.SetInventory(ctx, scope, h.ID, weekend); err != nil {
				return err
			}
		}
	}
	return nil
}
