package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// Transfer is one offer of a ticket to someone else.
type Transfer struct {
	ID          uuid.UUID
	TicketID    string
	EventID     string
	FromUser    string
	FromEmail   string
	ToEmail     string
	Status      vocab.TransferStatus
	CreatedAt   time.Time
	ExpiresAt   time.Time
	EndedAt     *time.Time
	ToUser      string
	NewTicketID string
}

// Errors of transfers.
var (
	// ErrTransferNotPending: the transfer was accepted, cancelled or has
	// expired.
	ErrTransferNotPending = errors.New("store: the transfer is no longer pending")
	// ErrTicketNotTransferable: the ticket is not valid (revoked, already
	// transferred, its booking not paid) or is already offered.
	ErrTicketNotTransferable = errors.New("store: the ticket cannot be transferred now")
	// ErrWrongRecipient: the transfer is addressed to another email.
	ErrWrongRecipient = errors.New("store: the transfer is for another email address")
	// ErrTransferLimit: the ticket or the fan has passed the transfer limits.
	ErrTransferLimit = errors.New("store: transfer limit reached")
)

// TransferLimits bound transfers against touting: how many times one seat
// may change hands, and how many transfers a fan may have open at once.
type TransferLimits struct {
	PerTicket, OpenPerFan int
}

const transferColumns = `x.id, x.ticket_id, x.event_id, x.from_user, x.from_email, x.to_email, x.status, x.created_at, x.expires_at, x.ended_at,
	coalesce(x.to_user, ''), coalesce(x.new_ticket_id, '')`

func scanTransfer(row pgx.CollectableRow) (Transfer, error) {
	var x Transfer
	err := row.Scan(&x.ID, &x.TicketID, &x.EventID, &x.FromUser, &x.FromEmail, &x.ToEmail, &x.Status, &x.CreatedAt, &x.ExpiresAt, &x.EndedAt,
		&x.ToUser, &x.NewTicketID)
	return x, err
}

// CreateTransfer offers fromUser's valid ticket to toEmail until expiresAt.
// Another fan's ticket, like a missing one, is ErrNotFound.
func (s *Tickets) CreateTransfer(ctx context.Context, id uuid.UUID, ticketID, fromUser, fromEmail, toEmail string, expiresAt time.Time, lim TransferLimits) (Transfer, error) {
	var x Transfer
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var status, resStatus, eventID string
		var seq int
		err := tx.QueryRow(ctx, `SELECT t.status, r.status, t.event_id, t.holder_seq FROM tickets t JOIN reservations r ON r.id = t.reservation_id
			WHERE t.id = $1 AND t.user_id = $2 FOR UPDATE OF t`, ticketID, fromUser).Scan(&status, &resStatus, &eventID, &seq)
		if err = orNotFound(err); err != nil {
			return err
		}
		if status != string(vocab.TicketValid) || resStatus != string(vocab.ReservationPaid) {
			return ErrTicketNotTransferable
		}
		if lim.PerTicket > 0 && seq >= lim.PerTicket {
			return ErrTransferLimit
		}
		if lim.OpenPerFan > 0 {
			var open int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM ticket_transfers WHERE from_user = $1 AND status = 'PENDING' AND expires_at > now()`,
				fromUser).Scan(&open); err != nil {
				return err
			}
			if open >= lim.OpenPerFan {
				return ErrTransferLimit
			}
		}
		// A lapsed offer of this ticket ends here, so it does not block a new one.
		if _, err := tx.Exec(ctx, `UPDATE ticket_transfers SET status = 'EXPIRED', ended_at = now()
			WHERE ticket_id = $1 AND status = 'PENDING' AND expires_at <= now()`, ticketID); err != nil {
			return err
		}
		// A pending offer of the ticket leaves no row inserted: it is already offered.
		x, err = queryOne(ctx, tx, ErrTicketNotTransferable, scanTransfer, `INSERT INTO ticket_transfers AS x
			(id, ticket_id, event_id, from_user, from_email, to_email, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (ticket_id) WHERE status = 'PENDING' DO NOTHING
			RETURNING `+transferColumns, id, ticketID, eventID, fromUser, fromEmail, toEmail, expiresAt)
		return err
	})
	return x, err
}

// lockTransfer reads transfer id under its row lock; ErrNotFound when there
// is none.
func lockTransfer(ctx context.Context, tx pgx.Tx, id uuid.UUID) (Transfer, error) {
	return queryOne(ctx, tx, ErrNotFound, scanTransfer, `SELECT `+transferColumns+` FROM ticket_transfers x WHERE x.id = $1 FOR UPDATE`, id)
}

// CancelTransfer withdraws fromUser's pending transfer; another fan's, like
// a missing one, is ErrNotFound.
func (s *Tickets) CancelTransfer(ctx context.Context, id uuid.UUID, fromUser string) (Transfer, error) {
	var x Transfer
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if x, err = lockTransfer(ctx, tx, id); err != nil {
			return err
		}
		if x.FromUser != fromUser {
			return ErrNotFound
		}
		if x.Status != vocab.TransferPending {
			return ErrTransferNotPending
		}
		return tx.QueryRow(ctx, `UPDATE ticket_transfers SET status = 'CANCELLED', ended_at = now() WHERE id = $1
			RETURNING status, ended_at`, id).Scan(&x.Status, &x.EndedAt)
	})
	return x, err
}

// AcceptTransfer hands the transfer's ticket to toUser, signed in with
// toEmail, in one transaction: the old ticket becomes TRANSFERRED (with
// revoked_at, which the gate's next manifest delta looks for) and newRow
// (its ID, user and sealed secret; the place is the old ticket's) is
// issued. A transfer not addressed to toEmail is ErrWrongRecipient; one
// ended or lapsed ErrTransferNotPending; a ticket no longer valid
// ErrTicketNotTransferable.
func (s *Tickets) AcceptTransfer(ctx context.Context, id uuid.UUID, toUser, toEmail string, newRow TicketRow) (Transfer, Ticket, error) {
	var x Transfer
	var t Ticket
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if x, err = lockTransfer(ctx, tx, id); err != nil {
			return err
		}
		if !strings.EqualFold(x.ToEmail, toEmail) {
			return ErrWrongRecipient
		}
		if x.Status != vocab.TransferPending || !x.ExpiresAt.After(time.Now()) {
			return ErrTransferNotPending
		}
		// The old ticket, locked: a scan's revocation or a refund waits, and
		// sees it TRANSFERRED with the new one VALID, never both valid.
		tag, err := tx.Exec(ctx, `UPDATE tickets t SET status = 'TRANSFERRED', transferred_at = statement_timestamp(),
				revoked_at = statement_timestamp()
			FROM reservations r WHERE t.id = $1 AND r.id = t.reservation_id AND t.status = 'VALID' AND r.status = 'PAID'`, x.TicketID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return ErrTicketNotTransferable
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tickets (id, reservation_id, event_id, section_id, seat_id, unit, user_id, secret_sealed, holder_seq)
			SELECT $2, reservation_id, event_id, section_id, seat_id, unit, $3, $4, holder_seq + 1 FROM tickets WHERE id = $1`,
			x.TicketID, newRow.ID, toUser, newRow.SecretSealed); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE ticket_transfers SET status = 'ACCEPTED', ended_at = now(), to_user = $2, new_ticket_id = $3
			WHERE id = $1 RETURNING status, ended_at`, id, toUser, newRow.ID).Scan(&x.Status, &x.EndedAt); err != nil {
			return err
		}
		x.ToUser, x.NewTicketID = toUser, newRow.ID
		rows, err := tx.Query(ctx, `SELECT `+ticketColumns+` FROM tickets t JOIN reservations r ON r.id = t.reservation_id WHERE t.id = $1`, newRow.ID)
		if err != nil {
			return err
		}
		t, err = pgx.CollectExactlyOneRow(rows, scanTicket)
		return err
	})
	return x, t, err
}

// TransfersOf lists the transfers user sent or that were sent to email,
// newest first (at most 100), lapsed offers shown EXPIRED.
func (s *Tickets) TransfersOf(ctx context.Context, user, email string) ([]Transfer, error) {
	rows, err := s.pool.Query(ctx, `SELECT x.id, x.ticket_id, x.event_id, x.from_user, x.from_email, x.to_email,
			CASE WHEN x.status = 'PENDING' AND x.expires_at <= now() THEN 'EXPIRED' ELSE x.status END,
			x.created_at, x.expires_at, x.ended_at, coalesce(x.to_user, ''), coalesce(x.new_ticket_id, '')
		FROM ticket_transfers x WHERE x.from_user = $1 OR ($2 <> '' AND lower(x.to_email) = lower($2))
		ORDER BY x.created_at DESC LIMIT 100`, user, email)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanTransfer)
}

// Transferred says whether a ticket of the booking was handed to someone
// else (by transfer or resale), or is offered or listed for resale: its
// buyer may no longer cancel it for a refund.
func (s *Tickets) Transferred(ctx context.Context, reservationID uuid.UUID) (bool, error) {
	var yes bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tickets WHERE reservation_id = $1 AND status IN ('TRANSFERRED', 'LISTED'))
		OR EXISTS (SELECT 1 FROM ticket_transfers x JOIN tickets t ON t.id = x.ticket_id
			WHERE t.reservation_id = $1 AND x.status = 'PENDING' AND x.expires_at > now())`, reservationID).Scan(&yes)
	return yes, err
}
