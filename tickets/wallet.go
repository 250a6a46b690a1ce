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
	// ErrTransferred: the fan handed the ticket to someone else, who holds
	// a new one.
	ErrTransferred = errors.New("tickets: the ticket was transferred to someone else")
	// ErrListed: the ticket is listed for resale; it opens no door until
	// the listing is withdrawn.
	ErrListed = errors.New("tickets: the ticket is listed for resale; withdraw the listing to use it")
	// ErrOtherDevice: the ticket's wallet was opened on another device
	// since; codes come from there now.
	ErrOtherDevice = errors.New("tickets: the ticket was moved to another device")
)

// PeriodSeconds is how often a code changes, as the wallet tells devices.
const PeriodSeconds = int(WindowLength / time.Second)

// DeviceWallet is what a device needs to show a ticket's codes offline:
// GET /v1/tickets/{ticket_id}/wallet.
type DeviceWallet struct {
	TicketID   string
	Key        []byte // DeviceKey of Generation: never the ticket's secret
	Generation int64
	DeviceID   string
}

// Wallet shows fans their own tickets' rotating codes.
type Wallet struct {
	Store   *store.Store
	Keyring *Keyring
}

// Current is the code of ticketID valid at now, for its owner userID only:
// another fan's ticket is store.ErrNotFound, as a missing one is. Once the
// ticket's wallet has been opened on a device, only that device gets codes
// (the same its key computes offline); another is ErrOtherDevice.
func (w *Wallet) Current(ctx context.Context, userID, deviceID, ticketID string, now time.Time) (payload string, expiresAt time.Time, err error) {
	if !ValidID(ticketID) {
		return "", time.Time{}, store.ErrNotFound
	}
	t, err := w.Store.Tickets.GetTicket(ctx, ticketID, userID)
	if err != nil {
		return "", time.Time{}, err
	}
	switch t.Status {
	case vocab.TicketValid:
	case vocab.TicketTransferred:
		return "", time.Time{}, ErrTransferred
	case vocab.TicketListed:
		return "", time.Time{}, ErrListed
	default:
		return "", time.Time{}, ErrRevoked
	}
	if t.DeviceID != "" && t.DeviceID != deviceID {
		return "", time.Time{}, ErrOtherDevice
	}
	secret, err := w.Keyring.Open(t.SecretSealed, t.ID)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %v", ErrSealing, err)
	}
	payload, expiresAt = DevicePayload(t.ID, secret, t.Generation, now)
	return payload, expiresAt, nil
}

// Open moves ticketID's codes to deviceID (if another device had them,
// that device's key stops working) and returns the device's key, for the
// ticket's owner userID only: another fan's ticket is store.ErrNotFound, a
// revoked one ErrRevoked. Opening it again on the same device returns the
// same key.
func (w *Wallet) Open(ctx context.Context, userID, deviceID, ticketID string) (DeviceWallet, error) {
	if !ValidID(ticketID) {
		return DeviceWallet{}, store.ErrNotFound
	}
	var t store.Ticket
	var err error
	// A bind racing another from the same device can read the row as it was
	// before that one committed (generation 0, no device): read again, since
	// generation 0's key is the ticket's secret and never leaves the server.
	for range 3 {
		t, err = w.Store.Tickets.BindDevice(ctx, ticketID, userID, deviceID)
		if errors.Is(err, store.ErrTicketRevoked) {
			if t.Status == vocab.TicketListed {
				return DeviceWallet{}, ErrListed
			}
			return DeviceWallet{}, ErrRevoked
		}
		if err != nil {
			return DeviceWallet{}, err
		}
		if t.Generation > 0 && t.DeviceID == deviceID {
			break
		}
	}
	if t.Generation == 0 || t.DeviceID != deviceID {
		return DeviceWallet{}, fmt.Errorf("tickets: ticket %s did not settle on device %q", ticketID, deviceID)
	}
	secret, err := w.Keyring.Open(t.SecretSealed, t.ID)
	if err != nil {
		return DeviceWallet{}, fmt.Errorf("%w: %v", ErrSealing, err)
	}
	return DeviceWallet{TicketID: t.ID, Key: DeviceKey(secret, t.ID, t.Generation), Generation: t.Generation, DeviceID: deviceID}, nil
}

// Mine lists userID's tickets, newest first: a page of at most limit after
// the cursor; next is the following page's cursor, nil on the last. The
// rows carry their sealed secrets: a list shows none of them, a code is
// Current's, one ticket at a time.
func (w *Wallet) Mine(ctx context.Context, userID string, after *store.PageCursor, limit int) ([]store.Ticket, *store.PageCursor, error) {
	return w.Store.Tickets.TicketsOfUser(ctx, userID, after, limit)
}
