// Package demo creates events: the demo data encore dev seeds, and the events
// tests and benchmarks build. Creation is idempotent: running it twice leaves
// one copy, and never touches seats that were already sold.
package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/encore-tickets/encore/store"
)

// Section describes a section to create (see store.SectionSpec).
type Section = store.SectionSpec

// Event describes an event to create (see store.EventSpec).
type Event = store.EventSpec

// SeatID names a seat.
func SeatID(sectionID string, row, number int) string {
	return fmt.Sprintf("%s-%s-%d", sectionID, rowLabel(row), number)
}

func rowLabel(row int) string {
	// Rows A..Z, then AA, AB, ...
	label := ""
	for row++; row > 0; row = (row - 1) / 26 {
		label = string(rune('A'+(row-1)%26)) + label
	}
	return label
}

// Create inserts the event, its venue, sections and seats if missing.
func Create(ctx context.Context, pool *pgxpool.Pool, e Event) error {
	return store.New(pool, store.Options{}).CreateEvent(ctx, e)
}

// Demo event IDs.
const (
	DemoNightID  = "evt_demo_night"
	FlashSaleID  = "evt_flash_sale"
	StadiumID    = "evt_demo_stadium"
	DemoPromo    = "WELCOME10"
	demoVenueID  = "ven_encore_arena"
	demoVenue    = "Encore Arena"
	stadiumVenue = "ven_encore_stadium"
	demoCity     = "Amsterdam"
	demoCurrency = "EUR"
)

// DemoEvents are the demo data that encore dev seeds, relative to now: all on
// sale, the first show a month away. The stadium (50,000 numbered seats,
// unmetered) is the event for load tests against encore dev: a burst of
// 10,000 holds leaves most of it free.
func DemoEvents(now time.Time) []Event {
	show := now.Truncate(24*time.Hour).AddDate(0, 1, 0).Add(20 * time.Hour)
	onsale := now.Truncate(24*time.Hour).AddDate(0, 0, -1)
	var night []Section
	for i, name := range []string{"Stalls A", "Stalls B", "Stalls C", "Balcony D", "Balcony E"} {
		night = append(night, Section{ID: fmt.Sprintf("sec_night_%c", 'a'+i), Name: name, Rows: 40, PerRow: 100,
			BasePrice: int64(9500 - 1000*i)})
	}
	night = append(night, Section{ID: "sec_night_floor", Name: "Floor (standing)", General: true, Capacity: 3000, BasePrice: 5500})
	return []Event{
		{ID: DemoNightID, Title: "Encore Demo Night", Artist: "The Encores", Genre: "rock",
			Description: "The demo event: 20,000 numbered seats in five sections and a standing floor.",
			VenueID:     demoVenueID, VenueName: demoVenue, City: demoCity, StartsAt: show, OnsaleAt: onsale,
			Currency: demoCurrency, Sections: night},
		{ID: FlashSaleID, Title: "Encore Flash Sale", Artist: "Nova Lights", Genre: "pop",
			Description: "A metered flash sale: fans go through the waiting room.",
			VenueID:     demoVenueID, VenueName: demoVenue, City: demoCity, StartsAt: show.AddDate(0, 0, 7), OnsaleAt: onsale,
			Currency: demoCurrency, Metered: true, Sections: []Section{
				{ID: "sec_flash_a", Name: "Arena A", Rows: 50, PerRow: 100, BasePrice: 12000},
				{ID: "sec_flash_b", Name: "Arena B", Rows: 50, PerRow: 100, BasePrice: 9000},
			}},
		{ID: StadiumID, Title: "Encore Stadium Night", Artist: "The Encores", Genre: "rock",
			Description: "The load-test event: 50,000 numbered seats in ten sections, no waiting room.",
			VenueID:     stadiumVenue, VenueName: "Encore Stadium", City: demoCity, StartsAt: show.AddDate(0, 0, 14), OnsaleAt: onsale,
			Currency: demoCurrency, Sections: stadiumSections()},
	}
}

// stadiumSections are the stadium's ten sections of 50 rows of 100 seats.
func stadiumSections() []Section {
	secs := make([]Section, 0, 10)
	for i := range 10 {
		secs = append(secs, Section{ID: fmt.Sprintf("sec_stadium_%c", 'a'+i), Name: fmt.Sprintf("Stand %c", 'A'+i),
			Rows: 50, PerRow: 100, BasePrice: int64(8000 - 500*i)})
	}
	return secs
}

// Seed creates the demo events and the demo promotion, idempotently. An event
// whose sections and seats are all there already is skipped without a write:
// re-inserting 75,000 seats with ON CONFLICT DO NOTHING on every start of
// encore dev would cost about a second.
func Seed(ctx context.Context, pool *pgxpool.Pool, now time.Time) error {
	for _, e := range DemoEvents(now) {
		done, err := complete(ctx, pool, e)
		if err != nil {
			return fmt.Errorf("demo: seed %s: %w", e.ID, err)
		}
		if done {
			continue
		}
		if err := Create(ctx, pool, e); err != nil {
			return fmt.Errorf("demo: seed %s: %w", e.ID, err)
		}
	}
	return store.New(pool, store.Options{}).CreatePromotion(ctx, DemoPromo, DemoNightID, 1000, 500)
}

// complete reports whether e's sections and numbered seats all exist.
func complete(ctx context.Context, pool *pgxpool.Pool, e Event) (bool, error) {
	ids := make([]string, 0, len(e.Sections))
	seats := 0
	for _, sec := range e.Sections {
		ids = append(ids, sec.ID)
		if !sec.General {
			seats += sec.Rows * sec.PerRow
		}
	}
	var haveSections, haveSeats int
	err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sections WHERE event_id = $1 AND id = ANY($2)),
		(SELECT count(*) FROM seats WHERE section_id = ANY($2))`, e.ID, ids).Scan(&haveSections, &haveSeats)
	return haveSections == len(ids) && haveSeats == seats, err
}
