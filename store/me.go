package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// PageCursor is the position after the last row of a fan's list page:
// newest first by (created, id). The zero value is the first page.
type PageCursor struct {
	At time.Time
	ID string
}

// String encodes the cursor for a URL: "<unix microseconds>_<id>".
func (c PageCursor) String() string {
	return strconv.FormatInt(c.At.UnixMicro(), 10) + "_" + c.ID
}

// ParsePageCursor decodes String's form; ok is false for anything else.
func ParsePageCursor(s string) (PageCursor, bool) {
	us, id, found := strings.Cut(s, "_")
	n, err := strconv.ParseInt(us, 10, 64)
	if !found || err != nil || id == "" || len(id) > 100 {
		return PageCursor{}, false
	}
	return PageCursor{At: time.UnixMicro(n), ID: id}, true
}

// cutPage cuts rows, read with one more than limit, to a page; next is the
// cursor after its last row, nil when no row was left over (the last page).
func cutPage[T any](rows []T, limit int, cursor func(last T) PageCursor) (page []T, next *PageCursor) {
	if len(rows) <= limit {
		return rows, nil
	}
	rows = rows[:limit]
	c := cursor(rows[limit-1])
	return rows, &c
}

// BookingsOfUser lists the IDs of a fan's bookings (reservations), newest
// first, after the cursor; next is the cursor of the following page, nil on
// the last.
func (s *Bookings) BookingsOfUser(ctx context.Context, userID string, after *PageCursor, limit int) ([]uuid.UUID, *PageCursor, error) {
	var at *time.Time
	var id *uuid.UUID
	if after != nil {
		u, err := uuid.Parse(after.ID)
		if err != nil {
			return nil, nil, nil // a cursor no page produced: nothing follows it
		}
		at, id = &after.At, &u
	}
	rows, err := s.pool.Query(ctx, `SELECT id, created_at FROM reservations
		WHERE user_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $4`, userID, at, id, limit+1)
	if err != nil {
		return nil, nil, err
	}
	type row struct {
		ID uuid.UUID
		At time.Time
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.ID, &x.At)
	})
	if err != nil {
		return nil, nil, err
	}
	got, next := cutPage(got, limit, func(last row) PageCursor { return PageCursor{At: last.At, ID: last.ID.String()} })
	ids := make([]uuid.UUID, len(got))
	for i, r := range got {
		ids[i] = r.ID
	}
	return ids, next, nil
}

// TicketsOfUser lists a fan's tickets, newest first, after the cursor; next
// is the cursor of the following page, nil on the last.
func (s *Tickets) TicketsOfUser(ctx context.Context, userID string, after *PageCursor, limit int) ([]Ticket, *PageCursor, error) {
	var at *time.Time
	var id *string
	if after != nil {
		at, id = &after.At, &after.ID
	}
	rows, err := s.pool.Query(ctx, `SELECT `+ticketColumns+` FROM tickets t JOIN reservations r ON r.id = t.reservation_id
		WHERE t.user_id = $1 AND ($2::timestamptz IS NULL OR (t.issued_at, t.id) < ($2, $3::text))
		ORDER BY t.issued_at DESC, t.id DESC LIMIT $4`, userID, at, id, limit+1)
	if err != nil {
		return nil, nil, err
	}
	got, err := pgx.CollectRows(rows, scanTicket)
	if err != nil {
		return nil, nil, err
	}
	got, next := cutPage(got, limit, func(last Ticket) PageCursor { return PageCursor{At: last.IssuedAt, ID: last.ID} })
	return got, next, nil
}
