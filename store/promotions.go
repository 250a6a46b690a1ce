package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Promotion is a code an organiser runs on one event: DiscountBps or
// AmountOff (minor units of the event's currency, per ticket) off each
// ticket, at most MaxUses holds in all and PerUser per account, between
// StartsAt and EndsAt (zero: unbounded), until disabled.
type Promotion struct {
	Code        string     `json:"code"`
	EventID     string     `json:"event_id"`
	DiscountBps int        `json:"discount_bps"`
	AmountOff   int64      `json:"amount_off"`
	MaxUses     int        `json:"max_uses"`
	PerUser     int        `json:"per_user"`
	Used        int        `json:"used"`
	StartsAt    *time.Time `json:"starts_at,omitempty"`
	EndsAt      *time.Time `json:"ends_at,omitempty"`
	DisabledAt  *time.Time `json:"disabled_at,omitempty"`
}

// ErrPromotionExists says the event already runs this code. Codes are
// unique per event (0019), never across events: another event's code,
// another organisation's above all, never takes one, so the answer tells an
// organisation nothing of anyone else's codes.
var ErrPromotionExists = errors.New("store: the event already has this promotion code")

// AddPromotion writes p and its audit record a (a.After is set to p) in one
// transaction; ErrPromotionExists when p's event already has the code.
func (s *Promotions) AddPromotion(ctx context.Context, p Promotion, a AdminAction) (Promotion, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO promotions (code, event_id, discount_bps, amount_off, max_uses, per_user, starts_at, ends_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			p.Code, p.EventID, p.DiscountBps, p.AmountOff, p.MaxUses, p.PerUser, p.StartsAt, p.EndsAt)
		if code, constraint := pgCode(err); code == pgUniqueViolation && constraint == "promotions_pkey" {
			return ErrPromotionExists
		}
		if err != nil {
			return inputError(err)
		}
		if p, err = promotion(ctx, tx, p.EventID, p.Code); err != nil {
			return err
		}
		a.After, _ = json.Marshal(p)
		return RecordAdminActionTx(ctx, tx, a)
	})
	return p, err
}

// DisablePromotion stops the event's code from being used by new holds
// (holds already taken keep their price) and records a, with the promotion
// before and after, in the same transaction. Disabling a disabled code
// changes nothing and records nothing. ErrNotFound for an unknown code.
func (s *Promotions) DisablePromotion(ctx context.Context, eventID, code string, a AdminAction) (Promotion, error) {
	var out Promotion
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := promotion(ctx, tx, eventID, code, "FOR UPDATE")
		if err != nil {
			return err
		}
		if before.DisabledAt != nil {
			out = before
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE promotions SET disabled_at = now() WHERE event_id = $1 AND code = $2`, eventID, code); err != nil {
			return err
		}
		out, err = recordPromotionChange(ctx, tx, before, a)
		return err
	})
	return out, err
}

// UpdatePromotion locks the event's code, lets change decide its new
// terms (refusing with any error), writes them and records a, with the
// promotion before and after, in the same transaction. Holds already
// taken keep their frozen price. ErrNotFound for an unknown code.
func (s *Promotions) UpdatePromotion(ctx context.Context, eventID, code string, a AdminAction, change func(*Promotion) error) (Promotion, error) {
	var out Promotion
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := promotion(ctx, tx, eventID, code, "FOR UPDATE")
		if err != nil {
			return err
		}
		next := before
		if err := change(&next); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE promotions SET discount_bps = $3, amount_off = $4, max_uses = $5, per_user = $6,
				starts_at = $7, ends_at = $8 WHERE event_id = $1 AND code = $2`,
			eventID, code, next.DiscountBps, next.AmountOff, next.MaxUses, next.PerUser, next.StartsAt, next.EndsAt); err != nil {
			return inputError(err)
		}
		out, err = recordPromotionChange(ctx, tx, before, a)
		return err
	})
	return out, err
}

// recordPromotionChange reads the promotion as a change in tx left it and
// records a with it before and after, in the same transaction.
func recordPromotionChange(ctx context.Context, tx pgx.Tx, before Promotion, a AdminAction) (Promotion, error) {
	after, err := promotion(ctx, tx, before.EventID, before.Code)
	if err != nil {
		return Promotion{}, err
	}
	a.Before, _ = json.Marshal(before)
	a.After, _ = json.Marshal(after)
	return after, RecordAdminActionTx(ctx, tx, a)
}

func promotion(ctx context.Context, tx pgx.Tx, eventID, code string, lock ...string) (Promotion, error) {
	sql := `SELECT code, event_id, discount_bps, amount_off, max_uses, per_user, used, starts_at, ends_at, disabled_at
		FROM promotions WHERE code = $1 AND event_id = $2`
	if len(lock) > 0 {
		sql += " " + lock[0]
	}
	var p Promotion
	err := tx.QueryRow(ctx, sql, code, eventID).Scan(&p.Code, &p.EventID, &p.DiscountBps, &p.AmountOff, &p.MaxUses,
		&p.PerUser, &p.Used, &p.StartsAt, &p.EndsAt, &p.DisabledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Promotion{}, ErrNotFound
	}
	return p, err
}

// Promotions lists an event's codes, disabled ones too, oldest first.
func (s *Promotions) Promotions(ctx context.Context, eventID string) ([]Promotion, error) {
	rows, err := s.pool.Query(ctx, `SELECT code, event_id, discount_bps, amount_off, max_uses, per_user, used, starts_at,
		ends_at, disabled_at FROM promotions WHERE event_id = $1 ORDER BY created_at, code`, eventID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Promotion, error) {
		var p Promotion
		return p, r.Scan(&p.Code, &p.EventID, &p.DiscountBps, &p.AmountOff, &p.MaxUses, &p.PerUser, &p.Used, &p.StartsAt,
			&p.EndsAt, &p.DisabledAt)
	})
}
