// Package gate is the venue entry service (encore gate). It imports an
// event's manifest into a SQLite ledger in WAL mode and answers scans: the
// rotating code is verified against the ticket's secret offline, and entry
// is one INSERT into an entries table keyed by ticket, so when two gates race
// on one ticket the primary key lets exactly one fan in. Gate processes on
// one host share one ledger file; scanners on the venue LAN call a gate over
// HTTP. No internet is needed.
//
// Consistency over availability: if the ledger cannot be read or written,
// a scan is refused (503, reason "unavailable"), never waved through. The
// offline scanner mode (a scanner with its own copy, synced later) trades the
// other way; see Sync and README's "Venue gate".
package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/encore-tickets/encore/tickets"
)

// Results and rejection reasons of a scan.
const (
	Accepted = "accepted"
	Rejected = "rejected"

	ReasonInvalidCode     = "invalid_code"     // not a ticket code, or not signed by the ticket's secret
	ReasonStaleWindow     = "stale_window"     // a valid code from outside the accepted windows (a screenshot)
	ReasonUnknownTicket   = "unknown_ticket"   // not in the manifest
	ReasonAlreadyUsed     = "already_used"     // entered before: when and at which gate are in the result
	ReasonManifestExpired = "manifest_expired" // the gate's manifest is past its expiry: export a fresh one
	ReasonWrongEvent      = "wrong_event"      // a ticket for another event this gate knows
	ReasonRevoked         = "revoked"          // refunded or cancelled
	ReasonOtherDevice     = "other_device"     // a code from a device the ticket has since left
	ReasonTransferred     = "transferred"      // handed to another fan, who holds a new ticket
	ReasonListed          = "listed"           // offered for resale by its holder: withdrawn first, it opens the door again
	ReasonWrongZone       = "wrong_zone"       // the scanner's zone does not include the ticket's section
	ReasonNotInside       = "not_inside"       // a scan out of a ticket that is not inside
	ReasonUnavailable     = "unavailable"      // the ledger failed: fail closed
)

// Reasons lists every rejection reason.
var Reasons = []string{ReasonInvalidCode, ReasonStaleWindow, ReasonUnknownTicket, ReasonAlreadyUsed,
	ReasonManifestExpired, ReasonWrongEvent, ReasonRevoked, ReasonOtherDevice, ReasonTransferred, ReasonListed, ReasonWrongZone, ReasonNotInside,
	ReasonUnavailable}

// Directions of a scan: a door lets fans in, or (with re-entry, or to keep
// the count of who is inside) out.
const (
	In  = "in"
	Out = "out"
)

// Result is the answer to one scan, as POST /v1/scan returns it.
type Result struct {
	Result       string     `json:"result"`
	Reason       string     `json:"reason,omitempty"`
	TicketID     string     `json:"ticket_id,omitempty"`
	SeatID       string     `json:"seat_id,omitempty"`
	SectionID    string     `json:"section_id,omitempty"`
	FirstEntryAt *time.Time `json:"first_entry_at,omitempty"`
	FirstGateID  string     `json:"first_gate_id,omitempty"`
	// Inside, MovedAt and MovedGateID say where a ticket refused as
	// already_used or not_inside stands: inside or out, and its last scan
	// out or back in after the first entry (absent: none).
	Inside      *bool      `json:"inside,omitempty"`
	MovedAt     *time.Time `json:"moved_at,omitempty"`
	MovedGateID string     `json:"moved_gate_id,omitempty"`
	Direction   string     `json:"direction,omitempty"`
	Zone        string     `json:"zone,omitempty"`
	// Reentry marks an accepted scan in of a ticket that had gone out.
	Reentry bool `json:"reentry,omitempty"`
	// Manual marks a ticket admitted by staff from a lookup, not a code.
	Manual bool   `json:"manual,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Attempt is one request to let a ticket through a door: a scanned code,
// or (Manual, from a lookup) a ticket ID.
type Attempt struct {
	// Payload is the scanned code. Empty for a manual admit, which names
	// TicketID instead and skips the code's checks (MAC, window, device).
	Payload  string
	TicketID string
	GateID   string
	// DeviceID is the scanner that asked; it is recorded with the entry.
	DeviceID string
	// Direction is In (the default) or Out.
	Direction string
	// Zone is the scanner's zone ("": the whole venue).
	Zone string
}

// ErrUnavailable wraps ledger failures; the scan is refused.
var ErrUnavailable = errors.New("gate: ledger unavailable")

// Gate answers scans for one event from a ledger.
type Gate struct {
	Store   *Store
	EventID string
	// Now is the scanner's clock; default time.Now.
	Now     func() time.Time
	Metrics *Metrics
	Log     *slog.Logger
	// Reentry turns re-entry on at this gate whatever the event says (the
	// manifest carries the event's rule, which applies too): true lets a ticket scanned out
	// back in; false (the default) refuses any second scan in.
	Reentry bool
	// Zones are the areas with doors of their own: a scanner in a zone
	// admits only tickets of its sections.
	Zones Zones
}

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Scan checks a payload and, when it passes, records the entry. Checks run
// in this order: the code's shape, the manifest's expiry, the ticket is
// known, the code's MAC, its window, its device key's generation, the
// event, revocation, and last the
// one INSERT that decides first use. A ledger failure returns a rejected
// result with reason "unavailable" and an error wrapping ErrUnavailable.
func (g *Gate) Scan(ctx context.Context, payload, gateID string) (Result, error) {
	return g.Try(ctx, Attempt{Payload: payload, GateID: gateID})
}

// Try answers an attempt as Scan does, with its device, direction and zone;
// a manual attempt (no payload) skips the code's checks. After revocation
// come the zone, then the entry: a first scan in is the one INSERT; with
// re-entry, a scan in of a ticket that went out and a scan out are one
// conditional UPDATE each, so two gates racing on one ticket move it once.
func (g *Gate) Try(ctx context.Context, a Attempt) (Result, error) {
	start := time.Now()
	if a.Direction == "" {
		a.Direction = In
	}
	res, err := g.try(ctx, a)
	res.Direction, res.Manual = a.Direction, a.Payload == ""
	if a.Zone != "" {
		res.Zone = a.Zone
	}
	if err != nil {
		if g.Log != nil {
			g.Log.Error("scan failed closed", "gate_id", a.GateID, "device_id", a.DeviceID, "err", err)
		}
		res = Result{Result: Rejected, Reason: ReasonUnavailable, TicketID: res.TicketID,
			Direction: a.Direction, Manual: a.Payload == "", Zone: a.Zone,
			Detail: "the gate's ledger is unavailable: nobody enters until it is back"}
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	g.Metrics.observe(res, time.Since(start))
	return res, err
}

func reject(reason, detail string) Result {
	return Result{Result: Rejected, Reason: reason, Detail: detail}
}

func (g *Gate) try(ctx context.Context, a Attempt) (Result, error) {
	ticketID := a.TicketID
	var code tickets.Code
	if a.Payload != "" {
		var err error
		if code, err = tickets.ParsePayload(a.Payload); err != nil {
			return reject(ReasonInvalidCode, "not an Encore ticket code"), nil
		}
		ticketID = code.TicketID
	}
	now := g.now()
	row, haveManifest, err := g.Store.lookup(ctx, g.EventID, ticketID)
	if err != nil {
		return Result{TicketID: ticketID}, err
	}
	refuse := func(reason, detail string) (Result, error) {
		r := reject(reason, detail)
		r.TicketID = ticketID
		return r, nil
	}
	if !haveManifest {
		return refuse(ReasonManifestExpired, "this gate holds no manifest for event "+g.EventID)
	}
	if exp := time.UnixMilli(row.manifestExpires); !now.Before(exp) {
		return refuse(ReasonManifestExpired, "the manifest expired at "+exp.UTC().Format(time.RFC3339)+"; import a fresh export")
	}
	if !row.found {
		return refuse(ReasonUnknownTicket, "this ticket is not in the manifest")
	}
	if a.Payload != "" {
		switch err := code.Verify(row.secret, now); {
		case errors.Is(err, tickets.ErrBadMAC):
			return refuse(ReasonInvalidCode, "the code was not made with this ticket's secret")
		case errors.Is(err, tickets.ErrStale):
			return refuse(ReasonStaleWindow, "the code is too old or too new: ask the fan to open the live ticket, not a screenshot")
		case err != nil:
			return Result{TicketID: ticketID}, err
		}
		if code.Generation < row.generation {
			return refuse(ReasonOtherDevice, "this code comes from a phone the ticket has left: ask the fan to open the ticket on the phone that holds it now")
		}
	}
	r := Result{TicketID: ticketID, SeatID: row.seatID, SectionID: row.sectionID}
	if row.eventID != g.EventID {
		r.Result, r.Reason, r.Detail = Rejected, ReasonWrongEvent, "this ticket is for event "+row.eventID
		return r, nil
	}
	if row.transferred {
		r.Result, r.Reason, r.Detail = Rejected, ReasonTransferred, "this ticket was handed to someone else, who holds a new ticket for this place"
		return r, nil
	}
	if row.listed {
		r.Result, r.Reason, r.Detail = Rejected, ReasonListed, "this ticket is listed for resale: its holder must withdraw the listing to use it"
		return r, nil
	}
	if row.revoked {
		r.Result, r.Reason, r.Detail = Rejected, ReasonRevoked, "this ticket was refunded or cancelled"
		return r, nil
	}
	if a.Zone != "" && !g.Zones.Admits(a.Zone, row.sectionID) {
		r.Result, r.Reason, r.Detail = Rejected, ReasonWrongZone, "this ticket's section "+row.sectionID+" is not in zone "+a.Zone
		return r, nil
	}
	if a.Direction == Out {
		return g.out(ctx, r, a, now)
	}
	first, err := g.Store.enter(ctx, ticketID, a.GateID, a.DeviceID, now)
	if err != nil {
		return r, err
	}
	if first == nil {
		r.Result = Accepted
		return r, nil
	}
	if (g.Reentry || row.reentry) && !first.Inside {
		back, err := g.Store.move(ctx, ticketID, a.GateID, a.DeviceID, true, now)
		if err != nil {
			return r, err
		}
		if back {
			r.Result, r.Reentry = Accepted, true
			return r, nil
		}
		// Another gate let the fan back in first: report where it stands now.
		e, err := g.Store.entry(ctx, ticketID)
		if err != nil {
			return r, err
		}
		first = &e
	}
	r.Result, r.Reason = Rejected, ReasonAlreadyUsed
	standing(&r, *first)
	r.Detail = fmt.Sprintf("already used at %s at gate %s", first.EnteredAt.Format(time.RFC3339), first.GateID)
	if !first.Inside {
		r.Detail += fmt.Sprintf("; went out at %s at gate %s and this event has no re-entry",
			first.MovedAt.Format(time.RFC3339), first.MovedGateID)
	}
	return r, nil
}

// out is a scan out: one conditional UPDATE of a ticket that is inside.
func (g *Gate) out(ctx context.Context, r Result, a Attempt, now time.Time) (Result, error) {
	left, err := g.Store.move(ctx, r.TicketID, a.GateID, a.DeviceID, false, now)
	if err != nil {
		return r, err
	}
	if left {
		r.Result = Accepted
		return r, nil
	}
	e, err := g.Store.entry(ctx, r.TicketID)
	if errors.Is(err, sql.ErrNoRows) {
		r.Result, r.Reason, r.Detail = Rejected, ReasonNotInside, "this ticket never came in"
		return r, nil
	}
	if err != nil {
		return r, err
	}
	r.Result, r.Reason = Rejected, ReasonNotInside
	standing(&r, e)
	r.Detail = fmt.Sprintf("this ticket already went out at %s at gate %s", e.MovedAt.Format(time.RFC3339), e.MovedGateID)
	return r, nil
}

// standing copies where a ticket stands into a refusal.
func standing(r *Result, e Entry) {
	at, inside := e.EnteredAt, e.Inside
	r.FirstEntryAt, r.FirstGateID, r.Inside = &at, e.GateID, &inside
	if !e.MovedAt.IsZero() {
		moved := e.MovedAt
		r.MovedAt, r.MovedGateID = &moved, e.MovedGateID
	}
}
