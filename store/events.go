package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// SectionSpec describes a section to create. Seated sections get Rows x PerRow
// seats named "<section>-<row>-<number>"; general sections get Capacity.
type SectionSpec struct {
	ID, Name  string
	General   bool
	Rows      int
	PerRow    int
	Capacity  int
	BasePrice int64  // minor units
	Category  string // "" is "standard"
}

// EventSpec describes an event to create.
type EventSpec struct {
	ID, Title, Artist, Genre, Description string
	VenueID, VenueName, City              string
	Timezone                              string // the venue's IANA zone; empty: UTC
	StartsAt, OnsaleAt                    time.Time
	Currency                              string
	Metered                               bool
	HoldTTL                               time.Duration // 0: the schema's default (10 minutes)
	PerCustomerLimit                      int           // 0: the schema's default (6)
	Sections                              []SectionSpec
}

// CreateEvent inserts the event, its venue, sections and seats if missing.
func (s *Catalogue) CreateEvent(ctx context.Context, e EventSpec) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO venues (id, name, city, timezone) VALUES ($1, $2, $3, coalesce(nullif($4, ''), 'UTC'))
			ON CONFLICT (id) DO NOTHING`, e.VenueID, e.VenueName, e.City, e.Timezone); err != nil {
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
		for i, sec := range e.Sections {
			kind, capacity := "seated", sec.Rows*sec.PerRow
			if sec.General {
				kind, capacity = "general", sec.Capacity
			}
			category := sec.Category
			if category == "" {
				category = "standard"
			}
			if _, err := tx.Exec(ctx, `INSERT INTO sections (id, event_id, name, kind, capacity, base_price, sort_order, category)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
				sec.ID, e.ID, sec.Name, kind, capacity, sec.BasePrice, i, category); err != nil {
				return err
			}
			if sec.General {
				continue
			}
			// Seats are generated in SQL: 20,000 rows in one statement. Front
			// rows cost more: base price falls by 1% a row, to at most 30% off.
			// On the plan, a grid: x is the seat's number, y its row's index.
			if _, err := tx.Exec(ctx, `INSERT INTO seats (id, event_id, section_id, row_label, number, base_price, category, x, y)
				SELECT $2 || '-' || encore_row_label(r) || '-' || n, $1, $2, encore_row_label(r), n,
				       ($5::bigint * (100 - least(r, 30)) / 100), $6, n, r
				FROM generate_series(0, $3 - 1) r, generate_series(1, $4) n
				ON CONFLICT (id) DO NOTHING`, e.ID, sec.ID, sec.Rows, sec.PerRow, sec.BasePrice, category); err != nil {
				return err
			}
		}
		return nil
	})
}

// CreatePromotion inserts the event's promotion code if the event does not
// have it yet (demo data).
func (s *Promotions) CreatePromotion(ctx context.Context, code, eventID string, discountBps, maxUses int) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO promotions (code, event_id, discount_bps, max_uses)
		VALUES ($1, $2, $3, $4) ON CONFLICT (event_id, code) DO NOTHING`, code, eventID, discountBps, maxUses)
	return err
}
