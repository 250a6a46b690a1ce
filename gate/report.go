package gate

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// ReportedScan is one admission or exit as the organiser's door view
// counts it (POST /v1/admin/events/{event_id}/door/scans).
type ReportedScan struct {
	TicketID  string    `json:"ticket_id"`
	GateID    string    `json:"gate_id"`
	DeviceID  string    `json:"device_id,omitempty"`
	Direction string    `json:"direction"`
	Zone      string    `json:"zone,omitempty"`
	ScannedAt time.Time `json:"scanned_at"`
}

// ScansSince lists eventID's first entries and latest movements (out, or
// back in) recorded at or after sinceMs (Unix milliseconds), oldest first,
// with the largest instant among them. The ledger keeps a ticket's first
// entry and its latest movement, so a movement overwritten between two
// reports is reported as the later one only.
func (s *Store) ScansSince(ctx context.Context, eventID string, sinceMs int64, zones Zones) ([]ReportedScan, int64, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT e.ticket_id, t.section_id, e.gate_id, e.device_id, e.entered_at,
			e.inside, e.moved_at, coalesce(e.moved_gate_id, ''), coalesce(e.moved_device_id, '')
		FROM entries e JOIN tickets t ON t.id = e.ticket_id
		WHERE t.event_id = ? AND (e.entered_at >= ? OR e.moved_at >= ?)
		ORDER BY max(e.entered_at, coalesce(e.moved_at, 0))`, eventID, sinceMs, sinceMs)
	if err != nil {
		return nil, sinceMs, err
	}
	defer rows.Close()
	var out []ReportedScan
	high := sinceMs
	for rows.Next() {
		var ticket, section, gateID, device, movedGate, movedDevice string
		var entered int64
		var inside bool
		var moved sql.NullInt64
		if err := rows.Scan(&ticket, &section, &gateID, &device, &entered, &inside, &moved, &movedGate, &movedDevice); err != nil {
			return nil, sinceMs, err
		}
		zone := zones.Of(section)
		if entered >= sinceMs {
			out = append(out, ReportedScan{TicketID: ticket, GateID: gateID, DeviceID: device, Direction: string(In), Zone: zone,
				ScannedAt: time.UnixMilli(entered).UTC()})
			high = max(high, entered)
		}
		if moved.Valid && moved.Int64 >= sinceMs {
			dir := Out
			if inside {
				dir = In
			}
			out = append(out, ReportedScan{TicketID: ticket, GateID: movedGate, DeviceID: movedDevice, Direction: string(dir), Zone: zone,
				ScannedAt: time.UnixMilli(moved.Int64).UTC()})
			high = max(high, moved.Int64)
		}
	}
	return out, high, rows.Err()
}

// Of is the zone whose doors admit section, "" when none names it.
func (z Zones) Of(section string) string {
	for _, name := range z.Names() {
		if z.Admits(name, section) {
			return name
		}
	}
	return ""
}

// Reporter pushes the ledger's admissions and exits to the organiser's
// door view whenever it can reach the API: the gate decides on its own,
// and a report lost to a network outage is sent again later (the API
// counts a scan once however often it is sent).
type Reporter struct {
	Store   *Store
	EventID string
	Zones   Zones
	// URL is the API's base URL; Token an organiser's (or admin's) bearer
	// token for the event.
	URL, Token string
	// Every is the pause between reports (0: 5s).
	Every  time.Duration
	Client *http.Client
	Log    *slog.Logger
}

// reportBatch is the most scans one request carries (the API's cap).
const reportBatch = 100

// Run reports until ctx ends.
func (r *Reporter) Run(ctx context.Context) {
	every := r.Every
	if every <= 0 {
		every = 5 * time.Second
	}
	var since int64 // everything, once per start: the API drops what it has
	for {
		next, err := r.Once(ctx, since)
		if err != nil && ctx.Err() == nil && r.Log != nil {
			r.Log.Warn("door report not delivered; the gate keeps admitting and reports again", "err", err)
		}
		since = next
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// Once sends every scan recorded at or after since and returns where the
// next report starts: the last instant sent (its scans are sent again, as
// another may share the millisecond), or since when a batch failed.
func (r *Reporter) Once(ctx context.Context, since int64) (int64, error) {
	scans, high, err := r.Store.ScansSince(ctx, r.EventID, since, r.Zones)
	if err != nil {
		return since, err
	}
	for start := 0; start < len(scans); start += reportBatch {
		if err := r.send(ctx, scans[start:min(start+reportBatch, len(scans))]); err != nil {
			return since, err
		}
	}
	return high, nil
}

func (r *Reporter) send(ctx context.Context, scans []ReportedScan) error {
	body, err := json.Marshal(map[string]any{"scans": scans})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/v1/admin/events/"+r.EventID+"/door/scans", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.Token)
	client := r.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("door report: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
