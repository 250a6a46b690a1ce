package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

// Disputes and refunds made outside Encore. The provider tells of both by
// webhook, possibly months after the sale and after the booking's workflow
// ended, possibly twice or out of order: each is applied here in one
// transaction that locks the reservation, records the provider's state,
// revokes tickets when the money is gone and writes the audit row, and each
// can be applied again without changing anything more.

// DisputeActor is the audit log's actor of what the provider's disputes and
// outside refunds do to a booking.
const DisputeActor = "provider:stripe"

// Dispute is a booking's dispute as the provider last reported it.
type Dispute struct {
	ID       string              `json:"id"`
	Status   vocab.DisputeStatus `json:"status"`
	Reason   string              `json:"reason"`
	Amount   money.Money         `json:"amount"`
	ChargeID string              `json:"charge_id,omitempty"`
	OpenedAt time.Time           `json:"opened_at"`
	ClosedAt *time.Time          `json:"closed_at,omitempty"`
	// RevokedAt is when losing it revoked the booking's tickets.
	RevokedAt *time.Time `json:"revoked_at,omitempty"`

	lastEventAt time.Time // the provider's time of the event that last moved it
}

// DisputeEvent is one provider event about a dispute.
type DisputeEvent struct {
	ReservationID uuid.UUID
	IntentID      string
	ChargeID      string
	DisputeID     string
	Status        vocab.DisputeStatus
	Reason        string
	Amount        money.Money
	EventID       string
	EventAt       time.Time
}

// DisputeOutcome is what applying a dispute event did.
type DisputeOutcome struct {
	// Dispute is the row after the event (the event may have changed
	// nothing: a duplicate, or older than what was recorded).
	Dispute Dispute
	// Changed says the event moved the row.
	Changed bool
	// Revoked are the tickets this event revoked (a dispute lost now).
	Revoked []string
}

// ApplyDispute records a dispute event for its booking. A closed dispute
// never reopens and an older event never overwrites a newer one, so events
// delivered twice or out of order converge. The first time a dispute is
// lost, the booking's valid tickets are revoked (the gate's delta export
// carries them) in the same transaction; the reservation stays PAID, its
// seats taken and its payment CAPTURED: the money went back through the
// fan's bank, not through a refund of Encore's. Tickets stay valid while a
// dispute is open and after one is won.
func (s *Bookings) ApplyDispute(ctx context.Context, ev DisputeEvent) (DisputeOutcome, error) {
	if ev.DisputeID == "" || ev.EventID == "" || !validDisputeStatus(ev.Status) {
		return DisputeOutcome{}, &InvalidError{Field: "dispute", Message: fmt.Sprintf("dispute %q with status %q", ev.DisputeID, ev.Status)}
	}
	var out DisputeOutcome
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var eventID string
		if err := tx.QueryRow(ctx, `SELECT coalesce(event_id, '') FROM reservations WHERE id = $1 FOR UPDATE`, ev.ReservationID).
			Scan(&eventID); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		before, found, err := disputeLocked(ctx, tx, ev.DisputeID)
		if err != nil {
			return err
		}
		moves := !found || disputeMoves(before, ev)
		if moves {
			var closedAt *time.Time
			if ev.Status.Closed() {
				closedAt = &ev.EventAt
			}
			if _, err := tx.Exec(ctx, `INSERT INTO payment_disputes (dispute_id, reservation_id, intent_id, charge_id, status, reason,
					amount, currency, last_event_id, last_event_at, closed_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
				ON CONFLICT (dispute_id) DO UPDATE SET status = EXCLUDED.status, reason = EXCLUDED.reason,
					amount = EXCLUDED.amount, currency = EXCLUDED.currency, last_event_id = EXCLUDED.last_event_id,
					last_event_at = EXCLUDED.last_event_at, closed_at = coalesce(payment_disputes.closed_at, EXCLUDED.closed_at),
					charge_id = CASE WHEN EXCLUDED.charge_id <> '' THEN EXCLUDED.charge_id ELSE payment_disputes.charge_id END`,
				ev.DisputeID, ev.ReservationID, ev.IntentID, ev.ChargeID, string(ev.Status), ev.Reason,
				ev.Amount.Amount, ev.Amount.Currency, ev.EventID, ev.EventAt, closedAt); err != nil {
				return err
			}
		}
		after, _, err := disputeLocked(ctx, tx, ev.DisputeID)
		if err != nil {
			return err
		}
		out.Dispute, out.Changed = after, moves
		if after.Status == vocab.DisputeLost && after.RevokedAt == nil {
			if out.Revoked, err = revokeLocked(ctx, tx, ev.ReservationID); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `UPDATE payment_disputes SET revoked_at = now() WHERE dispute_id = $1 RETURNING revoked_at`,
				ev.DisputeID).Scan(&out.Dispute.RevokedAt); err != nil {
				return err
			}
		}
		if !moves {
			return nil
		}
		action := "booking.dispute." + disputeAction(after.Status)
		b, _ := json.Marshal(map[string]any{"status": before.Status, "revoked_tickets": len(out.Revoked)})
		a, _ := json.Marshal(map[string]any{"dispute": out.Dispute, "revoked_tickets": out.Revoked})
		var beforeJSON json.RawMessage
		if found {
			beforeJSON = b
		}
		return RecordAdminActionTx(ctx, tx, AdminAction{Actor: DisputeActor, EventID: eventID, Action: action,
			Target: "booking:" + ev.ReservationID.String(), Reason: "dispute " + ev.DisputeID + " (" + ev.Reason + ")",
			Before: beforeJSON, After: a})
	})
	if transient(err) {
		return DisputeOutcome{}, ErrBusy
	}
	return out, err
}

// disputeMoves reports whether ev moves the recorded dispute d: a closed
// dispute stays as it is; an open one takes a closing event whatever its
// age, and another open status only from a newer event.
func disputeMoves(d Dispute, ev DisputeEvent) bool {
	switch {
	case d.Status.Closed():
		return false
	case ev.Status.Closed():
		return true
	}
	return ev.Status != d.Status && !ev.EventAt.Before(d.lastEventAt)
}

func disputeAction(s vocab.DisputeStatus) string {
	switch s {
	case vocab.DisputeLost:
		return "lost"
	case vocab.DisputeWon:
		return "won"
	}
	if s.Closed() {
		return "closed"
	}
	return "open"
}

func validDisputeStatus(s vocab.DisputeStatus) bool {
	for _, x := range vocab.DisputeStatuses {
		if x == s {
			return true
		}
	}
	return false
}

const disputeColumns = `dispute_id, status, reason, amount, currency, charge_id, opened_at, closed_at, revoked_at, last_event_at`

func scanDispute(row pgx.CollectableRow) (Dispute, error) {
	var d Dispute
	var status, cur string
	err := row.Scan(&d.ID, &status, &d.Reason, &d.Amount.Amount, &cur, &d.ChargeID, &d.OpenedAt, &d.ClosedAt, &d.RevokedAt, &d.lastEventAt)
	d.Status, d.Amount.Currency = vocab.DisputeStatus(status), cur
	return d, err
}

func disputeLocked(ctx context.Context, tx pgx.Tx, id string) (Dispute, bool, error) {
	rows, err := tx.Query(ctx, `SELECT `+disputeColumns+` FROM payment_disputes WHERE dispute_id = $1 FOR UPDATE`, id)
	if err != nil {
		return Dispute{}, false, err
	}
	d, err := pgx.CollectExactlyOneRow(rows, scanDispute)
	if errors.Is(err, pgx.ErrNoRows) {
		return Dispute{}, false, nil
	}
	return d, err == nil, err
}

// Disputes lists a booking's disputes, newest first.
func (s *Bookings) Disputes(ctx context.Context, reservationID uuid.UUID) ([]Dispute, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+disputeColumns+` FROM payment_disputes WHERE reservation_id = $1
		ORDER BY opened_at DESC, dispute_id`, reservationID)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, scanDispute)
	if out == nil {
		out = []Dispute{}
	}
	return out, err
}

// OutsideRefund is one refund of a booking's charge that Encore did not
// make, as the provider's charge.refunded event reported it.
type OutsideRefund struct {
	EventID        string `json:"event_id"`
	ChargeID       string `json:"charge_id"`
	AmountRefunded int64  `json:"amount_refunded"`
	AmountCaptured int64  `json:"amount_captured"`
	Currency       string `json:"currency"`
	// Full: the charge was refunded in full by then.
	Full bool `json:"full"`
	// EndedBooking: this refund ended a PAID booking as REFUNDED.
	EndedBooking bool      `json:"ended_booking"`
	ReceivedAt   time.Time `json:"received_at"`
}

// OutsideRefundEvent is a charge.refunded event Encore's own refunds did
// not cause.
type OutsideRefundEvent struct {
	ReservationID  uuid.UUID
	IntentID       string
	ChargeID       string
	EventID        string
	AmountRefunded int64
	AmountCaptured int64
	Currency       string
	Full           bool
}

// OutsideRefundOutcome is what applying an outside refund did.
type OutsideRefundOutcome struct {
	// Duplicate: the event was applied before; nothing changed.
	Duplicate bool
	// Ended is the reservation the refund ended (zero when it ended none).
	Ended Ended
	// Revoked are the tickets it revoked.
	Revoked []string
}

// ApplyOutsideRefund records a refund made outside Encore. One that leaves
// the charge refunded in full ends a PAID booking as Encore's own refund
// would (CancelPaid): tickets revoked, reservation CANCELLED with its seats
// back on sale, payment REFUNDED, cancelled_by the provider; in the same
// transaction as the record and the audit row. A partial one is only
// recorded: the booking stays PAID and support sees it. The same event
// applied twice changes nothing the second time.
func (s *Bookings) ApplyOutsideRefund(ctx context.Context, ev OutsideRefundEvent) (OutsideRefundOutcome, error) {
	if ev.EventID == "" {
		return OutsideRefundOutcome{}, &InvalidError{Field: "refund", Message: "an outside refund needs its event"}
	}
	var out OutsideRefundOutcome
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var status, eventID string
		if err := tx.QueryRow(ctx, `SELECT status, coalesce(event_id, '') FROM reservations WHERE id = $1 FOR UPDATE`, ev.ReservationID).
			Scan(&status, &eventID); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO outside_refunds (event_id, reservation_id, intent_id, charge_id, amount_refunded,
				amount_captured, currency, full_refund) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (event_id) DO NOTHING`,
			ev.EventID, ev.ReservationID, ev.IntentID, ev.ChargeID, ev.AmountRefunded, ev.AmountCaptured, ev.Currency, ev.Full)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			out.Duplicate = true
			return nil
		}
		var payment string
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT status FROM payments WHERE reservation_id = $1), '')`, ev.ReservationID).
			Scan(&payment); err != nil {
			return err
		}
		action := "booking.refund.outside_partial"
		if ev.Full && status == string(vocab.ReservationPaid) && payment == string(vocab.PaymentCaptured) {
			action = "booking.refund.outside"
			var err error
			if out.Revoked, err = revokeLocked(ctx, tx, ev.ReservationID); err != nil {
				return err
			}
			if out.Ended, err = endLocked(ctx, tx, ev.ReservationID, vocab.ReservationCancelled, vocab.ReservationPaid); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE reservations SET cancelled_by = $2, cancel_reason = $3 WHERE id = $1`,
				ev.ReservationID, DisputeActor, "refunded outside Encore (charge "+ev.ChargeID+")"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE payments SET status = 'REFUNDED', updated_at = now() WHERE reservation_id = $1`,
				ev.ReservationID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE outside_refunds SET ended_booking = true WHERE event_id = $1`, ev.EventID); err != nil {
				return err
			}
		}
		a, _ := json.Marshal(map[string]any{"charge_id": ev.ChargeID, "amount_refunded": ev.AmountRefunded,
			"amount_captured": ev.AmountCaptured, "currency": ev.Currency, "revoked_tickets": out.Revoked,
			"ended": out.Ended.ReservationID != uuid.Nil})
		b, _ := json.Marshal(map[string]any{"reservation_status": status, "payment_status": payment})
		return RecordAdminActionTx(ctx, tx, AdminAction{Actor: DisputeActor, EventID: eventID, Action: action,
			Target: "booking:" + ev.ReservationID.String(), Reason: "refund outside Encore, event " + ev.EventID, Before: b, After: a})
	})
	if transient(err) {
		return OutsideRefundOutcome{}, ErrBusy
	}
	return out, err
}

// OutsideRefunds lists the refunds of a booking made outside Encore, oldest
// first.
func (s *Bookings) OutsideRefunds(ctx context.Context, reservationID uuid.UUID) ([]OutsideRefund, error) {
	rows, err := s.pool.Query(ctx, `SELECT event_id, charge_id, amount_refunded, amount_captured, currency, full_refund,
		ended_booking, received_at FROM outside_refunds WHERE reservation_id = $1 ORDER BY received_at, event_id`, reservationID)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutsideRefund, error) {
		var r OutsideRefund
		err := row.Scan(&r.EventID, &r.ChargeID, &r.AmountRefunded, &r.AmountCaptured, &r.Currency, &r.Full, &r.EndedBooking, &r.ReceivedAt)
		return r, err
	})
	if out == nil {
		out = []OutsideRefund{}
	}
	return out, err
}

// disputesSQL reads each view's latest dispute and whether an outside
// refund ended it, for the whole page at once ($1, the reservations).
const disputesSQL = `SELECT r.id, d.dispute_id, d.status, d.reason, d.amount, d.currency::text,
			EXISTS (SELECT 1 FROM outside_refunds o WHERE o.reservation_id = r.id AND o.ended_booking)
		FROM unnest($1::uuid[]) AS r (id)
		LEFT JOIN LATERAL (SELECT * FROM payment_disputes d WHERE d.reservation_id = r.id
			ORDER BY d.opened_at DESC, d.dispute_id LIMIT 1) d ON true
		WHERE d.dispute_id IS NOT NULL OR EXISTS (SELECT 1 FROM outside_refunds o WHERE o.reservation_id = r.id AND o.ended_booking)`

// scanViewDispute sets a disputesSQL row's dispute on its view.
func scanViewDispute(at map[uuid.UUID]*BookingView, r pgx.Rows) error {
	var rid uuid.UUID
	var id, status, reason, cur *string
	var amount *int64
	var outside bool
	if err := r.Scan(&rid, &id, &status, &reason, &amount, &cur, &outside); err != nil {
		return err
	}
	v := at[rid]
	v.RefundedOutside = outside
	if id != nil {
		v.Dispute = &Dispute{ID: *id, Status: vocab.DisputeStatus(*status), Reason: *reason,
			Amount: money.Money{Amount: *amount, Currency: *cur}}
	}
	return nil
}
