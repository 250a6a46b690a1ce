package tickets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/store"
)

// DefaultTransferTTL is how long a transfer waits for its recipient.
const DefaultTransferTTL = 7 * 24 * time.Hour

// Transfers hands tickets from one fan to another by email: the recipient
// accepts while signed in with that address and gets a new ticket (a new
// ID and secret, so every code the sender's devices could make dies with
// the old one), the old ticket becomes TRANSFERRED in the same transaction.
// Both are emailed through Mailer (the mail queue).
type Transfers struct {
	Store   *store.Store
	Keyring *Keyring
	Mailer  notify.Mailer // nil: no emails
	Limits  store.TransferLimits
	// TTL is how long an offer stands (0: DefaultTransferTTL).
	TTL time.Duration
	// PublicURL is the base of links in the emails ("" leaves them out).
	PublicURL string
	Log       *slog.Logger
}

// ErrBadEmail refuses a transfer to something that is not one plain email
// address, or to the sender's own.
var ErrBadEmail = errors.New("tickets: to_email must be one plain email address, not your own")

// Offer offers fromUser's ticket to toEmail. fromEmail (may be empty) is the
// sender's own address, which cannot be the recipient.
func (x *Transfers) Offer(ctx context.Context, fromUser, fromEmail, ticketID, toEmail string) (store.Transfer, error) {
	if !ValidID(ticketID) {
		return store.Transfer{}, store.ErrNotFound
	}
	if toEmail == "" || len(toEmail) > 254 || (fromEmail != "" && strings.EqualFold(fromEmail, toEmail)) {
		return store.Transfer{}, ErrBadEmail
	}
	ttl := x.TTL
	if ttl <= 0 {
		ttl = DefaultTransferTTL
	}
	t, err := x.Store.Tickets.CreateTransfer(ctx, uuid.New(), ticketID, fromUser, fromEmail, toEmail, time.Now().Add(ttl), x.Limits)
	if err != nil {
		return t, err
	}
	x.mail(ctx, notify.Message{To: toEmail, Key: "transfer-" + t.ID.String() + "-offer",
		Subject: "A ticket was sent to you",
		Body: fmt.Sprintf("A ticket was sent to you on Encore. Sign in with this address (%s) and accept it before %s:\n%s\n",
			toEmail, t.ExpiresAt.UTC().Format("Mon 2 Jan 2006 15:04 MST"), x.link("#/transfer/"+t.ID.String()))})
	return t, nil
}

// Cancel withdraws fromUser's pending transfer.
func (x *Transfers) Cancel(ctx context.Context, fromUser string, id uuid.UUID) (store.Transfer, error) {
	return x.Store.Tickets.CancelTransfer(ctx, id, fromUser)
}

// Accept gives the transfer's ticket to toUser, signed in as toEmail: a new
// ticket with a new ID and secret.
func (x *Transfers) Accept(ctx context.Context, toUser, toEmail string, id uuid.UUID) (store.Transfer, store.Ticket, error) {
	if toEmail == "" {
		return store.Transfer{}, store.Ticket{}, store.ErrWrongRecipient
	}
	newID, sealed, err := x.Keyring.Mint()
	if err != nil {
		return store.Transfer{}, store.Ticket{}, err
	}
	tr, t, err := x.Store.Tickets.AcceptTransfer(ctx, id, toUser, toEmail, store.TicketRow{ID: newID, UserID: toUser, SecretSealed: sealed})
	if err != nil {
		return tr, t, err
	}
	x.mail(ctx, notify.Message{To: toEmail, Key: "transfer-" + id.String() + "-received", Subject: "Your ticket is ready",
		Body: "You accepted a ticket on Encore. It is in My tickets:\n" + x.link("#/tickets") + "\n"})
	if tr.FromEmail != "" {
		x.mail(ctx, notify.Message{To: tr.FromEmail, Key: "transfer-" + id.String() + "-accepted", Subject: "Your ticket was accepted",
			Body: fmt.Sprintf("%s accepted the ticket you sent. It is no longer yours: its old code does not open the door.\n", toEmail)})
	}
	return tr, t, nil
}

// Of lists user's transfers, sent and received (to email).
func (x *Transfers) Of(ctx context.Context, user, email string) ([]store.Transfer, error) {
	return x.Store.Tickets.TransfersOf(ctx, user, email)
}

func (x *Transfers) link(fragment string) string { return appLink(x.PublicURL, fragment) }

// mail queues m; a failure is logged, not returned: the transfer stands and
// the fan sees it in the app.
func (x *Transfers) mail(ctx context.Context, m notify.Message) {
	queueMail(ctx, x.Mailer, x.Log, "transfer", m)
}

// appLink is the fan app's fragment at base ("" when there is no base:
// the email then carries no link).
func appLink(base, fragment string) string {
	if base == "" {
		return ""
	}
	return base + "/" + fragment
}

// queueMail queues m through mailer (nil: none); a failure is logged, not
// returned: what the email tells of stands, and the fan sees it in the app.
func queueMail(ctx context.Context, mailer notify.Mailer, log *slog.Logger, what string, m notify.Message) {
	if mailer == nil {
		return
	}
	if err := mailer.Send(ctx, m); err != nil && log != nil {
		log.Warn(what+" email not queued", "key", m.Key, "err", err)
	}
}
