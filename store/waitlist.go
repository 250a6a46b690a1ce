package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// WaitlistEntry is one fan's place on a sold-out event's waitlist.
type WaitlistEntry struct {
	ID             int64                `json:"id"`
	EventID        string               `json:"event_id"`
	UserID         string               `json:"-"`
	DeviceID       string               `json:"-"`
	Email          string               `json:"-"`
	SectionID      string               `json:"section_id,omitempty"`
	Quantity       int                  `json:"quantity"`
	Status         vocab.WaitlistStatus `json:"status"`
	CreatedAt      time.Time            `json:"created_at"`
	OfferedAt      *time.Time           `json:"offered_at,omitempty"`
	OfferExpiresAt *time.Time           `json:"offer_expires_at,omitempty"`
	NotifiedAt     *time.Time           `json:"-"`
	// Position is the place among those still waiting for the event (1 is
	// next); zero once offered or ended.
	Position int `json:"position,omitempty"`
}

const waitlistColumns = `id, event_id, user_id, device_id, email, coalesce(section_id, ''), quantity, status,
	created_at, offered_at, offer_expires_at, notified_at`

func scanWaitlist(row pgx.Row) (WaitlistEntry, error) {
	var w WaitlistEntry
	err := row.Scan(&w.ID, &w.EventID, &w.UserID, &w.DeviceID, &w.Email, &w.SectionID, &w.Quantity, &w.Status,
		&w.CreatedAt, &w.OfferedAt, &w.OfferExpiresAt, &w.NotifiedAt)
	return w, err
}

func collectWaitlist(rows pgx.Rows, err error) ([]WaitlistEntry, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (WaitlistEntry, error) { return scanWaitlist(r) })
}

// WaitlistJoin is a fan asking to be offered seats of an event that come
// back: quantity of them, in one section or anywhere.
type WaitlistJoin struct {
	EventID, UserID, DeviceID, Email, SectionID string
	Quantity                                    int
}

// JoinWaitlist puts the fan on the event's waitlist, or returns the place
// they already have (created false): joining twice keeps the first place.
// An unknown event is ErrNotFound; a section the event does not have is an
// *InvalidError on section_id.
func (s *Waitlists) JoinWaitlist(ctx context.Context, j WaitlistJoin) (WaitlistEntry, bool, error) {
	var out WaitlistEntry
	created := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1)`, j.EventID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return ErrNotFound
		}
		if j.SectionID != "" {
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sections WHERE id = $1 AND event_id = $2)`,
				j.SectionID, j.EventID).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return &InvalidError{Field: "section_id", Message: "this event has no such section"}
			}
		}
		var err error
		out, err = scanWaitlist(tx.QueryRow(ctx, `
			INSERT INTO waitlist_entries (event_id, user_id, device_id, email, section_id, quantity)
			VALUES ($1, $2, $3, $4, nullif($5, ''), $6)
			ON CONFLICT (event_id, user_id) WHERE status IN ('WAITING', 'OFFERED') DO NOTHING
			RETURNING `+waitlistColumns, j.EventID, j.UserID, j.DeviceID, j.Email, j.SectionID, j.Quantity))
		if err == nil {
			created = true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return inputError(err)
		}
		out, err = scanWaitlist(tx.QueryRow(ctx, `SELECT `+waitlistColumns+` FROM waitlist_entries
			WHERE event_id = $1 AND user_id = $2 AND status IN ('WAITING', 'OFFERED')`, j.EventID, j.UserID))
		return err
	})
	if err != nil {
		return WaitlistEntry{}, false, err
	}
	out.Position, err = s.waitlistPosition(ctx, out)
	return out, created, err
}

func (s *Waitlists) waitlistPosition(ctx context.Context, w WaitlistEntry) (int, error) {
	if w.Status != vocab.WaitlistWaiting {
		return 0, nil
	}
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM waitlist_entries
		WHERE event_id = $1 AND status = 'WAITING' AND id <= $2`, w.EventID, w.ID).Scan(&n)
	return n, err
}

// MyWaitlist lists the fan's waitlist places, newest first (at most 100).
func (s *Waitlists) MyWaitlist(ctx context.Context, userID string) ([]WaitlistEntry, error) {
	out, err := collectWaitlist(s.pool.Query(ctx, `SELECT `+waitlistColumns+` FROM waitlist_entries
		WHERE user_id = $1 ORDER BY id DESC LIMIT 100`, userID))
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Position, err = s.waitlistPosition(ctx, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LeaveWaitlist takes the fan off the event's waitlist (an offer they hold
// passes on at the next round). It reports whether they were on it.
func (s *Waitlists) LeaveWaitlist(ctx context.Context, eventID, userID string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE waitlist_entries SET status = 'LEFT'
		WHERE event_id = $1 AND user_id = $2 AND status IN ('WAITING', 'OFFERED')`, eventID, userID)
	return tag.RowsAffected() > 0, err
}

// WaitlistedEvents are the events with fans waiting or holding offers.
func (s *Waitlists) WaitlistedEvents(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT event_id FROM waitlist_entries WHERE status IN ('WAITING', 'OFFERED')`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// WaitlistRound is what one round of offers did for an event.
type WaitlistRound struct {
	Offered []WaitlistEntry // new offers, to be told to their fans
	Ended   []WaitlistEntry // offers that lapsed unused (EXPIRED) or were left: their admissions end
	Used    int             // offers that became a hold
}

// OfferWaitlist runs one round of the event's waitlist in one transaction,
// under a lock per event so concurrent workers never offer twice:
//
//  1. offers whose fan placed a hold since are USED; lapsed ones EXPIRED;
//  2. free units (per section for a fan who asked for one) minus the units
//     still promised to live offers are offered to waiting fans strictly
//     in the order they joined: the first fan whose quantity does not fit
//     stops the round, so nobody is overtaken by a smaller request.
//
// admit is called for each offer before it is recorded (it makes the
// fan's admission and must be idempotent); an error from it ends the round
// with the offers made so far.
func (s *Waitlists) OfferWaitlist(ctx context.Context, eventID string, ttl time.Duration,
	admit func(WaitlistEntry, time.Time) error) (WaitlistRound, error) {
	var round WaitlistRound
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtext('waitlist:' || $1))`, eventID).Scan(&locked); err != nil {
			return err
		}
		if !locked {
			return nil // another worker runs this event's round
		}
		tag, err := tx.Exec(ctx, `UPDATE waitlist_entries w SET status = 'USED'
			WHERE w.event_id = $1 AND w.status = 'OFFERED'
			  AND EXISTS (SELECT 1 FROM reservations r WHERE r.user_id = w.user_id AND r.event_id = w.event_id
			              AND r.created_at >= w.offered_at)`, eventID)
		if err != nil {
			return err
		}
		round.Used = int(tag.RowsAffected())
		round.Ended, err = collectWaitlist(tx.Query(ctx, `UPDATE waitlist_entries SET status = 'EXPIRED'
			WHERE event_id = $1 AND status = 'OFFERED' AND offer_expires_at <= now()
			RETURNING `+waitlistColumns, eventID))
		if err != nil {
			return err
		}
		waiting, err := collectWaitlist(tx.Query(ctx, `SELECT `+waitlistColumns+` FROM waitlist_entries
			WHERE event_id = $1 AND status = 'WAITING' ORDER BY id LIMIT 100 FOR UPDATE`, eventID))
		if err != nil || len(waiting) == 0 {
			return err
		}
		free := map[string]int64{} // section ("" for the whole event) -> units not promised
		avail := func(section string) (int64, error) {
			if n, ok := free[section]; ok {
				return n, nil
			}
			var n int64
			err := tx.QueryRow(ctx, `
				SELECT
				  (SELECT count(*) FROM seats s
				     LEFT JOIN reservations r ON r.id = s.reservation_id
				    WHERE s.event_id = $1 AND ($2 = '' OR s.section_id = $2)
				      AND (s.status = 'AVAILABLE'
				           OR (s.status = 'HELD' AND r.status = 'PENDING_PAYMENT' AND r.expires_at <= now())))
				+ (SELECT coalesce(sum(sec.capacity - sec.ga_taken), 0) FROM sections sec
				    WHERE sec.event_id = $1 AND sec.kind = 'general' AND ($2 = '' OR sec.id = $2))
				+ (SELECT coalesce(sum(i.quantity), 0) FROM reservation_items i
				     JOIN reservations r ON r.id = i.reservation_id
				    WHERE i.event_id = $1 AND ($2 = '' OR i.section_id = $2) AND i.seat_id IS NULL AND i.live
				      AND r.status = 'PENDING_PAYMENT' AND r.expires_at <= now())
				- (SELECT coalesce(sum(w.quantity), 0) FROM waitlist_entries w
				    WHERE w.event_id = $1 AND w.status = 'OFFERED' AND ($2 = '' OR w.section_id = $2 OR w.section_id IS NULL))`,
				eventID, section).Scan(&n)
			free[section] = n
			return n, err
		}
		for _, w := range waiting {
			n, err := avail(w.SectionID)
			if err != nil {
				return err
			}
			if int64(w.Quantity) > n {
				break
			}
			var until time.Time
			// Whole seconds, as the pass that carries the offer counts them,
			// so the offer and its pass end together.
			if err := tx.QueryRow(ctx, `SELECT date_trunc('second', now() + make_interval(secs => $1))`, ttl.Seconds()).Scan(&until); err != nil {
				return err
			}
			if err := admit(w, until); err != nil {
				return err
			}
			w, err = scanWaitlist(tx.QueryRow(ctx, `UPDATE waitlist_entries
				SET status = 'OFFERED', offered_at = now(), offer_expires_at = $2
				WHERE id = $1 RETURNING `+waitlistColumns, w.ID, until))
			if err != nil {
				return err
			}
			round.Offered = append(round.Offered, w)
			// What this offer promises comes off every count it falls in.
			for sec := range free {
				if sec == "" || w.SectionID == "" || sec == w.SectionID {
					free[sec] -= int64(w.Quantity)
				}
			}
		}
		return nil
	})
	return round, err
}

// OffersToTell are live offers whose fan has not been told yet.
func (s *Waitlists) OffersToTell(ctx context.Context, eventID string) ([]WaitlistEntry, error) {
	return collectWaitlist(s.pool.Query(ctx, `SELECT `+waitlistColumns+` FROM waitlist_entries
		WHERE event_id = $1 AND status = 'OFFERED' AND notified_at IS NULL AND offer_expires_at > now()
		ORDER BY id`, eventID))
}

// OfferTold records that the fan was told of the offer.
func (s *Waitlists) OfferTold(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE waitlist_entries SET notified_at = now() WHERE id = $1`, id)
	return err
}
