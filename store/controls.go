package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/controls"
)

const controlsColumns = `event_id, admission_capacity, admission_capacity_min, admission_capacity_max,
	admission_paused, sales_paused, seatmap_cache_ttl_ms, live_push, version, seq, updated_at, updated_by`

func scanDials(row pgx.Row) (controls.Dials, error) {
	var d controls.Dials
	err := row.Scan(&d.EventID, &d.AdmissionCapacity, &d.CapacityMin, &d.CapacityMax, &d.AdmissionPaused,
		&d.SalesPaused, &d.SeatmapCacheTTLms, &d.LivePush, &d.Version, &d.Seq, &d.UpdatedAt, &d.UpdatedBy)
	return d, err
}

// EventControls returns an event's dials (the defaults when nobody has
// touched them), or ErrNotFound for an unknown event.
func (s *Catalogue) EventControls(ctx context.Context, eventID string) (controls.Dials, error) {
	d, err := scanDials(s.pool.QueryRow(ctx, `SELECT `+controlsColumns+` FROM event_controls WHERE event_id = $1`, eventID))
	if errors.Is(err, pgx.ErrNoRows) {
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1)`, eventID).Scan(&exists); err != nil {
			return controls.Dials{}, err
		}
		if !exists {
			return controls.Dials{}, ErrNotFound
		}
		return controls.Defaults(eventID), nil
	}
	return d, err
}

// ControlsChangedSince returns the dials changed after seq, in the order
// they changed. Updates serialise on one advisory lock (UpdateControls), so
// a change with a lower seq never commits after one with a higher seq and a
// watcher that remembers the highest seq it saw misses none.
func (s *Catalogue) ControlsChangedSince(ctx context.Context, seq int64) ([]controls.Dials, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+controlsColumns+` FROM event_controls WHERE seq > $1 ORDER BY seq`, seq)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (controls.Dials, error) { return scanDials(row) })
}

// controlsLock serialises dial changes (rare: an operator's hand), so seq
// order is commit order.
const controlsLock = 0x656e636f7265 // "encore"

// UpdateControls applies p to an event's dials and records the change, who
// made it and why, in the admin audit log in the same transaction. It
// returns the dials now in force; a bad patch is a *controls.ValidationError
// and writes nothing. The record is the event's organisation's, whoever
// the actor works for.
func (s *Catalogue) UpdateControls(ctx context.Context, eventID, actor string, p controls.Patch) (controls.Dials, error) {
	var out controls.Dials
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(controlsLock)); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1)`, eventID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return ErrNotFound
		}
		before, err := scanDials(tx.QueryRow(ctx, `SELECT `+controlsColumns+` FROM event_controls WHERE event_id = $1`, eventID))
		if errors.Is(err, pgx.ErrNoRows) {
			before, err = controls.Defaults(eventID), nil
		}
		if err != nil {
			return err
		}
		next, err := p.Apply(before)
		if err != nil {
			return err
		}
		out, err = scanDials(tx.QueryRow(ctx, `
			INSERT INTO event_controls (event_id, admission_capacity, admission_capacity_min, admission_capacity_max,
			    admission_paused, sales_paused, seatmap_cache_ttl_ms, live_push, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (event_id) DO UPDATE SET
			    admission_capacity = excluded.admission_capacity,
			    admission_capacity_min = excluded.admission_capacity_min,
			    admission_capacity_max = excluded.admission_capacity_max,
			    admission_paused = excluded.admission_paused,
			    sales_paused = excluded.sales_paused,
			    seatmap_cache_ttl_ms = excluded.seatmap_cache_ttl_ms,
			    live_push = excluded.live_push,
			    updated_by = excluded.updated_by,
			    version = event_controls.version + 1,
			    seq = nextval('event_controls_seq'),
			    updated_at = now()
			RETURNING `+controlsColumns,
			eventID, next.AdmissionCapacity, next.CapacityMin, next.CapacityMax, next.AdmissionPaused,
			next.SalesPaused, next.SeatmapCacheTTLms, next.LivePush, actor))
		if err != nil {
			return inputError(err)
		}
		b, _ := json.Marshal(before)
		a, _ := json.Marshal(out)
		return RecordAdminActionTx(ctx, tx, AdminAction{Actor: actor, EventID: eventID, Action: "event.controls",
			Target: eventID, Reason: p.Reason, Before: b, After: a})
	})
	return out, err
}
