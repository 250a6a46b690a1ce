package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// VenueImport is a validated venue with its layout, as the venues package
// hands it over to be written.
type VenueImport struct {
	ID, OrgID, Name, City, Timezone string
	// Lat and Lng place the venue (nil: unplaced).
	Lat, Lng *float64
	Sections []VenueSection
}

// VenueSection is a section of a venue's layout.
type VenueSection struct {
	ID, Name, Category string
	Kind               vocab.SectionKind
	Capacity           int
	Rows               []VenueRow
}

// VenueRow is a row of a seated section.
type VenueRow struct {
	Label string
	Seats []VenueSeat
}

// VenueSeat is a seat and its place on the plan.
type VenueSeat struct {
	Number int
	X, Y   float64
}

// ImportVenue writes the venue, its sections and its seats in one
// transaction, the seats streamed with COPY: all of it or nothing.
// ErrVenueExists when the ID is taken.
func (s *Catalogue) ImportVenue(ctx context.Context, v VenueImport) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// A large layout takes a few seconds to stream: the bound is the
		// import's, not a hold's.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '5min'`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO venues (id, org_id, name, city, timezone, lat, lng) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			v.ID, v.OrgID, v.Name, v.City, v.Timezone, v.Lat, v.Lng)
		if code, _ := pgCode(err); code == pgUniqueViolation {
			return ErrVenueExists
		}
		if err != nil {
			return inputError(err)
		}
		secRows := make([][]any, len(v.Sections))
		for i, sec := range v.Sections {
			secRows[i] = []any{v.ID, sec.ID, sec.Name, string(sec.Kind), sec.Category, sec.Capacity, i}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"venue_sections"},
			[]string{"venue_id", "id", "name", "kind", "category", "capacity", "sort_order"},
			pgx.CopyFromRows(secRows)); err != nil {
			return inputError(err)
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"venue_seats"},
			[]string{"venue_id", "section_id", "row_label", "number", "x", "y", "category"}, &seatSource{v: v})
		return inputError(err)
	})
}

// ErrVenueExists says a venue with the ID is there already.
var ErrVenueExists = errors.New("store: venue exists")

// seatSource streams a layout's seats to COPY without building rows of all
// of them first.
type seatSource struct {
	v              VenueImport
	sec, row, seat int
	started        bool
	values         [7]any
}

func (c *seatSource) Next() bool {
	if c.started {
		c.seat++
	}
	c.started = true
	for c.sec < len(c.v.Sections) {
		sec := c.v.Sections[c.sec]
		if c.row < len(sec.Rows) {
			if c.seat < len(sec.Rows[c.row].Seats) {
				return true
			}
			c.row, c.seat = c.row+1, 0
			continue
		}
		c.sec, c.row, c.seat = c.sec+1, 0, 0
	}
	return false
}

func (c *seatSource) Values() ([]any, error) {
	sec := c.v.Sections[c.sec]
	row := sec.Rows[c.row]
	seat := row.Seats[c.seat]
	c.values = [7]any{c.v.ID, sec.ID, row.Label, seat.Number, seat.X, seat.Y, sec.Category}
	return c.values[:], nil
}

func (c *seatSource) Err() error { return nil }

// VenueSummary is a venue as its organiser sees it.
type VenueSummary struct {
	ID, OrgID, Name, City, Timezone string
	Categories                      []string
	Sections, Seats                 int
	CreatedAt                       time.Time
}

// Venue reads a venue of org (any organisation when org is empty), or
// ErrNotFound.
func (s *Catalogue) Venue(ctx context.Context, id, org string) (VenueSummary, error) {
	var v VenueSummary
	err := s.pool.QueryRow(ctx, `SELECT v.id, v.org_id, v.name, v.city, v.timezone, v.created_at,
		coalesce((SELECT array_agg(DISTINCT category ORDER BY category) FROM venue_sections WHERE venue_id = v.id), '{}'),
		(SELECT count(*) FROM venue_sections WHERE venue_id = v.id),
		(SELECT count(*) FROM venue_seats WHERE venue_id = v.id)
		FROM venues v WHERE v.id = $1 AND ($2 = '' OR v.org_id = $2)`, id, org).Scan(
		&v.ID, &v.OrgID, &v.Name, &v.City, &v.Timezone, &v.CreatedAt, &v.Categories, &v.Sections, &v.Seats)
	if errors.Is(err, pgx.ErrNoRows) {
		return VenueSummary{}, ErrNotFound
	}
	return v, err
}

// Venues lists the venues of org (every organisation's when org is empty),
// newest first, at most limit.
func (s *Catalogue) Venues(ctx context.Context, org string, limit int) ([]VenueSummary, error) {
	rows, err := s.pool.Query(ctx, `SELECT v.id, v.org_id, v.name, v.city, v.timezone, v.created_at,
		coalesce((SELECT array_agg(DISTINCT category ORDER BY category) FROM venue_sections WHERE venue_id = v.id), '{}'),
		(SELECT count(*) FROM venue_sections WHERE venue_id = v.id),
		(SELECT count(*) FROM venue_seats WHERE venue_id = v.id)
		FROM venues v WHERE $1 = '' OR v.org_id = $1
		ORDER BY v.created_at DESC, v.id DESC LIMIT $2`, org, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (VenueSummary, error) {
		var v VenueSummary
		return v, r.Scan(&v.ID, &v.OrgID, &v.Name, &v.City, &v.Timezone, &v.CreatedAt, &v.Categories, &v.Sections, &v.Seats)
	})
}

// PlaceVenue sets a venue's coordinates unless it has some already (the
// demo's venues, imported before venues had them). It reports whether it
// set them.
func (s *Catalogue) PlaceVenue(ctx context.Context, id string, lat, lng float64) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE venues SET lat = $2, lng = $3 WHERE id = $1 AND lat IS NULL`, id, lat, lng)
	return tag.RowsAffected() == 1, err
}
