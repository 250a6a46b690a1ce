package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// BookingFilter narrows SearchBookings; empty fields match everything.
// Before pages backwards: only bookings older than the one it names.
type BookingFilter struct {
	UserID, Email, EventID, Status string
	Before                         uuid.UUID
	Limit                          int
}

// BookingSummary is one row of a support search.
type BookingSummary struct {
	ID            uuid.UUID `json:"booking_id"`
	UserID        string    `json:"user_id"`
	Email         string    `json:"email,omitempty"`
	EventID       string    `json:"event_id,omitempty"`
	Status        string    `json:"reservation_status"`
	Total         int64     `json:"total"`
	Currency      string    `json:"currency"`
	PaymentStatus string    `json:"payment_status,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	// DisputeStatus is the status of the booking's latest dispute, if any.
	DisputeStatus string `json:"dispute_status,omitempty"`
}

// SearchBookings finds bookings for support staff, newest first.
func (s *Bookings) SearchBookings(ctx context.Context, f BookingFilter) ([]BookingSummary, error) {
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 50
	}
	var before *uuid.UUID
	if f.Before != uuid.Nil {
		before = &f.Before
	}
	rows, err := s.pool.Query(ctx, `SELECT r.id, r.user_id, coalesce(r.fan_email, ''), coalesce(r.event_id, ''), r.status,
			r.total, r.currency, coalesce(p.status, ''), r.created_at,
			coalesce((SELECT d.status FROM payment_disputes d WHERE d.reservation_id = r.id ORDER BY d.opened_at DESC LIMIT 1), '')
		FROM reservations r LEFT JOIN payments p ON p.reservation_id = r.id
		WHERE ($1 = '' OR r.user_id = $1) AND ($2 = '' OR lower(r.fan_email) = lower($2))
		  AND ($3 = '' OR r.event_id = $3) AND ($4 = '' OR r.status = $4)
		  AND ($5::uuid IS NULL OR (r.created_at, r.id) < (SELECT created_at, id FROM reservations WHERE id = $5))
		ORDER BY r.created_at DESC, r.id DESC LIMIT $6`, f.UserID, f.Email, f.EventID, f.Status, before, f.Limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (BookingSummary, error) {
		var b BookingSummary
		err := row.Scan(&b.ID, &b.UserID, &b.Email, &b.EventID, &b.Status, &b.Total, &b.Currency, &b.PaymentStatus, &b.CreatedAt, &b.DisputeStatus)
		return b, err
	})
}

// FraudRecord is one fraud decision of a booking.
type FraudRecord struct {
	Attempt   int             `json:"attempt"`
	Decision  string          `json:"decision"`
	Score     int             `json:"score"`
	Reasons   json.RawMessage `json:"reasons"`
	DecidedAt time.Time       `json:"decided_at"`
}

// SentMessage is one message sent about a booking.
type SentMessage struct {
	Kind      string    `json:"kind"`
	Recipient string    `json:"recipient,omitempty"`
	SentAt    time.Time `json:"sent_at"`
}

// SupportDetail is what support staff see of a booking beyond the fan's view.
type SupportDetail struct {
	Email        string        `json:"email,omitempty"`
	CreatedAt    time.Time     `json:"created_at"`
	CancelledBy  string        `json:"cancelled_by,omitempty"`
	CancelReason string        `json:"cancel_reason,omitempty"`
	Fraud        []FraudRecord `json:"fraud"`
	Emails       []SentMessage `json:"emails"`
}

// BookingSupportDetail reads a booking's fraud decisions, staff
// cancellation and messages sent.
func (s *Bookings) BookingSupportDetail(ctx context.Context, id uuid.UUID) (SupportDetail, error) {
	var d SupportDetail
	var by, reason *string
	err := s.pool.QueryRow(ctx, `SELECT coalesce(fan_email, ''), created_at, cancelled_by, cancel_reason FROM reservations WHERE id = $1`, id).
		Scan(&d.Email, &d.CreatedAt, &by, &reason)
	if err = orNotFound(err); err != nil {
		return SupportDetail{}, err
	}
	if by != nil {
		d.CancelledBy = *by
	}
	if reason != nil {
		d.CancelReason = *reason
	}
	rows, err := s.pool.Query(ctx, `SELECT attempt, decision, score, reasons, decided_at FROM fraud_decisions
		WHERE reservation_id = $1 ORDER BY attempt`, id)
	if err != nil {
		return SupportDetail{}, err
	}
	d.Fraud, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (FraudRecord, error) {
		var f FraudRecord
		var reasons []byte
		err := row.Scan(&f.Attempt, &f.Decision, &f.Score, &reasons, &f.DecidedAt)
		f.Reasons = reasons
		return f, err
	})
	if err != nil {
		return SupportDetail{}, err
	}
	// Automatic messages sent before the log existed have no recipient.
	// A confirmation sent by its retried step is recorded by its row in the
	// mail queue alone, keyed "<booking>-<kind>" (BookingMailKey; a resend's
	// key has a suffix, and a line in the log), shown here beside the log's
	// lines.
	rows, err = s.pool.Query(ctx, `SELECT kind, recipient, sent_at FROM (
			SELECT kind, recipient, sent_at, id FROM notification_log WHERE reservation_id = $1
			UNION ALL
			SELECT m.kind, m.recipient, coalesce(m.sent_at, m.created_at), 0
			FROM (SELECT substr(key, length($2) + 2) AS kind, recipient, sent_at, created_at FROM mail_queue
				WHERE key > $2 || '-' AND key < $2 || '.') m
			WHERE position('-' IN m.kind) = 0
			  AND NOT EXISTS (SELECT 1 FROM notification_log l WHERE l.reservation_id = $1 AND l.kind = m.kind AND NOT l.resend)
		) e ORDER BY sent_at, id`, id, id.String())
	if err != nil {
		return SupportDetail{}, err
	}
	d.Emails, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (SentMessage, error) {
		var m SentMessage
		err := row.Scan(&m.Kind, &m.Recipient, &m.SentAt)
		return m, err
	})
	if d.Fraud == nil {
		d.Fraud = []FraudRecord{}
	}
	if d.Emails == nil {
		d.Emails = []SentMessage{}
	}
	return d, err
}
