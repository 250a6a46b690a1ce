package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// SagaHealth is what the scheduled audit publishes about the booking
// saga besides the inventory rules: the PAID bookings still without their
// tickets past a grace (a saga stuck after the money moved), and the age
// of the oldest checkout not yet settled (its payment pending, waiting on
// the fan's action or authorised but not captured).
type SagaHealth struct {
	PaidWithoutTickets int64
	OldestOpen         time.Duration
}

// SagaHealth measures the saga's health; grace is how long a paid booking
// may wait for its tickets.
func (s *Bookings) SagaHealth(ctx context.Context, grace time.Duration) (SagaHealth, error) {
	var h SagaHealth
	var oldest float64
	err := s.pool.QueryRow(ctx, `
		SELECT
		  (SELECT count(*) FROM reservations r
		    WHERE r.status = 'PAID' AND r.ended_at < now() - make_interval(secs => $1)
		      AND EXISTS (SELECT 1 FROM reservation_items i WHERE i.reservation_id = r.id AND i.live)
		      AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.reservation_id = r.id)),
		  coalesce((SELECT extract(epoch FROM now() - min(p.created_at)) FROM payments p
		    JOIN reservations r ON r.id = p.reservation_id
		    WHERE r.status IN ('PENDING_PAYMENT', 'PAID') AND p.status IN ('PENDING', 'REQUIRES_ACTION', 'AUTHORISED')), 0)`,
		grace.Seconds()).Scan(&h.PaidWithoutTickets, &oldest)
	h.OldestOpen = time.Duration(oldest * float64(time.Second))
	return h, err
}

// StoredWebhook is a verified provider event as the database keeps it.
type StoredWebhook struct {
	Provider, EventID string
	Payload           []byte
	ReceivedAt        time.Time
}

// UnsignalledWebhooks are stored events received more than olderThan ago
// that never reached their booking (delivery failed after they were
// stored, or the process died in between), oldest first.
func (s *Bookings) UnsignalledWebhooks(ctx context.Context, olderThan time.Duration, limit int) ([]StoredWebhook, error) {
	rows, err := s.pool.Query(ctx, `SELECT provider, event_id, payload::text, received_at FROM webhook_events
		WHERE signalled_at IS NULL AND received_at < now() - make_interval(secs => $1)
		ORDER BY received_at LIMIT $2`, olderThan.Seconds(), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (StoredWebhook, error) {
		var w StoredWebhook
		var payload string
		err := r.Scan(&w.Provider, &w.EventID, &payload, &w.ReceivedAt)
		w.Payload = []byte(payload)
		return w, err
	})
}

// StoredWebhookEvent is one stored event, or ErrNotFound.
func (s *Bookings) StoredWebhookEvent(ctx context.Context, provider, eventID string) (StoredWebhook, error) {
	var w StoredWebhook
	var payload string
	err := s.pool.QueryRow(ctx, `SELECT provider, event_id, payload::text, received_at FROM webhook_events
		WHERE provider = $1 AND event_id = $2`, provider, eventID).Scan(&w.Provider, &w.EventID, &payload, &w.ReceivedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNotFound
	}
	w.Payload = []byte(payload)
	return w, err
}
