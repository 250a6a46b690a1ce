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
	ReasonUnavailable     = "unavailable"      // the ledger failed: fail closed
)

// Reasons lists every rejection reason.
var Reasons = []string{ReasonInvalidCode, ReasonStaleWindow, ReasonUnknownTicket, ReasonAlreadyUsed,
	ReasonManifestExpired, ReasonWrongEvent, ReasonRevoked, ReasonOtherDevice, ReasonUnavailable}

// Result is the answer to one scan, as POST /v1/scan returns it.
type Result struct {
	Result       string     `json:"result"`
	Reason       string     `json:"reason,omitempty"`
	TicketID     string     `json:"ticket_id,omitempty"`
	SeatID       string     `json:"seat_id,omitempty"`
	SectionID    string     `json:"section_id,omitempty"`
	FirstEntryAt *time.Time `json:"first_entry_at,omitempty"`
	FirstGateID  string     `json:"first_gate_id,omitempty"`
	Detail       string     `json:"detail,omitempty"`
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
	start := time.Now()
	res, err := g.scan(ctx, payload, gateID)
	if err != nil {
		if g.Log != nil {
			g.Log.Error("scan failed closed", "gate_id", gateID, "err", err)
		}
		res = Result{Result: Rejected, Reason: ReasonUnavailable, TicketID: res.TicketID,
			Detail: "the gate's ledger is unavailable: nobody enters until it is back"}
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	g.Metrics.observe(res, time.Since(start))
	return res, err
}

func reject(reason, detail string) Result {
	return Result{Result: Rejected, Reason: reason, Detail: detail}
}

func (g *Gate) scan(ctx context.Context, payload, gateID string) (Result, error) {
	code, err := tickets.ParsePayload(payload)
	if err != nil {
		return reject(ReasonInvalidCode, "not an Encore ticket code"), nil
	}
	now := g.now()
	row, haveManifest, err := g.Store.lookup(ctx, g.EventID, code.TicketID)
	if err != nil {
		return Result{TicketID: code.TicketID}, err
	}
	if !haveManifest {
		r := reject(ReasonManifestExpired, "this gate holds no manifest for event "+g.EventID)
		r.TicketID = code.TicketID
		return r, nil
	}
	if exp := time.UnixMilli(row.manifestExpires); !now.Before(exp) {
		r := reject(ReasonManifestExpired, "the manifest expired at "+exp.UTC().Format(time.RFC3339)+"; import a fresh export")
		r.TicketID = code.TicketID
		return r, nil
	}
	if !row.found {
		r := reject(ReasonUnknownTicket, "this ticket is not in the manifest")
		r.TicketID = code.TicketID
		return r, nil
	}
	switch err := code.Verify(row.secret, now); {
	case errors.Is(err, tickets.ErrBadMAC):
		r := reject(ReasonInvalidCode, "the code was not made with this ticket's secret")
		r.TicketID = code.TicketID
		return r, nil
	case errors.Is(err, tickets.ErrStale):
		r := reject(ReasonStaleWindow, "the code is too old or too new: ask the fan to open the live ticket, not a screenshot")
		r.TicketID = code.TicketID
		return r, nil
	case err != nil:
		return Result{TicketID: code.TicketID}, err
	}
	if code.Generation < row.generation {
		r := reject(ReasonOtherDevice, "this code comes from a phone the ticket has left: ask the fan to open the ticket on the phone that holds it now")
		r.TicketID = code.TicketID
		return r, nil
	}
	r := Result{TicketID: code.TicketID, SeatID: row.seatID, SectionID: row.sectionID}
	if row.eventID != g.EventID {
		r.Result, r.Reason, r.Detail = Rejected, ReasonWrongEvent, "this ticket is for event "+row.eventID
		return r, nil
	}
	if row.revoked {
		r.Result, r.Reason, r.Detail = Rejected, ReasonRevoked, "this ticket was refunded or cancelled"
		return r, nil
	}
	first, err := g.Store.enter(ctx, code.TicketID, gateID, now)
	if err != nil {
		return r, err
	}
	if first != nil {
		at := first.EnteredAt
		r.Result, r.Reason, r.FirstEntryAt, r.FirstGateID = Rejected, ReasonAlreadyUsed, &at, first.GateID
		r.Detail = fmt.Sprintf("already used at %s at gate %s", at.Format(time.RFC3339), first.GateID)
		return r, nil
	}
	r.Result = Accepted
	return r, nil
}
