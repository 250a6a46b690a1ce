package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// EventOrder is one booking of an event as its organiser sees it: who
// booked, what, for how much, and where it stands.
type EventOrder struct {
	BookingID     uuid.UUID   `json:"booking_id"`
	Email         string      `json:"email"`
	Status        string      `json:"status"`
	PaymentStatus string      `json:"payment_status,omitempty"`
	Total         int64       `json:"total"`
	Currency      string      `json:"currency"`
	CreatedAt     time.Time   `json:"created_at"`
	PaidAt        *time.Time  `json:"paid_at,omitempty"`
	Items         []OrderItem `json:"items"`
}

// OrderItem is one line of an order: a seat, or places in a standing area.
type OrderItem struct {
	SectionID string `json:"section_id"`
	SeatID    string `json:"seat_id,omitempty"`
	Quantity  int    `json:"quantity"`
	Price     int64  `json:"price"`
	// Label is filled by the organiser package (venues.Label of Place).
	Label string `json:"label"`
	Place Place  `json:"-"`
}

// OrdersSummary is what cancelling the event would undo: the paid
// bookings refunded (and their sum), the valid tickets revoked, the
// pending holds released.
type OrdersSummary struct {
	PaidBookings int   `json:"paid_bookings"`
	PaidTotal    int64 `json:"paid_total"`
	ValidTickets int   `json:"valid_tickets"`
	PendingHolds int   `json:"pending_holds"`
}

// EventOrders lists the bookings of eventID (of org; any when ""), newest
// first, at most 10,000, each with its items, and the summary over all of
// them. An event of another organisation is ErrNotFound.
func (s *Bookings) EventOrders(ctx context.Context, eventID, org string) ([]EventOrder, OrdersSummary, error) {
	var sum OrdersSummary
	err := s.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM reservations r WHERE r.event_id = e.id AND r.status = 'PAID'),
			(SELECT coalesce(sum(r.total), 0) FROM reservations r WHERE r.event_id = e.id AND r.status = 'PAID'),
			(SELECT count(*) FROM tickets t WHERE t.event_id = e.id AND t.status = 'VALID'),
			(SELECT count(*) FROM reservations r WHERE r.event_id = e.id AND r.status = 'PENDING_PAYMENT' AND r.expires_at > now())
		FROM events e WHERE e.id = $1 AND ($2 = '' OR e.org_id = $2)`, eventID, org).
		Scan(&sum.PaidBookings, &sum.PaidTotal, &sum.ValidTickets, &sum.PendingHolds)
	if err = orNotFound(err); err != nil {
		return nil, sum, err
	}
	// A booking's paid time: when it became PAID, or, once cancelled or
	// refunded since, when its tickets were issued.
	rows, err := s.pool.Query(ctx, `SELECT r.id, coalesce(r.fan_email, ''), r.status, coalesce(p.status, ''), r.total, r.currency, r.created_at,
			CASE WHEN r.status = 'PAID' THEN r.ended_at ELSE (SELECT min(t.issued_at) FROM tickets t WHERE t.reservation_id = r.id) END
		FROM reservations r LEFT JOIN payments p ON p.reservation_id = r.id
		WHERE r.event_id = $1 ORDER BY r.created_at DESC, r.id DESC LIMIT 10000`, eventID)
	if err != nil {
		return nil, sum, err
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (EventOrder, error) {
		var o EventOrder
		err := row.Scan(&o.BookingID, &o.Email, &o.Status, &o.PaymentStatus, &o.Total, &o.Currency, &o.CreatedAt, &o.PaidAt)
		o.Items = []OrderItem{}
		return o, err
	})
	if err != nil || len(list) == 0 {
		return list, sum, err
	}
	at := make(map[uuid.UUID]*EventOrder, len(list))
	for i := range list {
		at[list[i].BookingID] = &list[i]
	}
	err = eachRow(ctx, s.pool, func(r pgx.Rows) error {
		var rid uuid.UUID
		var it OrderItem
		if err := r.Scan(&rid, &it.SectionID, &it.SeatID, &it.Quantity, &it.Price, &it.Place.Section, &it.Place.Row, &it.Place.Number); err != nil {
			return err
		}
		if o := at[rid]; o != nil {
			o.Items = append(o.Items, it)
		}
		return nil
	}, `SELECT i.reservation_id, i.section_id, coalesce(i.seat_id, ''), i.quantity, i.price_at_lock,
			coalesce(sec.name, ''), coalesce(st.row_label, ''), coalesce(st.number, 0)
		FROM reservation_items i LEFT JOIN sections sec ON sec.id = i.section_id LEFT JOIN seats st ON st.id = i.seat_id
		WHERE i.event_id = $1 ORDER BY i.reservation_id, i.seat_id COLLATE "C", i.id`, eventID)
	return list, sum, err
}
