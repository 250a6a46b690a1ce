package organiser

import (
	"context"
	"errors"

	"github.com/encore-tickets/encore/controls"
	"github.com/encore-tickets/encore/store"
)

// Controls is the operator's hand on a sale: an event's runtime dials
// (admission capacity and pauses, the seat map's cache and live push) and
// its admissions. The dials live in PostgreSQL, each change recorded in the
// admin audit log in its own transaction; every process follows them
// through a controls.Watcher. Operators are not an organisation's staff, so
// it takes the acting user and their organisation rather than a
// venues.Scope: who may call it is the edge's role check.
type Controls struct {
	Store *store.Store
	// Room ends admissions (the waiting room); nil: Revoke fails.
	Room Revoker
}

// Revoker ends a fan's admission to an event (waitingroom.Room), reporting
// whether they held one.
type Revoker interface {
	Revoke(ctx context.Context, eventID, userID string) (bool, error)
}

// errNoRoom: Revoke was called on Controls wired without a waiting room.
var errNoRoom = errors.New("organiser: no waiting room to revoke admissions in")

// Dials are the event's dials as stored (the defaults for an event nobody
// has touched); an unknown event is store.ErrNotFound.
func (c *Controls) Dials(ctx context.Context, eventID string) (controls.Dials, error) {
	return c.Store.Catalogue.EventControls(ctx, eventID)
}

// Change applies p to the event's dials for actor and returns the dials now
// stored; a bad patch is a *controls.ValidationError and changes nothing.
// The audit record is the event's organisation's (an operator or admin
// works for their own). Other processes take it into force within their
// watcher's poll interval; the caller refreshes its own watcher to have it
// at once.
func (c *Controls) Change(ctx context.Context, eventID, actor string, p controls.Patch) (controls.Dials, error) {
	return c.Store.Catalogue.UpdateControls(ctx, eventID, actor, p)
}

// Revoke ends userID's admission to the event at once (a scalper's
// account, a fan admitted by mistake): every pass minted for it is refused
// from then on, and the action is recorded in the event's organisation's
// admin audit log as actor's, with reason. An unknown event is
// store.ErrNotFound and revokes nothing. It reports whether the fan held an
// admission.
func (c *Controls) Revoke(ctx context.Context, eventID, userID, actor, reason string) (bool, error) {
	if c.Room == nil {
		return false, errNoRoom
	}
	if _, err := c.Store.Catalogue.EventControls(ctx, eventID); err != nil {
		return false, err
	}
	revoked, err := c.Room.Revoke(ctx, eventID, userID)
	if err != nil {
		return false, err
	}
	if err := c.Store.Orgs.RecordAdminAction(ctx, store.AdminAction{Actor: actor, EventID: eventID,
		Action: "admission.revoke", Target: eventID + "/" + userID, Reason: reason}); err != nil {
		return false, err
	}
	return revoked, nil
}
