package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

// BookingInfo is what the saga adopts from a committed hold.
type BookingInfo struct {
	ID        uuid.UUID
	UserID    string
	EventID   string
	Status    vocab.ReservationStatus
	ExpiresAt time.Time
	Total     money.Money
	// CancelBy is the last moment a paid booking may be cancelled with a
	// refund: the event's deadline for seats, the first check-in for stays,
	// whichever comes first.
	CancelBy time.Time
	Extended bool
	// StayFreeUntil is when the stays' free cancellation ends (the
	// property's free_cancel_days before the first check-in); zero without
	// stays. From then on, cancelling costs StayPenalty.
	StayFreeUntil time.Time
	// StayPenalty is the first night of each stay (its price times its
	// rooms), in the booking's currency.
	StayPenalty int64
	// Resale: the booking buys resale listings. A resale purchase is final
	// (CancelBy is its creation) and its saga pays the sellers.
	Resale bool
}

// LoadBooking reads a reservation for the saga.
func (s *Bookings) LoadBooking(ctx context.Context, id uuid.UUID) (BookingInfo, error) {
	var b BookingInfo
	var found bool
	bt := &pgx.Batch{}
	queueLoadBooking(bt, id, &b, &found)
	if err := s.pool.SendBatch(ctx, bt).Close(); err != nil {
		return BookingInfo{}, err
	}
	if !found {
		return BookingInfo{}, ErrNotFound
	}
	return b, nil
}

// queueLoadBooking queues LoadBooking's read of reservation id into *b,
// and whether it exists into *found: a missing one is no error of the
// batch, which would cost the connection its prepared statements.
func queueLoadBooking(bt *pgx.Batch, id uuid.UUID, b *BookingInfo, found *bool) {
	// A hotel-only booking has no event, and a package may be cancelled
	// while both parts allow it: the event's deadline for its seats, the
	// first check-in for its stays (least ignores the missing one). Past the
	// stays' free window (the property's days before the first check-in)
	// the first night of each stay is kept. A walked night's original row
	// (live false) keeps the price the guest paid; its replacement costs 0.
	bt.Queue(`WITH x AS (SELECT EXISTS (SELECT 1 FROM reservation_items i
			WHERE i.reservation_id = $1 AND i.listing_id IS NOT NULL) AS resale)
		SELECT r.id, r.user_id, coalesce(r.event_id, ''), r.status, r.expires_at, r.total, r.currency,
		CASE WHEN x.resale THEN r.created_at ELSE
		least(coalesce(e.cancellation_deadline, e.starts_at - make_interval(hours => e.cancel_cutoff_hours)),
		      (SELECT min(n.checkin)::timestamp AT TIME ZONE 'UTC' FROM reservation_nights n WHERE n.reservation_id = r.id)) END,
		r.extended,
		(SELECT min(n.checkin - p.free_cancel_days)::timestamp AT TIME ZONE 'UTC'
		 FROM reservation_nights n JOIN properties p ON p.id = n.property_id WHERE n.reservation_id = r.id),
		(SELECT coalesce(sum(n.price * n.rooms), 0)::bigint FROM reservation_nights n
		 WHERE n.reservation_id = r.id AND n.night = n.checkin AND n.price > 0), x.resale
		FROM x, reservations r LEFT JOIN events e ON e.id = r.event_id WHERE r.id = $1`, id).QueryRow(func(row pgx.Row) error {
		var status string
		var freeUntil *time.Time
		err := row.Scan(&b.ID, &b.UserID, &b.EventID, &status, &b.ExpiresAt, &b.Total.Amount, &b.Total.Currency, &b.CancelBy,
			&b.Extended, &freeUntil, &b.StayPenalty, &b.Resale)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		*found = err == nil
		if freeUntil != nil {
			b.StayFreeUntil = *freeUntil
		}
		b.Status = vocab.ReservationStatus(status)
		return err
	})
}

// ExtendHold moves a pending hold's expiry by d, once (the 3-D Secure
// extension). It returns the expiry in force afterwards.
func (s *Holds) ExtendHold(ctx context.Context, id uuid.UUID, d time.Duration) (time.Time, error) {
	var at time.Time
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var status string
		var extended, expired bool
		if err := tx.QueryRow(ctx, `SELECT status, extended, expires_at <= now(), expires_at FROM reservations WHERE id = $1 FOR UPDATE`, id).
			Scan(&status, &extended, &expired, &at); err != nil {
			return err
		}
		if status != string(vocab.ReservationPending) || expired || extended {
			return nil
		}
		return tx.QueryRow(ctx, `UPDATE reservations SET expires_at = expires_at + make_interval(secs => $2), extended = true
			WHERE id = $1 RETURNING expires_at`, id, d.Seconds()).Scan(&at)
	})
	return at, err
}

// SavePayment records the booking's intent and its status.
func (s *Bookings) SavePayment(ctx context.Context, id uuid.UUID, intentID string, amount money.Money, status vocab.PaymentStatus, attempts int) error {
	var intent *string
	if intentID != "" {
		intent = &intentID
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO payments (reservation_id, intent_id, amount, currency, status, attempts)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (reservation_id) DO UPDATE SET intent_id = coalesce(EXCLUDED.intent_id, payments.intent_id),
			-- A late answer of the authorisation step never takes back what
			-- the saga already settled (captured, voided, refunded).
			status = CASE WHEN payments.status IN ('CAPTURED', 'VOIDED', 'REFUNDED') THEN payments.status ELSE EXCLUDED.status END,
			attempts = greatest(payments.attempts, EXCLUDED.attempts), updated_at = now()`,
		id, intent, amount.Amount, amount.Currency, string(status), attempts)
	return err
}

// SetPaymentStatus moves the booking's payment to status (and records the
// refund when there is one).
func (s *Bookings) SetPaymentStatus(ctx context.Context, id uuid.UUID, status vocab.PaymentStatus, refundID string) error {
	var refund *string
	if refundID != "" {
		refund = &refundID
	}
	_, err := s.pool.Exec(ctx, `UPDATE payments SET status = $2, refund_id = coalesce($3, refund_id), updated_at = now()
		WHERE reservation_id = $1`, id, string(status), refund)
	return err
}

// RecordCapture marks the booking's payment CAPTURED with the card that
// paid (brand and last four as the capture's answer names them; empty ones
// leave what is recorded), in the step's one write.
func (s *Bookings) RecordCapture(ctx context.Context, id uuid.UUID, cardBrand, cardLast4 string) error {
	_, err := s.pool.Exec(ctx, `UPDATE payments SET status = $2, card_brand = coalesce(nullif($3, ''), card_brand),
		card_last4 = coalesce(nullif($4, ''), card_last4), updated_at = now()
		WHERE reservation_id = $1`, id, string(vocab.PaymentCaptured), cardBrand, cardLast4)
	return err
}

// FlagPayment records why a booking failed or needs a person (a mismatch,
// a refusal, declines to the limit). A booking without a payment yet gets a
// FAILED payment row carrying the reason.
func (s *Bookings) FlagPayment(ctx context.Context, id uuid.UUID, reason string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO payments (reservation_id, amount, currency, status, flagged)
		SELECT id, total, currency, 'FAILED', $2 FROM reservations WHERE id = $1
		ON CONFLICT (reservation_id) DO UPDATE SET flagged = $2, updated_at = now()`, id, reason)
	return err
}

// BookingByIntent finds the booking a provider intent belongs to, and the
// payment's status as recorded.
func (s *Bookings) BookingByIntent(ctx context.Context, intentID string) (uuid.UUID, vocab.PaymentStatus, error) {
	var id uuid.UUID
	var status string
	err := s.pool.QueryRow(ctx, `SELECT reservation_id, status FROM payments WHERE intent_id = $1`, intentID).Scan(&id, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.UUID{}, "", ErrNotFound
	}
	return id, vocab.PaymentStatus(status), err
}

// ConfirmSale turns this hold, and only this hold, into a sale: the
// reservation row is locked first; a hold that is no longer pending or has
// expired is refused (ok false) and nothing changes. A hold whose nights are
// no longer held is ErrUnsellable, and nothing changes either: the seats and
// the stays are sold together or not at all.
func (s *Bookings) ConfirmSale(ctx context.Context, id uuid.UUID) (bool, error) {
	ok, _, err := s.ConfirmSaleTimed(ctx, id)
	return ok, err
}

// ConfirmSaleTimed is ConfirmSale that also returns, when this call made
// the sale, how long after its checkout began (zero on a retried confirm,
// or without a checkout), read in the same statement that sells.
func (s *Bookings) ConfirmSaleTimed(ctx context.Context, id uuid.UUID) (bool, time.Duration, error) {
	ok := false
	var sinceCheckout time.Duration
	err := s.tx(ctx, func(tx pgx.Tx) error {
		// The event's row is share-locked before the reservation's, in the
		// order CancelEvent locks them: a sale commits before the event's
		// cancellation (which then refunds it) or sees it and is refused.
		var cancelled bool
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT e.status = 'CANCELLED' FROM events e
			WHERE e.id = (SELECT event_id FROM reservations WHERE id = $1) FOR KEY SHARE OF e), false)`, id).Scan(&cancelled); err != nil {
			return err
		}
		var status string
		var expired bool
		if err := tx.QueryRow(ctx, `SELECT status, expires_at <= now() FROM reservations WHERE id = $1 FOR UPDATE`, id).
			Scan(&status, &expired); err != nil {
			return err
		}
		if status == string(vocab.ReservationPaid) {
			ok = true // a retried confirm
			return nil
		}
		if status != string(vocab.ReservationPending) || expired {
			return nil
		}
		if cancelled {
			// A hold taken in the instant before the cancellation committed:
			// it is given back now, so the saga's compensation finds it ended.
			_, err := endLocked(ctx, tx, id, vocab.ReservationCancelled)
			return err
		}
		if ok, err := staysSellable(ctx, tx, id); err != nil || !ok {
			if err == nil {
				err = ErrUnsellable
			}
			return err
		}
		var waited float64
		if err := tx.QueryRow(ctx, `UPDATE reservations SET status = 'PAID', ended_at = now() WHERE id = $1
			RETURNING coalesce((SELECT extract(epoch FROM now() - p.created_at) FROM payments p WHERE p.reservation_id = $1), 0)`,
			id).Scan(&waited); err != nil {
			return err
		}
		sinceCheckout = time.Duration(waited * float64(time.Second))
		// The sale changes no seat's availability (held and sold are both
		// taken), so it writes no inventory.changed row: a viewer's map shows
		// the seat taken either way, and the section's next change or a
		// fresh snapshot (2 s in the cache) shows it sold. Two row writes
		// fewer a booking (the outbox row and the relay's mark).
		batch := &pgx.Batch{}
		batch.Queue(`UPDATE seats SET status = 'SOLD', version = version + 1 WHERE reservation_id = $1 AND status = 'HELD'`, id)
		queueSellStays(batch, id)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		if err := sellListings(ctx, tx, id); err != nil {
			return err
		}
		ok = true
		return nil
	})
	if transient(err) {
		return false, 0, ErrBusy
	}
	return ok, sinceCheckout, err
}

// CancelPaid undoes a sale (the fan cancelled within policy, or a capture
// could never succeed): reservation CANCELLED, seats back, tickets revoked.
// A booking already cancelled is a no-op.
func (s *Bookings) CancelPaid(ctx context.Context, id uuid.UUID) (Ended, error) {
	var ended Ended
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var status string
		if err := tx.QueryRow(ctx, `SELECT status FROM reservations WHERE id = $1 FOR UPDATE`, id).Scan(&status); err != nil {
			return err
		}
		if status == string(vocab.ReservationCancelled) {
			return nil
		}
		if status != string(vocab.ReservationPaid) {
			return ErrNotPending
		}
		if _, err := revokeLocked(ctx, tx, id); err != nil {
			return err
		}
		var err error
		ended, err = endLocked(ctx, tx, id, vocab.ReservationCancelled, vocab.ReservationPaid)
		return err
	})
	return ended, err
}

// Unit is one ticket's worth of a booking.
type Unit struct {
	SectionID string
	SeatID    string
	Unit      int
}

// BookingUnits lists the units of a paid booking, one per future ticket.
func (s *Bookings) BookingUnits(ctx context.Context, id uuid.UUID) ([]Unit, error) {
	rows, err := s.pool.Query(ctx, `SELECT section_id, coalesce(seat_id, ''), quantity FROM reservation_items
		WHERE reservation_id = $1 AND live ORDER BY id`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Unit
	for rows.Next() {
		var sec, seat string
		var qty int
		if err := rows.Scan(&sec, &seat, &qty); err != nil {
			return nil, err
		}
		for u := 1; u <= qty; u++ {
			out = append(out, Unit{SectionID: sec, SeatID: seat, Unit: u})
		}
	}
	return out, rows.Err()
}

// FanEmail is the email address the fan's token carried when the
// reservation was created; empty when it carried none.
func (s *Bookings) FanEmail(ctx context.Context, id uuid.UUID) (string, error) {
	var email *string
	err := s.pool.QueryRow(ctx, `SELECT fan_email FROM reservations WHERE id = $1`, id).Scan(&email)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil || email == nil {
		return "", err
	}
	return *email, nil
}

// BookingMailKey is the mail-queue key of the booking's one message of kind
// (a resend adds a suffix of its own).
func BookingMailKey(id uuid.UUID, kind string) string { return id.String() + "-" + kind }

// Notified reports whether a notification of kind went out for the booking:
// its log line. A confirmation sent by its retried step has no log line: its
// row in the mail queue (BookingMailKey) is its record.
func (s *Bookings) Notified(ctx context.Context, id uuid.UUID, kind string) (bool, error) {
	var done bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM notification_log WHERE reservation_id = $1 AND kind = $2 AND NOT resend)`,
		id, kind).Scan(&done)
	return done, err
}

// RecordSentOnce records that the booking's one message of kind went to
// recipient: the log's first line of that kind, which Notified reads, is
// unique (notification_log_once), so a step retried after its message went
// out (the mail queue sends a key once), or two senders of the same
// message, log it once. One row a message: the marker and the log line were
// two rows until migration 0042.
func (s *Bookings) RecordSentOnce(ctx context.Context, id uuid.UUID, kind, recipient string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO notification_log (reservation_id, kind, recipient) VALUES ($1, $2, $3)
		ON CONFLICT (reservation_id, kind) WHERE NOT resend DO NOTHING`, id, kind, recipient)
	return err
}

// FraudSignals are the counts the fraud rules score, over the last hour.
type FraudSignals struct {
	AccountAttempts, IPAttempts, DeviceAttempts, CardAccounts int
	AccountAge                                                time.Duration
	OwnedUnits, Limit                                         int
}

// FraudSignals counts recent checkouts by account, IP, device and card. A
// hotel-only booking has no event, hence no purchase limit (0).
func (s *Bookings) FraudSignals(ctx context.Context, userID, eventID, ip, device, card string) (FraudSignals, error) {
	var f FraudSignals
	var created time.Time
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM fraud_decisions WHERE user_id = $1 AND decided_at > now() - interval '1 hour'),
		(SELECT count(*) FROM fraud_decisions WHERE ip = $3 AND $3 <> '' AND decided_at > now() - interval '1 hour'),
		(SELECT count(*) FROM fraud_decisions WHERE device_id = $4 AND $4 <> '' AND decided_at > now() - interval '1 hour'),
		(SELECT count(DISTINCT user_id) FROM fraud_decisions WHERE card = $5 AND $5 <> '' AND user_id <> $1 AND decided_at > now() - interval '1 hour'),
		coalesce((SELECT created_at FROM users WHERE id = $1), now()),
		(SELECT coalesce(sum(i.quantity), 0) FROM reservations r JOIN reservation_items i ON i.reservation_id = r.id
		   WHERE r.user_id = $1 AND r.event_id = $2 AND r.status = 'PAID' AND i.live),
		coalesce((SELECT per_customer_limit FROM events WHERE id = $2), 0)`,
		userID, eventID, ip, device, card).Scan(&f.AccountAttempts, &f.IPAttempts, &f.DeviceAttempts, &f.CardAccounts, &created, &f.OwnedUnits, &f.Limit)
	f.AccountAge = time.Since(created)
	return f, err
}

// RecordFraud stores a decision (idempotent per attempt).
func (s *Bookings) RecordFraud(ctx context.Context, id uuid.UUID, attempt int, decision vocab.FraudDecision, score int, reasons []string, userID, ip, device, card string) error {
	body, _ := json.Marshal(reasons)
	_, err := s.pool.Exec(ctx, `INSERT INTO fraud_decisions (reservation_id, attempt, decision, score, reasons, user_id, ip, device_id, card)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (reservation_id, attempt) DO NOTHING`,
		id, attempt, decision, score, json.RawMessage(body), userID, ip, device, card)
	return err
}

// WebhookRecord is what the database holds of one provider event.
type WebhookRecord struct {
	// Found: the event was stored before (a redelivery).
	Found bool
	// Fingerprint of the content first stored under the event's ID.
	Fingerprint []byte
	// Signalled: it reached its booking (or needed not to).
	Signalled bool
}

// StoredWebhookRecord reads what is stored of a provider event: a read, so
// that a fresh event costs one row write, the one that records it handled.
func (s *Bookings) StoredWebhookRecord(ctx context.Context, provider, eventID string) (WebhookRecord, error) {
	var r WebhookRecord
	var at *time.Time
	err := s.pool.QueryRow(ctx, `SELECT fingerprint, signalled_at FROM webhook_events WHERE provider = $1 AND event_id = $2`,
		provider, eventID).Scan(&r.Fingerprint, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return WebhookRecord{}, nil
	}
	r.Found, r.Signalled = err == nil, at != nil
	return r, err
}

// StoreWebhook writes a verified provider event once: signalled says it has
// reached its booking (or needed not to), and the one row write records it
// so. An event stored unsignalled before (its delivery failed) is marked
// signalled now; an event stored signalled stays as it is. Storing it
// unsignalled (signalled false) never clears an earlier mark.
func (s *Bookings) StoreWebhook(ctx context.Context, provider, eventID, typ, intentID string, fingerprint, payload []byte,
	signalled bool) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO webhook_events (provider, event_id, fingerprint, type, intent_id, payload, signalled_at)
		VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN now() END)
		ON CONFLICT (provider, event_id) DO UPDATE SET signalled_at = now()
		WHERE $7 AND webhook_events.signalled_at IS NULL`,
		provider, eventID, fingerprint, typ, intentID, json.RawMessage(payload), signalled)
	return err
}

// MarkWebhookSignalled records that a stored event reached its workflow.
func (s *Bookings) MarkWebhookSignalled(ctx context.Context, provider, eventID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE webhook_events SET signalled_at = now() WHERE provider = $1 AND event_id = $2
		AND signalled_at IS NULL`, provider, eventID)
	return err
}

// BookingView is a booking as GET /v1/bookings/{id} shows it.
type BookingView struct {
	Hold Hold
	// Event is the booked event as the fan's pages name it (zero for a
	// hotel-only booking).
	Event         EventRef
	PaymentStatus vocab.PaymentStatus
	IntentID      string
	Flagged       string
	Tickets       []TicketRef
	// Vouchers are the paid stays, one per stay (store/stays.go).
	Vouchers []Voucher
	// Dispute is the booking's latest dispute, nil without one; and
	// RefundedOutside says a refund made outside Encore ended the booking
	// (store/disputes.go).
	Dispute         *Dispute
	RefundedOutside bool
}

// TicketRef names one ticket of a booking.
type TicketRef struct {
	ID     string `json:"id"`
	SeatID string `json:"seat_id,omitempty"`
	Status string `json:"status"`
	Place  Place  `json:"-"`
}

// EventRef is an event as a booking names it: title, start, and the venue
// with its IANA time zone, in which the fan's pages show the start.
type EventRef struct {
	ID        string
	Title     string
	StartsAt  time.Time
	Timezone  string
	VenueName string
	VenueCity string
}

// Booking reads a booking for its owner; another user's (when userID is
// set) is ErrNotFound, like a missing one. It reads as a page of the fan's
// list does (the same queries, in one snapshot), so a booking's page and
// the list never disagree, in one round trip (bookingView).
func (s *Bookings) Booking(ctx context.Context, id uuid.UUID, userID string) (BookingView, error) {
	v, found, err := s.bookingView(ctx, id, nil)
	return ownView(v, found, err, userID)
}

// BookingWithTerms is Booking with the saga's terms of it (LoadBooking's:
// its cancellation deadline and penalties), read in the same snapshot and
// the same round trip: a paid booking's page shows both.
func (s *Bookings) BookingWithTerms(ctx context.Context, id uuid.UUID, userID string) (BookingView, BookingInfo, error) {
	var info BookingInfo
	v, found, err := s.bookingView(ctx, id, &info)
	if v, err = ownView(v, found, err, userID); err != nil {
		return BookingView{}, BookingInfo{}, err
	}
	return v, info, nil
}

// ownView is a read's view for userID: ErrNotFound for a missing booking
// or, when userID is set, another user's.
func ownView(v BookingView, found bool, err error, userID string) (BookingView, error) {
	if err != nil {
		return BookingView{}, err
	}
	if !found || (userID != "" && v.Hold.UserID != userID) {
		return BookingView{}, ErrNotFound
	}
	return v, nil
}

// PaymentsForReconciliation maps intent IDs to their bookings' states.
func (s *Bookings) PaymentsForReconciliation(ctx context.Context, intentIDs []string) (map[string]ReconRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT p.intent_id, r.id, r.status, p.status, p.amount, coalesce(p.refund_id, ''),
		coalesce((SELECT array_agg(w.refund_id) FROM walks w WHERE w.reservation_id = r.id AND w.refund_id IS NOT NULL), '{}')
		|| coalesce((SELECT array_agg(l.payout_refund_id) FROM resale_listings l JOIN tickets t ON t.id = l.ticket_id
		             WHERE t.reservation_id = r.id AND l.payout_refund_id IS NOT NULL), '{}')
		FROM payments p JOIN reservations r ON r.id = p.reservation_id WHERE p.intent_id = ANY($1)`, intentIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]ReconRow{}
	for rows.Next() {
		var r ReconRow
		var intent string
		if err := rows.Scan(&intent, &r.ReservationID, &r.ReservationStatus, &r.PaymentStatus, &r.Amount, &r.RefundID, &r.WalkRefundIDs); err != nil {
			return nil, err
		}
		out[intent] = r
	}
	return out, rows.Err()
}

// ReconRow is one booking's side of a provider payment.
type ReconRow struct {
	ReservationID     uuid.UUID
	ReservationStatus string
	PaymentStatus     string
	Amount            int64
	// RefundID is the refund the booking recorded (a cancellation's, which
	// keeps a late stay's first night); WalkRefundIDs are the refunds it
	// expects beside: its walks' refunds of single nights and the payouts
	// of its tickets resold (part of what the seller paid, back to them).
	RefundID      string
	WalkRefundIDs []string
}
