package manifest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/vocab"
)

// Overlap is how far before its base version a delta export looks again: a
// ticket issued or revoked by a transaction that began before the base
// export's snapshot but committed after it carries a timestamp just before
// that snapshot. Transactions are bounded by statement timeouts of seconds,
// so ten minutes is generous; re-applying a change is harmless.
const Overlap = 10 * time.Minute

// DefaultAfterStart is how long after the show starts a manifest expires
// when the export does not say.
const DefaultAfterStart = 12 * time.Hour

// ExportOptions say what to export.
type ExportOptions struct {
	EventID string
	// Since is the version of the last export the gate holds; 0 exports in
	// full.
	Since int64
	// ExpiresAt defaults to the event's start plus DefaultAfterStart.
	ExpiresAt time.Time
}

// Export reads the event's tickets in one snapshot, opens their secrets with
// the ticket keyring and seals a manifest. Tickets of refunded or cancelled
// bookings are left out of a full export and listed as revoked in a delta.
func Export(ctx context.Context, st *store.Store, kr *tickets.Keyring, keys Keys, opt ExportOptions) ([]byte, Header, error) {
	var since time.Time
	kind := KindFull
	if opt.Since > 0 {
		kind, since = KindDelta, time.UnixMicro(opt.Since).Add(-Overlap)
	}
	snap, err := st.Tickets.ManifestTickets(ctx, opt.EventID, since)
	if errors.Is(err, store.ErrNotFound) {
		return nil, Header{}, fmt.Errorf("manifest: no event %q", opt.EventID)
	}
	if err != nil {
		return nil, Header{}, fmt.Errorf("manifest: read tickets: %w", err)
	}
	m := Manifest{Header: Header{
		EventID: opt.EventID, Kind: kind, Version: snap.AsOf.UnixMicro(), BaseVersion: opt.Since,
		CreatedAt: snap.AsOf.UTC(), ExpiresAt: opt.ExpiresAt.UTC(), Reentry: snap.Reentry,
	}}
	if opt.ExpiresAt.IsZero() {
		m.ExpiresAt = snap.EventStartsAt.Add(DefaultAfterStart).UTC()
	}
	if !m.ExpiresAt.After(snap.AsOf) {
		return nil, Header{}, fmt.Errorf("manifest: it would expire at %s, before it is made; pass a later expiry",
			m.ExpiresAt.Format(time.RFC3339))
	}
	if m.Version <= opt.Since {
		return nil, Header{}, fmt.Errorf("manifest: version %d is not after %d; is the database clock behind?", m.Version, opt.Since)
	}
	m.Body.Tickets = make([]Entry, 0, len(snap.Valid))
	for _, t := range snap.Valid {
		secret, err := kr.Open(t.SecretSealed, t.ID)
		if err != nil {
			return nil, Header{}, fmt.Errorf("manifest: ticket %s: %w (is ENCORE_TICKET_SEALING_KEY the one that issued it?)", t.ID, err)
		}
		m.Body.Tickets = append(m.Body.Tickets, Entry{ID: t.ID, SectionID: t.SectionID, SeatID: t.SeatID, Secret: secret, Generation: t.Generation,
			Transferred: t.Status == vocab.TicketTransferred, Listed: t.Status == vocab.TicketListed,
			BookingCode: t.BookingCode, Attendee: t.Attendee})
	}
	m.Body.Revoked = snap.Revoked
	data, err := Seal(m, keys)
	if err != nil {
		return nil, Header{}, err
	}
	m.Format, m.TicketCount, m.RevokeCount, m.KeyID = Format, len(m.Body.Tickets), len(m.Body.Revoked), KeyID(keys.Encryption)
	return data, m.Header, nil
}
