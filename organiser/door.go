package organiser

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
)

// Door is the organiser's view of the doors during an event, from the
// scans venue gates report (encore gate --report-to). The gates' own
// ledgers decide who enters; this only counts, so a late or repeated
// report changes nothing but the figures.
type Door struct {
	store *store.Store
	// Now is the clock a report is "now" on (tests may set it).
	Now func() time.Time
}

// NewDoor builds the door view over st.
func NewDoor(st *store.Store) *Door { return &Door{store: st, Now: time.Now} }

// MaxScansPerReport bounds one report; a gate sends more in batches.
const MaxScansPerReport = 100

// ScanInput is one scan as a gate reports it.
type ScanInput struct {
	TicketID  string    `json:"ticket_id"`
	GateID    string    `json:"gate_id"`
	DeviceID  string    `json:"device_id"`
	Direction string    `json:"direction"`
	Zone      string    `json:"zone"`
	ScannedAt time.Time `json:"scanned_at"`
}

var doorName = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// Record keeps a gate's report of eventID's scans and returns how many were
// new. A bad scan refuses the whole report (a *venues.ValidationError naming
// it), so a report is kept whole or not at all.
func (d *Door) Record(ctx context.Context, eventID string, scans []ScanInput) (int, error) {
	if len(scans) == 0 || len(scans) > MaxScansPerReport {
		return 0, venues.Invalid("scans", "1 to %d scans a report", MaxScansPerReport)
	}
	now := d.Now()
	out := make([]store.DoorScan, len(scans))
	for i, sc := range scans {
		at := fmt.Sprintf("scans[%d].", i)
		switch {
		case !tickets.ValidID(sc.TicketID):
			return 0, venues.Invalid(at+"ticket_id", "not a ticket ID")
		case !doorName.MatchString(sc.GateID):
			return 0, venues.Invalid(at+"gate_id", "required: letters, digits, '_', '-', '.', ':' (at most 64)")
		case sc.DeviceID != "" && !doorName.MatchString(sc.DeviceID):
			return 0, venues.Invalid(at+"device_id", "letters, digits, '_', '-', '.', ':' (at most 64)")
		case sc.Zone != "" && !doorName.MatchString(sc.Zone):
			return 0, venues.Invalid(at+"zone", "letters, digits, '_', '-', '.', ':' (at most 64)")
		case sc.Direction != "" && !slices.Contains(vocab.Directions, vocab.Direction(sc.Direction)):
			return 0, venues.Invalid(at+"direction", `"in" or "out"`)
		case sc.ScannedAt.IsZero() || sc.ScannedAt.After(now.Add(5*time.Minute)):
			return 0, venues.Invalid(at+"scanned_at", "required, an RFC 3339 time not in the future")
		}
		dir := vocab.Direction(sc.Direction)
		if dir == "" {
			dir = vocab.DirectionIn
		}
		out[i] = store.DoorScan{TicketID: sc.TicketID, GateID: sc.GateID, DeviceID: sc.DeviceID, Direction: dir, Zone: sc.Zone,
			ScannedAt: sc.ScannedAt.UTC().Truncate(time.Millisecond)}
	}
	return d.store.Door.RecordScans(ctx, eventID, out)
}

// Report is eventID's door now: per gate, admissions per minute over the
// last window, and who is inside per zone.
func (d *Door) Report(ctx context.Context, eventID string, window time.Duration) (store.DoorReport, error) {
	return d.store.Door.DoorReportOf(ctx, eventID, d.Now().Add(-window).Truncate(time.Minute))
}
