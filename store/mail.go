package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// ErrNotDead refuses to resend a message that is not in the dead-letter
// list (still pending, or sent).
var ErrNotDead = errors.New("store: the message is not dead")

// MailQueue is the repository of the mail queue (mail_queue): emails to
// fans, sent by whichever process claims them, with retries and a
// dead-letter state.
type MailQueue struct{ base }

// Mail is the mail queue's repository.
func (s *Store) Mail() *MailQueue { return &MailQueue{s.base} }

// MailRow is one queued message.
type MailRow struct {
	ID            int64            `json:"id"`
	Key           string           `json:"key"`
	Recipient     string           `json:"to"`
	Subject       string           `json:"subject"`
	Status        vocab.MailStatus `json:"status"`
	Attempts      int              `json:"attempts"`
	NextAttemptAt time.Time        `json:"next_attempt_at"`
	LastError     string           `json:"last_error,omitempty"`
	CreatedAt     time.Time        `json:"created_at"`
	SentAt        *time.Time       `json:"sent_at,omitempty"`
	// Message is the message's JSON (notify.Message); lists leave it out.
	Message []byte `json:"-"`
}

const mailColumns = `id, key, recipient, subject, status, attempts, next_attempt_at, last_error, created_at, sent_at`

func scanMail(row pgx.Row, withMessage bool) (MailRow, error) {
	var m MailRow
	dest := []any{&m.ID, &m.Key, &m.Recipient, &m.Subject, &m.Status, &m.Attempts, &m.NextAttemptAt, &m.LastError, &m.CreatedAt, &m.SentAt}
	if withMessage {
		dest = append(dest, &m.Message)
	}
	err := row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return MailRow{}, ErrNotFound
	}
	return m, err
}

// Enqueue writes a message once by its key: a second call with the same key
// changes nothing and returns the first's ID (inserted false).
func (q *MailQueue) Enqueue(ctx context.Context, key, to, subject string, message []byte) (id int64, inserted bool, err error) {
	err = q.pool.QueryRow(ctx, `INSERT INTO mail_queue (key, recipient, subject, message) VALUES ($1, $2, $3, $4)
		ON CONFLICT (key) DO NOTHING RETURNING id`, key, to, subject, message).Scan(&id)
	if err == nil {
		return id, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, false, err
	}
	err = q.pool.QueryRow(ctx, `SELECT id FROM mail_queue WHERE key = $1`, key).Scan(&id)
	return id, false, err
}

// EnqueueClaimed queues a message once by its key and takes it for lease in
// the same row write, for a sender that tries it at once: a new message is
// written already claimed (its first attempt counted), so sending it costs
// this insert and the outcome's mark, not a third write to claim it. A key
// already queued is claimed as Claim would (ok false when it is sent, dead,
// held by another or not due).
func (q *MailQueue) EnqueueClaimed(ctx context.Context, key, to, subject string, message []byte,
	lease time.Duration) (MailRow, bool, error) {
	m, err := scanMail(q.pool.QueryRow(ctx, `INSERT INTO mail_queue (key, recipient, subject, message, attempts, lease_until)
		VALUES ($1, $2, $3, $4, 1, now() + $5 * interval '1 millisecond')
		ON CONFLICT (key) DO NOTHING RETURNING `+mailColumns+`, message`, key, to, subject, message, lease.Milliseconds()), true)
	if err == nil {
		return m, true, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return MailRow{}, false, err
	}
	return q.claim(ctx, `key = $2`, lease, key)
}

// Claim takes the pending message id for lease if it is due and nobody
// holds it, counting the attempt; ok is false when it is not there to
// take (sent, dead, held, or not due).
func (q *MailQueue) Claim(ctx context.Context, id int64, lease time.Duration) (m MailRow, ok bool, err error) {
	return q.claim(ctx, `id = $2`, lease, id)
}

// ClaimDue takes the pending message due longest, as Claim does; ok is
// false when none is due. Concurrent callers take different messages.
func (q *MailQueue) ClaimDue(ctx context.Context, lease time.Duration) (m MailRow, ok bool, err error) {
	return q.claim(ctx, `true`, lease)
}

func (q *MailQueue) claim(ctx context.Context, cond string, lease time.Duration, args ...any) (MailRow, bool, error) {
	row := q.pool.QueryRow(ctx, fmt.Sprintf(`UPDATE mail_queue SET attempts = attempts + 1, updated_at = now(),
		lease_until = now() + $1 * interval '1 millisecond'
		WHERE id = (SELECT id FROM mail_queue WHERE status = 'PENDING' AND next_attempt_at <= now()
			AND (lease_until IS NULL OR lease_until < now()) AND %s
			ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+mailColumns+`, message`, cond), append([]any{lease.Milliseconds()}, args...)...)
	m, err := scanMail(row, true)
	if errors.Is(err, ErrNotFound) {
		return MailRow{}, false, nil
	}
	return m, err == nil, err
}

// Queued reports whether a message of key is in the queue, whatever its
// status.
func (q *MailQueue) Queued(ctx context.Context, key string) (bool, error) {
	var queued bool
	err := q.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mail_queue WHERE key = $1)`, key).Scan(&queued)
	return queued, err
}

// InsertAttempted writes, in one row write, a message whose first attempt
// was made before it was queued: SENT when cause is empty, else PENDING and
// due at next with the attempt's error (DEAD when dead). A key already
// queued is left as it is.
func (q *MailQueue) InsertAttempted(ctx context.Context, key, to, subject string, message []byte,
	cause string, next time.Time, dead bool) error {
	status := vocab.MailSent
	switch {
	case cause == "":
		next = time.Now()
	case dead:
		status = vocab.MailDead
	default:
		status = vocab.MailPending
	}
	if len(cause) > 1000 {
		cause = cause[:1000]
	}
	_, err := q.pool.Exec(ctx, `INSERT INTO mail_queue (key, recipient, subject, message, attempts, status, last_error,
		next_attempt_at, sent_at) VALUES ($1, $2, $3, $4, 1, $5, $6, $7, CASE WHEN $5 = 'SENT' THEN now() END)
		ON CONFLICT (key) DO NOTHING`, key, to, subject, message, status, cause, next)
	return err
}

// MarkSent records the delivery of a claimed message.
func (q *MailQueue) MarkSent(ctx context.Context, id int64) error {
	_, err := q.pool.Exec(ctx, `UPDATE mail_queue SET status = 'SENT', sent_at = now(), updated_at = now(),
		lease_until = NULL, last_error = '' WHERE id = $1 AND status = 'PENDING'`, id)
	return err
}

// MarkFailed records a failed attempt: the message is due again at next,
// or DEAD when dead is set.
func (q *MailQueue) MarkFailed(ctx context.Context, id int64, cause string, next time.Time, dead bool) error {
	status := vocab.MailPending
	if dead {
		status = vocab.MailDead
	}
	if len(cause) > 1000 {
		cause = cause[:1000]
	}
	_, err := q.pool.Exec(ctx, `UPDATE mail_queue SET status = $2, last_error = $3, next_attempt_at = $4,
		lease_until = NULL, updated_at = now() WHERE id = $1 AND status = 'PENDING'`, id, status, cause, next)
	return err
}

// Get reads one message, without its content.
func (q *MailQueue) Get(ctx context.Context, id int64) (MailRow, error) {
	return scanMail(q.pool.QueryRow(ctx, `SELECT `+mailColumns+` FROM mail_queue WHERE id = $1`, id), false)
}

// List reads the messages of a status (empty: every status), newest first:
// at most limit with an ID below before (0: from the newest).
func (q *MailQueue) List(ctx context.Context, status vocab.MailStatus, before int64, limit int) ([]MailRow, error) {
	rows, err := q.pool.Query(ctx, `SELECT `+mailColumns+` FROM mail_queue
		WHERE ($1 = '' OR status = $1) AND ($2 = 0 OR id < $2) ORDER BY id DESC LIMIT $3`, string(status), before, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []MailRow{}
	for rows.Next() {
		m, err := scanMail(rows, false)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Resend puts a dead message back in the queue, due now, with its attempts
// counted afresh. A missing message is ErrNotFound; one not dead is
// ErrNotDead.
func (q *MailQueue) Resend(ctx context.Context, id int64) (MailRow, error) {
	m, err := scanMail(q.pool.QueryRow(ctx, `UPDATE mail_queue SET status = 'PENDING', attempts = 0, next_attempt_at = now(),
		lease_until = NULL, updated_at = now() WHERE id = $1 AND status = 'DEAD' RETURNING `+mailColumns, id), false)
	if errors.Is(err, ErrNotFound) {
		if _, gerr := q.Get(ctx, id); gerr == nil {
			return MailRow{}, ErrNotDead
		}
	}
	return m, err
}

// BookingMail is what a booking's emails say about its event and seats.
type BookingMail struct {
	EventTitle string
	VenueName  string
	VenueCity  string
	// TimeZone is the venue's IANA zone ("UTC" when unset).
	TimeZone string
	StartsAt time.Time
	// Sections names each section of the event by ID.
	Sections map[string]string
	// Seats labels the booking's seats by ID.
	Seats map[string]SeatLabel
	// Status is the reservation's; CancelReason what staff gave as the
	// reason of a cancellation (empty: none recorded).
	Status       vocab.ReservationStatus
	CancelReason string
	// Currency is the event's.
	Currency string
	// CardBrand and CardLast4 name the card that paid, as the capture
	// recorded it (empty before the capture, or when it named none).
	CardBrand, CardLast4 string
}

// SeatLabel is a seat as the venue's signs name it.
type SeatLabel struct {
	SectionID string
	Row       string
	Number    int
}

// BookingMail reads the event, venue and seat labels of a booking's emails.
func (q *MailQueue) BookingMail(ctx context.Context, reservationID uuid.UUID) (BookingMail, error) {
	var b BookingMail
	err := q.pool.QueryRow(ctx, `SELECT e.title, v.name, v.city, v.timezone, e.starts_at, r.status, coalesce(r.cancel_reason, ''), e.currency,
		coalesce(p.card_brand, ''), coalesce(p.card_last4, '')
		FROM reservations r JOIN events e ON e.id = r.event_id JOIN venues v ON v.id = e.venue_id
		LEFT JOIN payments p ON p.reservation_id = r.id
		WHERE r.id = $1`, reservationID).Scan(&b.EventTitle, &b.VenueName, &b.VenueCity, &b.TimeZone, &b.StartsAt, &b.Status,
		&b.CancelReason, &b.Currency, &b.CardBrand, &b.CardLast4)
	if err = orNotFound(err); err != nil {
		return BookingMail{}, err
	}
	b.Sections, b.Seats = map[string]string{}, map[string]SeatLabel{}
	rows, err := q.pool.Query(ctx, `SELECT s.id, s.name FROM sections s JOIN reservations r ON r.event_id = s.event_id WHERE r.id = $1`, reservationID)
	if err != nil {
		return BookingMail{}, err
	}
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return BookingMail{}, err
		}
		b.Sections[id] = name
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return BookingMail{}, err
	}
	rows, err = q.pool.Query(ctx, `SELECT s.id, s.section_id, s.row_label, s.number FROM seats s
		WHERE s.id IN (SELECT t.seat_id FROM tickets t WHERE t.reservation_id = $1 AND t.seat_id IS NOT NULL
			UNION SELECT s2.id FROM seats s2 WHERE s2.reservation_id = $1)`, reservationID)
	if err != nil {
		return BookingMail{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var l SeatLabel
		if err := rows.Scan(&id, &l.SectionID, &l.Row, &l.Number); err != nil {
			return BookingMail{}, err
		}
		b.Seats[id] = l
	}
	return b, rows.Err()
}
