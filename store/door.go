package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// DoorScan is one admission or exit a gate reports.
type DoorScan struct {
	TicketID  string
	GateID    string
	DeviceID  string
	Direction vocab.Direction
	Zone      string
	ScannedAt time.Time
}

// RecordScans keeps a gate's report of eventID's scans; a scan reported
// before (a retried report) is counted once. It returns how many were new.
func (s *Door) RecordScans(ctx context.Context, eventID string, scans []DoorScan) (int, error) {
	if len(scans) == 0 {
		return 0, nil
	}
	tickets, gates, devices, directions, zones := make([]string, len(scans)), make([]string, len(scans)),
		make([]string, len(scans)), make([]string, len(scans)), make([]string, len(scans))
	at := make([]time.Time, len(scans))
	for i, sc := range scans {
		tickets[i], gates[i], devices[i], directions[i], zones[i], at[i] = sc.TicketID, sc.GateID, sc.DeviceID, string(sc.Direction), sc.Zone, sc.ScannedAt
	}
	var n int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1)`, eventID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return ErrNotFound
		}
		tag, err := tx.Exec(ctx, `INSERT INTO door_scans (event_id, ticket_id, gate_id, device_id, direction, zone, scanned_at)
			SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
			ON CONFLICT DO NOTHING`, eventID, tickets, gates, devices, directions, zones, at)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// DoorReport is the door of one event as its organiser watches it.
type DoorReport struct {
	// Admitted counts tickets let in at least once; Inside those whose
	// latest scan was in.
	Admitted, Inside int
	LastScanAt       *time.Time
	Gates            []GateCount
	Minutes          []MinuteCount
	Zones            []ZoneCount
}

// GateCount is one gate's scans.
type GateCount struct {
	GateID     string
	In, Out    int
	LastScanAt time.Time
}

// MinuteCount is one gate's admissions in one minute.
type MinuteCount struct {
	Minute time.Time
	GateID string
	In     int
}

// ZoneCount is who is inside one zone now (latest scan in, there).
type ZoneCount struct {
	Zone   string
	Inside int
}

// DoorReportOf reads eventID's door: per gate, admissions per minute since
// since, and who is inside per zone, in one snapshot.
func (s *Door) DoorReportOf(ctx context.Context, eventID string, since time.Time) (DoorReport, error) {
	var r DoorReport
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1)`, eventID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return ErrNotFound
		}
		// Each ticket's latest scan says whether, and in which zone, it is
		// inside now.
		err := tx.QueryRow(ctx, `WITH latest AS (
				SELECT DISTINCT ON (ticket_id) ticket_id, direction FROM door_scans WHERE event_id = $1
				ORDER BY ticket_id, scanned_at DESC, direction)
			SELECT (SELECT count(DISTINCT ticket_id) FROM door_scans WHERE event_id = $1 AND direction = 'in'),
			       (SELECT count(*) FROM latest WHERE direction = 'in'),
			       (SELECT max(scanned_at) FROM door_scans WHERE event_id = $1)`, eventID).Scan(&r.Admitted, &r.Inside, &r.LastScanAt)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT gate_id, count(*) FILTER (WHERE direction = 'in'), count(*) FILTER (WHERE direction = 'out'),
			max(scanned_at) FROM door_scans WHERE event_id = $1 GROUP BY gate_id ORDER BY gate_id`, eventID)
		if err != nil {
			return err
		}
		if r.Gates, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (GateCount, error) {
			var g GateCount
			return g, row.Scan(&g.GateID, &g.In, &g.Out, &g.LastScanAt)
		}); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT date_trunc('minute', scanned_at), gate_id, count(*) FROM door_scans
			WHERE event_id = $1 AND direction = 'in' AND scanned_at >= $2 GROUP BY 1, 2 ORDER BY 1, 2`, eventID, since)
		if err != nil {
			return err
		}
		if r.Minutes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (MinuteCount, error) {
			var m MinuteCount
			return m, row.Scan(&m.Minute, &m.GateID, &m.In)
		}); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT zone, count(*) FROM (
				SELECT DISTINCT ON (ticket_id) ticket_id, direction, zone FROM door_scans WHERE event_id = $1
				ORDER BY ticket_id, scanned_at DESC, direction) latest
			WHERE direction = 'in' GROUP BY zone ORDER BY zone`, eventID)
		if err != nil {
			return err
		}
		r.Zones, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ZoneCount, error) {
			var z ZoneCount
			return z, row.Scan(&z.Zone, &z.Inside)
		})
		return err
	})
	return r, err
}
