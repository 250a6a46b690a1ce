package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// The read-only queries the waiting room (the admit plane) asks of the
// database: whether an event is metered and when it opens, how much is left
// to sell, and how admitted fans' holds ended. None of them writes or locks.

// Gate is what the waiting room needs to know about an event.
type Gate struct {
	EventID  string
	Metered  bool
	OnsaleAt time.Time
}

// EventGate returns the published event's gate, or ErrNotFound.
func (s *Holds) EventGate(ctx context.Context, eventID string) (Gate, error) {
	g := Gate{EventID: eventID}
	err := s.pool.QueryRow(ctx, `SELECT metered, onsale_at FROM events WHERE id = $1 AND status = 'PUBLISHED'`, eventID).Scan(&g.Metered, &g.OnsaleAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Gate{}, ErrNotFound
	}
	return g, err
}

// MeteredEvents lists metered events whose sale opens before now+horizon and
// whose show has not started: the events that need an admitter.
func (s *Holds) MeteredEvents(ctx context.Context, horizon time.Duration) ([]Gate, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, metered, onsale_at FROM events
		WHERE metered AND status = 'PUBLISHED' AND onsale_at <= now() + $1::interval AND starts_at > now() ORDER BY id`, horizon.String())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Gate, error) {
		var g Gate
		return g, r.Scan(&g.EventID, &g.Metered, &g.OnsaleAt)
	})
}

// FreeUnits is the event's remaining inventory minus its active holds: seats
// that are AVAILABLE or held by an expired hold (lazy expiry), plus
// general-admission places not taken by a sale or a live hold. The admitter
// asks every tick, so each part is read through its own index: free seats
// section by section through the partial index of free seats (not every
// seat of the event joined to its reservation: on the 50,000-seat stadium
// after 3,440 holds, 19.6-20.0 ms against 7.6-7.9 ms), and expired holds
// from the event's pending reservations, usually few.
func (s *Holds) FreeUnits(ctx context.Context, eventID string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `
		SELECT
		  (SELECT count(*) FROM seats s
		    WHERE s.section_id IN (SELECT id FROM sections WHERE event_id = $1) AND s.status = 'AVAILABLE')
		+ (SELECT count(*) FROM reservations r JOIN seats s ON s.reservation_id = r.id AND s.status = 'HELD'
		    WHERE r.event_id = $1 AND r.status = 'PENDING_PAYMENT' AND r.expires_at <= now())
		+ (SELECT coalesce(sum(sec.capacity - sec.ga_taken), 0) FROM sections sec
		    WHERE sec.event_id = $1 AND sec.kind = 'general')
		+ (SELECT coalesce(sum(i.quantity), 0) FROM reservations r
		     JOIN reservation_items i ON i.reservation_id = r.id
		    WHERE r.event_id = $1 AND r.status = 'PENDING_PAYMENT' AND r.expires_at <= now()
		      AND i.seat_id IS NULL AND i.live)`, eventID).Scan(&n)
	return n, err
}

// HoldOutcome is how a fan's holds on one event stand.
type HoldOutcome struct {
	Holding bool // a pending hold that has not expired
	Paid    bool // at least one paid reservation
	Expired int  // holds that expired without payment (lazily expired ones included)
}

// HoldOutcomes reports, for each user, how their holds on the event stand.
// Users without any reservation are reported with the zero outcome.
func (s *Holds) HoldOutcomes(ctx context.Context, eventID string, userIDs []string) (map[string]HoldOutcome, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT u.id,
		       coalesce(bool_or(r.status = 'PENDING_PAYMENT' AND r.expires_at > now()), false),
		       coalesce(bool_or(r.status = 'PAID'), false),
		       count(r.id) FILTER (WHERE r.status = 'EXPIRED'
		                              OR (r.status = 'PENDING_PAYMENT' AND r.expires_at <= now()))
		FROM unnest($2::text[]) AS u(id)
		LEFT JOIN reservations r ON r.user_id = u.id AND r.event_id = $1
		GROUP BY u.id`, eventID, userIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]HoldOutcome, len(userIDs))
	for rows.Next() {
		var id string
		var o HoldOutcome
		if err := rows.Scan(&id, &o.Holding, &o.Paid, &o.Expired); err != nil {
			return nil, err
		}
		out[id] = o
	}
	return out, rows.Err()
}

// PaymentHealth is how payments fare over a window, as the waiting room's
// adaptive mode reads it: the same figures from every process, since they
// come from the database.
type PaymentHealth struct {
	Settled int64 // payments that reached an outcome in the window
	Failed  int64 // of which failed
}

// PaymentHealth reads payment outcomes over the last window.
func (s *Bookings) PaymentHealth(ctx context.Context, window time.Duration) (PaymentHealth, error) {
	var h PaymentHealth
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE status NOT IN ('PENDING', 'REQUIRES_ACTION')),
		       count(*) FILTER (WHERE status = 'FAILED')
		FROM payments WHERE updated_at > now() - $1::interval`,
		window.String()).Scan(&h.Settled, &h.Failed)
	return h, err
}
