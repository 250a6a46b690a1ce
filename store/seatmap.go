package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// SeatState is one seat of a seat-map snapshot.
type SeatState struct {
	ID     string
	Row    string
	Number int
	Status vocab.SeatStatus
	Price  int64 // base price in minor units; the hold quotes the real one
	// X, Y place the seat on the venue's plan; Category prices it.
	X, Y     float64
	Category string
}

// SectionSeats is a section's seats in layout order: row (A, B, ..., Z, AA,
// ...), then seat number. The order is fixed when the seats are created, so
// a bitmap of statuses in this order lines up with the JSON snapshot.
type SectionSeats struct {
	EventID   string
	SectionID string
	Kind      vocab.SectionKind
	Currency  string
	Seats     []SeatState
}

// SeatOrder names the order of SectionSeats for the X-Seat-Order header.
const SeatOrder = "row,number"

// SectionSeats reads a section's seats in one query: ErrNotFound when the
// section is not the event's, or the event is not published. A general-admission section has no seats.
func (r *Reader) SectionSeats(ctx context.Context, eventID, sectionID string) (SectionSeats, error) {
	return SectionSeatsOn(ctx, r.pool, eventID, sectionID)
}

// SectionSeatsOn is SectionSeats on one connection of a reader pool (or a
// transaction on one): the browse plane on a replica reads a section on the
// connection it has just seen replay far enough.
func SectionSeatsOn(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, eventID, sectionID string) (SectionSeats, error) {
	rows, err := q.Query(ctx, `
		SELECT sec.kind, e.currency, s.id, s.row_label, s.number, s.status, s.base_price, s.x, s.y, s.category
		FROM sections sec JOIN events e ON e.id = sec.event_id
		LEFT JOIN seats s ON s.section_id = sec.id
		WHERE sec.id = $2 AND sec.event_id = $1 AND e.status = 'PUBLISHED'
		ORDER BY length(s.row_label), s.row_label, s.number`, eventID, sectionID)
	if err != nil {
		return SectionSeats{}, err
	}
	defer rows.Close()
	out := SectionSeats{EventID: eventID, SectionID: sectionID, Seats: []SeatState{}}
	found := false
	for rows.Next() {
		var (
			id, row, status, category *string
			number                    *int
			price                     *int64
			x, y                      *float64
		)
		if err := rows.Scan(&out.Kind, &out.Currency, &id, &row, &number, &status, &price, &x, &y, &category); err != nil {
			return SectionSeats{}, err
		}
		found = true
		if id == nil {
			continue // a section without seats (general admission)
		}
		out.Seats = append(out.Seats, SeatState{ID: *id, Row: *row, Number: *number,
			Status: vocab.SeatStatus(*status), Price: *price, X: *x, Y: *y, Category: *category})
	}
	if err := rows.Err(); err != nil {
		return SectionSeats{}, err
	}
	if !found {
		return SectionSeats{}, ErrNotFound
	}
	return out, nil
}
