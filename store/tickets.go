package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// TicketRow is one ticket as the booking saga issues it: one per seat, or
// one per unit of a general-admission line. SecretSealed is the ticket's own
// QR secret sealed by tickets.Keyring under the ticket's ID.
type TicketRow struct {
	ID            string
	ReservationID uuid.UUID
	EventID       string
	SectionID     string
	SeatID        string // empty for general admission
	Unit          int    // 1 for a seat; 1..quantity within a general-admission line
	UserID        string
	SecretSealed  []byte
}

// Ticket is a stored ticket.
type Ticket struct {
	TicketRow
	// Status is VALID only while the ticket is VALID and its reservation is
	// PAID; a ticket of a cancelled or refunded booking reads as REVOKED even
	// before the saga has revoked it.
	Status    vocab.TicketStatus
	IssuedAt  time.Time
	RevokedAt *time.Time
	// DeviceID is the device the ticket's wallet was last opened on (empty:
	// never), and Generation the device key's generation there
	// (tickets.DeviceKey); 0 until a wallet is first opened.
	DeviceID   string
	Generation int64
	// Place and Event are the ticket's seat or standing area as the venue
	// names it and its event: set on a fan's list (TicketsOfUser) only.
	Place Place
	Event EventRef
	// Attendee is the name given for this ticket at checkout (the event's
	// first per-ticket text question), on a fan's list only; "" if none.
	Attendee string
}

// TicketConflictError says an insert met another ticket that is not the
// same issue replayed: the seat already has another valid ticket, or the
// ticket ID is taken by a different ticket. Duplicate delivery is harmless (docs/ARCHITECTURE.md rule 7); this is
// a bug or a double sale, never a retry.
type TicketConflictError struct{ Constraint string }

func (e *TicketConflictError) Error() string {
	return "store: ticket conflicts with another ticket (" + e.Constraint + ")"
}

// ErrNotPaid: tickets were asked for a booking that is not PAID (never
// sold, or cancelled, refunded or released first). Nothing was issued.
var ErrNotPaid = errors.New("store: the booking is not paid")

// InsertTickets issues tickets. It is idempotent: a row whose (reservation,
// section, seat, unit) already has a ticket is skipped, whatever its ID, so
// a saga step that is retried, even with freshly generated IDs and secrets,
// leaves exactly one ticket per seat or unit. Read the issued tickets back
// with TicketsOfReservation.
//
// Only a PAID booking gets tickets: its reservation is share-locked and
// checked in the transaction that inserts, and the insert itself joins on
// it being PAID, so a cancel (CancelPaid locks the row FOR UPDATE, then
// revokes) either commits first and the insert is refused (ErrNotPaid), or
// waits and revokes what was issued. A ticket of a booking that was never
// paid cannot be written.
func (s *Tickets) InsertTickets(ctx context.Context, rows []TicketRow) error {
	return s.issue(ctx, rows, nil)
}

// IssueSale issues a paid booking's tickets (as InsertTickets) and numbers
// its invoice (as Bookings.IssueInvoice; none for a booking that gets none)
// in one transaction: the saga's issue step commits once, not twice. A
// retry after either committed adds nothing.
func (s *Tickets) IssueSale(ctx context.Context, id uuid.UUID, rows []TicketRow) error {
	return s.issue(ctx, rows, func(tx pgx.Tx) error {
		if err := issueInvoiceTx(ctx, tx, id); err != nil && !errors.Is(err, ErrNoInvoice) {
			return err
		}
		return nil
	})
}

// issue inserts rows and then runs also, if any, in the same transaction.
func (s *Tickets) issue(ctx context.Context, rows []TicketRow, also func(pgx.Tx) error) error {
	if len(rows) == 0 && also == nil {
		return nil
	}
	var (
		ids, events, sections, seats, users = make([]string, len(rows)), make([]string, len(rows)),
			make([]string, len(rows)), make([]string, len(rows)), make([]string, len(rows))
		reservations = make([]uuid.UUID, len(rows))
		units        = make([]int32, len(rows))
		secrets      = make([][]byte, len(rows))
	)
	for i, r := range rows {
		if r.ID == "" || r.EventID == "" || r.SectionID == "" || r.UserID == "" || len(r.SecretSealed) == 0 {
			return &InvalidError{Field: "tickets", Message: fmt.Sprintf("row %d is incomplete", i)}
		}
		unit := r.Unit
		if unit == 0 {
			unit = 1
		}
		ids[i], reservations[i], events[i], sections[i], seats[i] = r.ID, r.ReservationID, r.EventID, r.SectionID, r.SeatID
		units[i], users[i], secrets[i] = int32(unit), r.UserID, r.SecretSealed
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if len(rows) == 0 {
			return also(tx)
		}
		// Locked in ID order, as every reservation lock is taken: two issues
		// sharing bookings never wait on each other in a cycle.
		lrows, err := tx.Query(ctx, `SELECT id FROM reservations WHERE id = ANY($1::uuid[]) AND status = 'PAID'
			ORDER BY id FOR SHARE`, reservations)
		if err != nil {
			return err
		}
		paid, err := pgx.CollectRows(lrows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return err
		}
		for _, r := range reservations {
			if !slices.Contains(paid, r) {
				return ErrNotPaid
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO tickets (id, reservation_id, event_id, section_id, seat_id, unit, user_id, secret_sealed)
			SELECT t.id, t.res, t.ev, t.sec, NULLIF(t.seat, ''), t.unit, t.usr, t.secret
			FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::bytea[])
			     AS t (id, res, ev, sec, seat, unit, usr, secret)
			JOIN reservations r ON r.id = t.res AND r.status = 'PAID'
			ON CONFLICT (reservation_id, section_id, seat_id, unit, holder_seq) DO NOTHING`,
			ids, reservations, events, sections, seats, units, users, secrets)
		if err != nil || also == nil {
			return err
		}
		return also(tx)
	})
	switch code, constraint := pgCode(err); {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotPaid):
		return err
	case code == pgUniqueViolation && constraint == "invoices_reservation_id_kind_key":
		return ErrBusy // a racing issue numbered the invoice: the retry finds it
	case code == pgUniqueViolation:
		return &TicketConflictError{Constraint: constraint}
	case code == pgForeignKeyViolation:
		return &InvalidError{Field: "tickets", Message: "unknown reservation, event, section or seat (" + constraint + ")"}
	case transient(err):
		return ErrBusy
	default:
		return err
	}
}

const pgForeignKeyViolation = "23503"

const ticketColumns = `t.id, t.reservation_id, t.event_id, t.section_id, coalesce(t.seat_id, ''), t.unit, t.user_id,
	t.secret_sealed, CASE WHEN t.status IN ('VALID', 'LISTED') AND r.status = 'PAID' THEN t.status WHEN t.status = 'TRANSFERRED' THEN 'TRANSFERRED' ELSE 'REVOKED' END,
	t.issued_at, t.revoked_at, coalesce(t.device_id, ''), t.key_generation`

func scanTicket(row pgx.CollectableRow) (Ticket, error) {
	var t Ticket
	err := row.Scan(&t.ID, &t.ReservationID, &t.EventID, &t.SectionID, &t.SeatID, &t.Unit, &t.UserID,
		&t.SecretSealed, &t.Status, &t.IssuedAt, &t.RevokedAt, &t.DeviceID, &t.Generation)
	return t, err
}

// listedTicketColumns are ticketColumns and what a fan's list shows beside
// them: the place as the venue names it and the event (a list's read, not
// the code's: a ticket's QR refresh reads ticketColumns alone). They need
// sections sec, seats st (left), events e and venues v joined.
const listedTicketColumns = ticketColumns + `, sec.name, coalesce(st.row_label, ''), coalesce(st.number, 0),
	e.title, e.starts_at, v.timezone, v.name, v.city, coalesce(` + attendeeNameSQL + `, '')`

func scanListedTicket(row pgx.CollectableRow) (Ticket, error) {
	var t Ticket
	err := row.Scan(&t.ID, &t.ReservationID, &t.EventID, &t.SectionID, &t.SeatID, &t.Unit, &t.UserID,
		&t.SecretSealed, &t.Status, &t.IssuedAt, &t.RevokedAt, &t.DeviceID, &t.Generation, &t.Place.Section, &t.Place.Row, &t.Place.Number,
		&t.Event.Title, &t.Event.StartsAt, &t.Event.Timezone, &t.Event.VenueName, &t.Event.VenueCity, &t.Attendee)
	t.Event.ID = t.EventID
	return t, err
}

// GetTicket returns a ticket to its owner; anyone else's ticket, like a
// missing one, is ErrNotFound.
func (s *Tickets) GetTicket(ctx context.Context, ticketID, userID string) (Ticket, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+ticketColumns+` FROM tickets t JOIN reservations r ON r.id = t.reservation_id
		WHERE t.id = $1 AND t.user_id = $2`, ticketID, userID)
	if err != nil {
		return Ticket{}, err
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTicket)
	if errors.Is(err, pgx.ErrNoRows) {
		return Ticket{}, ErrNotFound
	}
	return t, err
}

// ErrTicketRevoked: the ticket belongs to a refunded or cancelled booking;
// no device may hold it.
var ErrTicketRevoked = errors.New("store: the ticket was revoked")

// BindDevice gives a valid ticket's codes to deviceID, for its owner only
// (anyone else's ticket, like a missing one, is ErrNotFound; a revoked one
// ErrTicketRevoked). The first device keeps generation 1; another device
// takes the next generation, so the last device's key stops making accepted
// codes; the same device again changes nothing. key_changed_at is the
// statement's clock, which the manifest's delta export looks for.
func (s *Tickets) BindDevice(ctx context.Context, ticketID, userID, deviceID string) (Ticket, error) {
	rows, err := s.pool.Query(ctx, `WITH moved AS (
			UPDATE tickets t SET device_id = $3, key_generation = t.key_generation + 1, key_changed_at = statement_timestamp()
			FROM reservations r
			WHERE t.id = $1 AND t.user_id = $2 AND r.id = t.reservation_id AND t.status = 'VALID' AND r.status = 'PAID'
			  AND t.device_id IS DISTINCT FROM $3
			RETURNING t.*)
		SELECT `+ticketColumns+` FROM moved t JOIN reservations r ON r.id = t.reservation_id
		UNION ALL
		SELECT `+ticketColumns+` FROM tickets t JOIN reservations r ON r.id = t.reservation_id
		WHERE t.id = $1 AND t.user_id = $2 AND NOT EXISTS (SELECT 1 FROM moved)`, ticketID, userID, deviceID)
	if err != nil {
		return Ticket{}, err
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTicket)
	if errors.Is(err, pgx.ErrNoRows) {
		return Ticket{}, ErrNotFound
	}
	if err == nil && t.Status != vocab.TicketValid {
		return t, ErrTicketRevoked
	}
	return t, err
}

// TicketsOfReservation lists a booking's tickets in seat order.
func (s *Tickets) TicketsOfReservation(ctx context.Context, reservationID uuid.UUID) ([]Ticket, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+ticketColumns+` FROM tickets t JOIN reservations r ON r.id = t.reservation_id
		WHERE t.reservation_id = $1 ORDER BY t.section_id, t.seat_id, t.unit`, reservationID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanTicket)
}

// RevokeTickets revokes every valid ticket of a reservation (cancelled or
// refunded) and returns their IDs; revoking twice revokes nothing more.
// revoked_at is the statement's clock, the closest to the commit that the
// manifest's delta export looks for. A ticket holds one revocation (its
// status and revoked_at), so a second one could only overwrite the first:
// the statement refuses to touch a ticket that carries one, and the audit
// (Holds.Audit, TicketsRevokedTwice) counts any that shows a rewrite.
func (s *Tickets) RevokeTickets(ctx context.Context, reservationID uuid.UUID) ([]string, error) {
	var ids []string
	err := s.tx(ctx, func(tx pgx.Tx) (err error) {
		ids, err = revokeLocked(ctx, tx, reservationID)
		return err
	})
	if transient(err) {
		return nil, ErrBusy
	}
	return ids, err
}

// revokeLocked is the one statement that revokes a reservation's valid
// tickets, inside the caller's transaction (RevokeTickets says why it
// reads the statement's clock and never touches a revoked ticket).
func revokeLocked(ctx context.Context, tx pgx.Tx, reservationID uuid.UUID) ([]string, error) {
	// A listed ticket's listing ends with it: a buyer holding it finds the
	// ticket no longer LISTED and cannot be sold it.
	if _, err := tx.Exec(ctx, `UPDATE resale_listings l SET status = 'WITHDRAWN', ended_at = now(), reservation_id = NULL
		FROM tickets t WHERE t.id = l.ticket_id AND t.reservation_id = $1 AND t.status = 'LISTED' AND l.status = 'ACTIVE'`,
		reservationID); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `UPDATE tickets SET status = 'REVOKED', revoked_at = clock_timestamp()
		WHERE reservation_id = $1 AND status IN ('VALID', 'LISTED') AND revoked_at IS NULL RETURNING id`, reservationID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ManifestSnapshot is what the venue gate's manifest carries, read in one
// repeatable-read snapshot.
type ManifestSnapshot struct {
	// AsOf is the database's clock at the snapshot: the next delta export
	// starts from it.
	AsOf          time.Time
	EventStartsAt time.Time
	// Reentry is the event's re-entry rule, for the gates.
	Reentry bool
	// Valid are the valid tickets of paid bookings (issued after since, when
	// since is set), with their sealed secrets, and the tickets handed on to
	// another fan (Status TRANSFERRED), so a gate can say so when their old
	// codes are shown.
	Valid []ManifestTicket
	// Revoked are tickets that must not enter: revoked after since, plus any
	// ticket still marked valid whose booking is no longer paid.
	Revoked []string
}

// ManifestTicket is a ticket as the gate's manifest lists it, with what
// door staff look a fan up by when the code will not scan (a dead phone): the
// booking and the fan it was made for.
type ManifestTicket struct {
	Ticket
	// BookingCode is the reservation's ID, as the fan's confirmation shows it.
	BookingCode string
	// Attendee is the fan the booking names: the email the booking was made
	// with, else the user ID (the platform keeps no other name).
	Attendee string
}

// ManifestTickets reads an event's tickets for the manifest. A zero since
// is a full export (Revoked holds only tickets of unpaid bookings); otherwise
// a delta since that instant.
func (s *Tickets) ManifestTickets(ctx context.Context, eventID string, since time.Time) (ManifestSnapshot, error) {
	var snap ManifestSnapshot
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '60s'`); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `SELECT now(), starts_at, reentry FROM events WHERE id = $1`, eventID).Scan(&snap.AsOf, &snap.EventStartsAt, &snap.Reentry)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+ticketColumns+`, coalesce(`+attendeeNameSQL+`, nullif(r.fan_email, ''), t.user_id)
			FROM tickets t JOIN reservations r ON r.id = t.reservation_id
			WHERE t.event_id = $1 AND t.status IN ('VALID', 'TRANSFERRED', 'LISTED') AND r.status = 'PAID'
			  AND ($2::timestamptz IS NULL OR t.issued_at > $2 OR t.key_changed_at > $2 OR t.transferred_at > $2 OR t.listed_at > $2)
			ORDER BY t.id`, eventID, nullTime(since))
		if err != nil {
			return err
		}
		snap.Valid, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ManifestTicket, error) {
			var t ManifestTicket
			err := row.Scan(&t.ID, &t.ReservationID, &t.EventID, &t.SectionID, &t.SeatID, &t.Unit, &t.UserID,
				&t.SecretSealed, &t.Status, &t.IssuedAt, &t.RevokedAt, &t.DeviceID, &t.Generation, &t.Attendee)
			t.BookingCode = t.ReservationID.String()
			return t, err
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT t.id FROM tickets t JOIN reservations r ON r.id = t.reservation_id
			WHERE t.event_id = $1 AND (
			      (t.status = 'REVOKED' AND $2::timestamptz IS NOT NULL AND t.revoked_at > $2)
			   OR (t.status = 'VALID' AND r.status <> 'PAID'))
			ORDER BY t.id`, eventID, nullTime(since))
		if err != nil {
			return err
		}
		snap.Revoked, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return snap, err
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
