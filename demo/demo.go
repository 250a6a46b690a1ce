// Package demo creates events: the demo data encore dev seeds, and the events
// tests and benchmarks build. Creation is idempotent: running it twice leaves
// one copy, and never touches seats that were already sold.
package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Section describes a section to create. Seated sections get Rows x PerRow
// seats named "<section>-<row>-<number>"; general sections get Capacity.
type Section struct {
	ID, Name  string
	General   bool
	Rows      int
	PerRow    int
	Capacity  int
	BasePrice int64 // minor units
}

// Event describes an event to create.
type Event struct {
	ID, Title, Artist, Genre, Description string
	VenueID, VenueName, City              string
	StartsAt, OnsaleAt                    time.Time
	Currency                              string
	Metered                               bool
	HoldTTL                               time.Duration // 0: the schema's default (10 minutes)
	PerCustomerLimit                      int           // 0: the schema's default (6)
	Sections                              []Section
}

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
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO venues (id, name, city) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
			e.VenueID, e.VenueName, e.City); err != nil {
			return err
		}
		ttl := int(e.HoldTTL.Seconds())
		if ttl == 0 {
			ttl = 600
		}
		limit := e.PerCustomerLimit
		if limit == 0 {
			limit = 6
		}
		if _, err := tx.Exec(ctx, `INSERT INTO events (id, venue_id, title, artist, genre, description, starts_at, onsale_at,
			currency, metered, hold_ttl_seconds, per_customer_limit)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`,
			e.ID, e.VenueID, e.Title, e.Artist, e.Genre, e.Description, e.StartsAt, e.OnsaleAt, e.Currency, e.Metered, ttl, limit); err != nil {
			return err
		}
		for i, s := range e.Sections {
			kind, capacity := "seated", s.Rows*s.PerRow
			if s.General {
				kind, capacity = "general", s.Capacity
			}
			if _, err := tx.Exec(ctx, `INSERT INTO sections (id, event_id, name, kind, capacity, base_price, sort_order)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
				s.ID, e.ID, s.Name, kind, capacity, s.BasePrice, i); err != nil {
				return err
			}
			if s.General {
				continue
			}
			// Seats are generated in SQL: 20,000 rows in one statement. Front
			// rows cost more: base price falls by 1% a row, to at most 30% off.
			if _, err := tx.Exec(ctx, `INSERT INTO seats (id, event_id, section_id, row_label, number, base_price)
				SELECT $2 || '-' || encore_row_label(r) || '-' || n, $1, $2, encore_row_label(r), n,
				       ($5::bigint * (100 - least(r, 30)) / 100)
				FROM generate_series(0, $3 - 1) r, generate_series(1, $4) n
				ON CONFLICT (id) DO NOTHING`, e.ID, s.ID, s.Rows, s.PerRow, s.BasePrice); err != nil {
				return err
			}
		}
		return nil
	})
}

// Demo event IDs.
const (
	DemoNightID  = "evt_demo_night"
	FlashSaleID  = "evt_flash_sale"
	DemoPromo    = "WELCOME10"
	demoVenueID  = "ven_encore_arena"
	demoVenue    = "Encore Arena"
	demoCity     = "Amsterdam"
	demoCurrency = "EUR"
)

// DemoEvents are the events of DESIGN.md's demo data, relative to now: both
// on sale, the show a month away.
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
	}
}

// Seed creates the demo events and the demo promotion, idempotently.
func Seed(ctx context.Context, pool *pgxpool.Pool, now time.Time) error {
	for _, e := range DemoEvents(now) {
		if err := Create(ctx, pool, e); err != nil {
			return fmt.Errorf("demo: seed %s: %w", e.ID, err)
		}
	}
	_, err := pool.Exec(ctx, `INSERT INTO promotions (code, event_id, discount_bps, max_uses)
		VALUES ($1, $2, 1000, 500) ON CONFLICT (code) DO NOTHING`, DemoPromo, DemoNightID)
	return err
}
