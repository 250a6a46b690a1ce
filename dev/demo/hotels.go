package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/encore-tickets/encore/store"
)

// Demo hotel IDs: three hotels in Amsterdam near Encore Arena.
const (
	CanalHouse = "prop_canal_house"
	ArenaInn   = "prop_arena_inn"
	ZuidSuites = "prop_zuid_suites"
	// HotelNights is how many nights ahead the demo hotels sell.
	HotelNights = 90
)

// DemoHotels are the demo hotels, each with two room types. The Arena Inn
// overbooks its doubles by 4 rooms a night; Zuid Suites sells two nights
// at least.
func DemoHotels() []store.PropertySpec {
	return []store.PropertySpec{
		{ID: CanalHouse, Name: "Canal House", City: demoCity, VenueID: ArenaVenueID, Currency: demoCurrency, FreeCancelDays: 2,
			RoomTypes: []store.RoomTypeSpec{
				{ID: "double", Name: "Canal-view double", MaxGuests: 2, Allotment: 20, Price: 18900, WeekendPrice: 22900},
				{ID: "family", Name: "Family room", MaxGuests: 4, Allotment: 6, Price: 26900, WeekendPrice: 31900},
			}},
		{ID: ArenaInn, Name: "Arena Inn", City: demoCity, VenueID: ArenaVenueID, Currency: demoCurrency, FreeCancelDays: 1,
			RoomTypes: []store.RoomTypeSpec{
				{ID: "double", Name: "Standard double", MaxGuests: 2, Allotment: 40, OverbookLimit: 4, Price: 11900, WeekendPrice: 14900},
				{ID: "single", Name: "Single", MaxGuests: 1, Allotment: 15, Price: 8900},
			}},
		{ID: ZuidSuites, Name: "Zuid Suites", City: demoCity, VenueID: ArenaVenueID, Currency: demoCurrency, MinStay: 2, FreeCancelDays: 7,
			RoomTypes: []store.RoomTypeSpec{
				{ID: "suite", Name: "Junior suite", MaxGuests: 3, Allotment: 10, Price: 24900},
				{ID: "studio", Name: "Studio", MaxGuests: 2, Allotment: 12, Price: 16900},
			}},
	}
}

// SeedHotels creates the demo hotels with nights from today for
// HotelNights nights, idempotently (existing nights keep their counters; a
// later day adds the nights that came into range). The venue must exist.
func SeedHotels(ctx context.Context, pool *pgxpool.Pool, now time.Time) error {
	s := store.New(pool, store.Options{})
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	for _, p := range DemoHotels() {
		if err := s.Hotels.CreateProperty(ctx, p, today, HotelNights); err != nil {
			return fmt.Errorf("demo: seed %s: %w", p.ID, err)
		}
	}
	return nil
}
