package tickets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// Errors of the wallet; a missing or foreign ticket is store.ErrNotFound.
var (
	// ErrRevoked: the ticket's booking was refunded or cancelled.
	ErrRevoked = errors.New("tickets: the ticket was revoked")
	// ErrSealing: the ticket's secret cannot be opened with the configured
	// keyring, a configuration fault rather than the fan's.
	ErrSealing = errors.New("tickets: the ticket secret cannot be opened")
)

// Wallet shows fans their own tickets' rotating codes.
type Wallet struct {
	Store   *store.Store
	Keyring *Keyring
}

// Current is the code of ticketID valid at now, for its owner userID only:
// another fan's ticket is store.ErrNotFound, as a missing one is.
func (w *Wallet) Current(ctx context.Context, userID, ticketID string, now time.Time) (payload string, expiresAt time.Time, err error) {
	if !ValidID(ticketID) {
		return "", time.Time{}, store.ErrNotFound
	}
	t, err := w.Store.Tickets.GetTicket(ctx, ticketID, userID)
	if err != nil {
		return "", time.Time{}, err
	}
	if t.Status != vocab.TicketValid {
		return "", time.Time{}, ErrRevoked
	}
	secret, err := w.Keyring.Open(t.SecretSealed, t.ID)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %v", ErrSealing, err)
	}
	payload, expiresAt = Payload(t.ID, secret, now)
	return payload, expiresAt, nil
}

// Mine lists userID's tickets, newest first: a page of at most limit after
// the cursor; next is the following page's cursor, nil on the last. The
// rows carry their sealed secrets: a list shows none of them, a code is
// Current's, one ticket at a time.
func (w *Wallet) Mine(ctx context.Context, userID string, after *store.PageCursor, limit int) ([]store.Ticket, *store.PageCursor, error) {
	return w.Store.Tickets.TicketsOfUser(ctx, userID, after, limit)
}
