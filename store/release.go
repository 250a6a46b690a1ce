package store

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// endSelected ends, as to, every pending reservation whose id the query
// selects; the query locks the rows (FOR UPDATE), as endLocked expects. The
// bulk paths (the expiry sweep, an event's cancellation) share it so each
// ends its holds one by one, like a fan's release.
func endSelected(ctx context.Context, tx pgx.Tx, to vocab.ReservationStatus, sql string, args ...any) ([]Ended, error) {
	ids, err := queryIDs(ctx, tx, sql, args...)
	if err != nil {
		return nil, err
	}
	var out []Ended
	for _, id := range ids {
		e, err := endLocked(ctx, tx, id, to)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// endLocked ends a PENDING_PAYMENT reservation whose row the caller has
// already locked: seats back to AVAILABLE, items no longer live, counted
// capacity and promotion uses given back, an inventory.changed row per
// section. Every path that ends a hold (expiry, release, failure) comes here.
//
// A paid booking cancelled within policy also ends here (from = PAID).
func endLocked(ctx context.Context, tx pgx.Tx, id uuid.UUID, to vocab.ReservationStatus, from ...vocab.ReservationStatus) (Ended, error) {
	ended := Ended{ReservationID: id, Status: to}
	fromStatus := string(vocab.ReservationPending)
	if len(from) > 0 {
		fromStatus = string(from[0])
	}
	var status string
	err := tx.QueryRow(ctx, `UPDATE reservations SET status = $2, ended_at = now()
		WHERE id = $1 AND status = $3 RETURNING coalesce(event_id, ''), status`, id, string(to), fromStatus).Scan(&ended.EventID, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return Ended{}, ErrNotPending
	}
	if err != nil {
		return Ended{}, err
	}
	rows, err := tx.Query(ctx, `UPDATE seats SET status = 'AVAILABLE', reservation_id = NULL, version = version + 1
		WHERE reservation_id = $1 RETURNING id`, id)
	if err != nil {
		return Ended{}, err
	}
	if ended.SeatIDs, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return Ended{}, err
	}
	slices.Sort(ended.SeatIDs)
	rows, err = tx.Query(ctx, `UPDATE reservation_items SET live = false WHERE reservation_id = $1 AND live
		RETURNING section_id, seat_id IS NULL, quantity`, id)
	if err != nil {
		return Ended{}, err
	}
	sections := map[string]int{}
	for rows.Next() {
		var sec string
		var counted bool
		var qty int
		if err := rows.Scan(&sec, &counted, &qty); err != nil {
			rows.Close()
			return Ended{}, err
		}
		if counted {
			sections[sec] += qty
		} else if _, ok := sections[sec]; !ok {
			sections[sec] = 0
		}
	}
	if err := rows.Err(); err != nil {
		return Ended{}, err
	}
	batch := &pgx.Batch{}
	for _, sec := range slices.Sorted(maps.Keys(sections)) {
		if n := sections[sec]; n > 0 {
			batch.Queue(`UPDATE sections SET ga_taken = ga_taken - $2 WHERE id = $1`, sec, n)
		}
		queueInventoryChanged(batch, ended.EventID, sec)
	}
	// The use names its promotion by event and code: another event's code
	// of the same name keeps its count.
	batch.Queue(`WITH gone AS (DELETE FROM promotion_uses WHERE reservation_id = $1 RETURNING event_id, code)
		UPDATE promotions p SET used = used - 1 FROM gone WHERE p.event_id = gone.event_id AND p.code = gone.code`, id)
	queueReleaseStays(batch, id, fromStatus == string(vocab.ReservationPaid))
	queueReleaseListings(batch, id)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return Ended{}, err
	}
	return ended, nil
}

// Release ends a pending hold at its owner's request (CANCELLED). It locks the
// reservation row first. A hold already ended returns ErrNotPending; someone
// else's hold is ErrNotFound.
func (s *Holds) Release(ctx context.Context, id uuid.UUID, userID string) (Ended, error) {
	return s.end(ctx, id, userID, vocab.ReservationCancelled)
}

// Expire ends a pending hold whose time is up (the workflow's timer and the
// sweeper both come here). It refuses a hold that has not expired yet.
func (s *Holds) Expire(ctx context.Context, id uuid.UUID) (Ended, error) {
	return s.end(ctx, id, "", vocab.ReservationExpired)
}

func (s *Holds) end(ctx context.Context, id uuid.UUID, userID string, to vocab.ReservationStatus) (Ended, error) {
	var ended Ended
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var owner, status string
		var expired bool
		err := tx.QueryRow(ctx, `SELECT user_id, status, expires_at <= now() FROM reservations WHERE id = $1 FOR UPDATE`, id).
			Scan(&owner, &status, &expired)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && userID != "" && owner != userID) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if status != string(vocab.ReservationPending) {
			return ErrNotPending
		}
		if to == vocab.ReservationExpired && !expired {
			return ErrNotPending
		}
		if to == vocab.ReservationCancelled && expired {
			to = vocab.ReservationExpired // it ran out before the fan let go
		}
		ended, err = endLocked(ctx, tx, id, to)
		return err
	})
	if transient(err) {
		return Ended{}, ErrBusy
	}
	return ended, err
}

// SweepExpired ends up to limit expired holds in one transaction, skipping
// rows another transaction has locked, and returns what it released.
func (s *Holds) SweepExpired(ctx context.Context, limit int) ([]Ended, error) {
	var out []Ended
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = endSelected(ctx, tx, vocab.ReservationExpired, `SELECT id FROM reservations
			WHERE status = 'PENDING_PAYMENT' AND expires_at <= now()
			ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		return err
	})
	return out, err
}

// PurgeIdempotency deletes stored responses older than 24 hours.
func (s *Holds) PurgeIdempotency(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < now() - $1::interval`, idempotencyTTL.String())
	return tag.RowsAffected(), err
}

// GetHold reads a hold. A pending hold past its expiry reads as EXPIRED even
// before the sweeper ends it (lazy expiry). Another user's hold is not found.
// Items come in seat ID byte order whatever the database's collation, the
// order CreateHold returns them in, so both render alike.
func (s *Holds) GetHold(ctx context.Context, id uuid.UUID, userID string) (Hold, error) {
	var h Hold
	var promo *string
	var status string
	var expired bool
	err := s.pool.QueryRow(ctx, `SELECT id, user_id, coalesce(event_id, ''), status, created_at, expires_at, ended_at, total, currency,
		promo_code, status = 'PENDING_PAYMENT' AND expires_at <= now(), fees, tax, tax_rate_bp FROM reservations WHERE id = $1`, id).
		Scan(&h.ID, &h.UserID, &h.EventID, &status, &h.CreatedAt, &h.ExpiresAt, &h.EndedAt, &h.Total.Amount, &h.Total.Currency, &promo, &expired,
			&h.Fees, &h.Tax, &h.TaxRateBp)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && userID != "" && h.UserID != userID) {
		return Hold{}, ErrNotFound
	}
	if err != nil {
		return Hold{}, err
	}
	h.Status = vocab.ReservationStatus(status)
	if expired {
		h.Status = vocab.ReservationExpired
	}
	if promo != nil {
		h.PromoCode = *promo
	}
	rows, err := s.pool.Query(ctx, `SELECT coalesce(seat_id, ''), section_id, quantity, price_at_lock, base_price, surge_bps, discount,
			coalesce(ticket_type, ''), fee, coalesce(listing_id::text, '')
		FROM reservation_items WHERE reservation_id = $1 ORDER BY seat_id COLLATE "C", id`, id)
	if err != nil {
		return Hold{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var it Item
		if err := rows.Scan(&it.SeatID, &it.SectionID, &it.Quantity, &it.Price.Amount, &it.Base, &it.SurgeBps, &it.Discount,
			&it.TicketType, &it.Fee, &it.ListingID); err != nil {
			return Hold{}, err
		}
		it.Price.Currency = h.Total.Currency
		h.Items = append(h.Items, it)
	}
	if err := rows.Err(); err != nil {
		return Hold{}, err
	}
	h.Stays, err = holdStays(ctx, s.pool, id)
	return h, err
}
