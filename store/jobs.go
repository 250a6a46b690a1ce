package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// JobKindEventCancel is the kind of an event cancellation's job.
const JobKindEventCancel = "event-cancel"

// Job statuses.
const (
	JobRunning = "running"
	JobDone    = "done"
	JobFailed  = "failed"
)

// Job is a long-running staff job and its progress.
type Job struct {
	ID         string     `json:"job_id"`
	Kind       string     `json:"kind"`
	EventID    string     `json:"event_id,omitempty"`
	OrgID      string     `json:"org_id,omitempty"`
	Actor      string     `json:"actor"`
	Reason     string     `json:"reason,omitempty"`
	Status     string     `json:"status"`
	Total      int        `json:"total"`
	Done       int        `json:"done"`
	Failed     int        `json:"failed"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// EventCancellation is what CancelEvent did in its transaction.
type EventCancellation struct {
	Job Job
	// Started is false when the event had been cancelled already: Job is
	// the first cancellation's job.
	Started bool
	// Released are the pending holds given back.
	Released []Ended
	// CancelledAt is the commit's clock: no sale is confirmed after it.
	CancelledAt time.Time
}

// CancelEvent cancels an event in one transaction: the event becomes
// CANCELLED (so no hold, checkout or sale confirm succeeds once this
// commits), its pending holds are released, and the job that refunds its
// paid bookings is recorded with their count. The event's row is locked
// first, as ConfirmSale locks it before a reservation, so a sale either
// commits before (and is counted) or is refused. org "" skips the
// organisation check (admins). A second call returns the first job.
func (s *Jobs) CancelEvent(ctx context.Context, eventID, org, actor, reason, jobID string) (EventCancellation, error) {
	var out EventCancellation
	err := s.tx(ctx, func(tx pgx.Tx) error {
		out = EventCancellation{}
		var status, eventOrg string
		err := tx.QueryRow(ctx, `SELECT status, org_id FROM events WHERE id = $1 FOR UPDATE`, eventID).Scan(&status, &eventOrg)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err == nil && org != "" && eventOrg != org {
			return ErrOtherOrg
		}
		if err != nil {
			return err
		}
		if status == string(vocab.EventCancelled) {
			j, err := jobOfEvent(ctx, tx, eventID)
			out.Job = j
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE events SET status = 'CANCELLED' WHERE id = $1 RETURNING now()`, eventID).Scan(&out.CancelledAt); err != nil {
			return err
		}
		out.Released, err = endSelected(ctx, tx, vocab.ReservationCancelled,
			`SELECT id FROM reservations WHERE event_id = $1 AND status = 'PENDING_PAYMENT' ORDER BY id FOR UPDATE`, eventID)
		if err != nil {
			return err
		}
		var total int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM reservations r WHERE r.event_id = $1 AND r.status = 'PAID' AND `+notChargedBack,
			eventID).Scan(&total); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO jobs (id, kind, event_id, org_id, actor, reason, total)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at`,
			jobID, JobKindEventCancel, eventID, eventOrg, actor, reason, total).Scan(&out.Job.CreatedAt); err != nil {
			return err
		}
		out.Job = Job{ID: jobID, Kind: JobKindEventCancel, EventID: eventID, OrgID: eventOrg, Actor: actor, Reason: reason,
			Status: JobRunning, Total: total, CreatedAt: out.Job.CreatedAt}
		out.Started = true
		before, _ := json.Marshal(map[string]string{"status": status})
		after, _ := json.Marshal(map[string]any{"status": vocab.EventCancelled, "job_id": jobID, "paid_bookings": total,
			"released_holds": len(out.Released)})
		return RecordAdminActionTx(ctx, tx, AdminAction{Actor: actor, OrgID: eventOrg, Action: "event.cancel",
			Target: "event:" + eventID, Reason: reason, Before: before, After: after})
	})
	if transient(err) {
		return EventCancellation{}, ErrBusy
	}
	return out, err
}

const jobColumns = `id, kind, coalesce(event_id, ''), org_id, actor, reason, status, total, done, failed, created_at, finished_at`

func scanJob(row pgx.Row) (Job, error) {
	var j Job
	err := row.Scan(&j.ID, &j.Kind, &j.EventID, &j.OrgID, &j.Actor, &j.Reason, &j.Status, &j.Total, &j.Done, &j.Failed,
		&j.CreatedAt, &j.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Job{}, ErrNotFound
	}
	return j, err
}

func jobOfEvent(ctx context.Context, tx pgx.Tx, eventID string) (Job, error) {
	return scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE event_id = $1 AND kind = $2`, eventID, JobKindEventCancel))
}

// Job reads a job.
func (s *Jobs) Job(ctx context.Context, id string) (Job, error) {
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
}

// EventCancelled reports whether the event is cancelled (false for an
// unknown event: other checks refuse those).
func (s *Jobs) EventCancelled(ctx context.Context, eventID string) (bool, error) {
	var cancelled bool
	err := s.pool.QueryRow(ctx, `SELECT status = 'CANCELLED' FROM events WHERE id = $1`, eventID).Scan(&cancelled)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return cancelled, err
}

// notChargedBack keeps reservation r out of an event cancellation's refunds
// when its payment was charged back (a dispute lost): the cardholder's
// bank has already returned the money, and a refund on top would pay it
// out twice.
const notChargedBack = `NOT EXISTS (SELECT 1 FROM payment_disputes d WHERE d.reservation_id = r.id AND d.status = 'lost')`

// PaidBookingsAfter pages through an event's paid bookings that are still
// the organiser's to refund, in ID order: up to limit IDs greater than
// after (uuid.Nil: from the start). Charged-back bookings are left out.
func (s *Jobs) PaidBookingsAfter(ctx context.Context, eventID string, after uuid.UUID, limit int) ([]uuid.UUID, error) {
	return queryIDs(ctx, s.pool, `SELECT r.id FROM reservations r WHERE r.event_id = $1 AND r.status = 'PAID' AND r.id > $2
		AND `+notChargedBack+` ORDER BY r.id LIMIT $3`, eventID, after, limit)
}

// RecordJobItem records the outcome of one booking of a job and moves the
// job's counters, once per booking: a retried step counts nothing twice.
func (s *Jobs) RecordJobItem(ctx context.Context, jobID string, bookingID uuid.UUID, ok bool, detail string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO job_items (job_id, booking_id, ok, detail) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, jobID, bookingID, ok, detail)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		col := "done"
		if !ok {
			col = "failed"
		}
		_, err = tx.Exec(ctx, `UPDATE jobs SET `+col+` = `+col+` + 1 WHERE id = $1`, jobID)
		return err
	})
}

// FinishJob ends a job: done, or failed when any item failed.
func (s *Jobs) FinishJob(ctx context.Context, jobID string) (Job, error) {
	return scanJob(s.pool.QueryRow(ctx, `UPDATE jobs SET status = CASE WHEN failed > 0 THEN 'failed' ELSE 'done' END,
		finished_at = coalesce(finished_at, now()) WHERE id = $1 RETURNING `+jobColumns, jobID))
}

// MarkStaffCancel records on the booking who cancelled it outside the fan's
// policy, and why.
func (s *Bookings) MarkStaffCancel(ctx context.Context, id uuid.UUID, staff, reason string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE reservations SET cancelled_by = $2, cancel_reason = $3 WHERE id = $1`, id, staff, reason)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return err
}

// LogNotification records a resend of a message about a booking: a line of
// its own beside the kind's first (RecordSentOnce).
func (s *Bookings) LogNotification(ctx context.Context, id uuid.UUID, kind, recipient string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO notification_log (reservation_id, kind, recipient, resend) VALUES ($1, $2, $3, true)`, id, kind, recipient)
	return err
}

// EnsureUsers creates the accounts that do not exist yet.
func (s *Orgs) EnsureUsers(ctx context.Context, ids ...string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO users (id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, ids)
	return err
}
