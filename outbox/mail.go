package outbox

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/encore-tickets/encore/internal/defaults"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/store"
)

// Mail is the mail queue in front of a transport (SMTP, or the mailbox
// folder): a notify.Mailer whose Send writes the message to mail_queue once
// by its key and tries it at once, and a loop (Run) that retries what
// failed with backoff until MaxAttempts, after which the message is DEAD
// for support to see and resend. Not the ordered outbox: one refusing
// address must not hold up every message behind it.
//
// Delivery is at least once: a process that dies between the server's
// acceptance and the mark leaves the message claimed until its lease ends,
// and it is sent again then, with the same Message-ID.
type Mail struct {
	Store     *store.Store
	Transport notify.Mailer
	// MaxAttempts before a message is DEAD (0: 8).
	MaxAttempts int
	// Backoff is the wait after the first failure, doubling after each
	// next one up to MaxBackoff (0: 10s and 30m).
	Backoff, MaxBackoff time.Duration
	// Lease is how long a claimed message is its sender's (0: 2m): longer
	// than one delivery may take.
	Lease time.Duration
	// Interval is the loop's pause when nothing is due (0: 1s).
	Interval time.Duration
	Log      *slog.Logger

	sent, failed, dead prometheus.Counter
	once               sync.Once
}

func (q *Mail) fill() { q.once.Do(q.setDefaults) }

func (q *Mail) setDefaults() {
	defaults.Fill(&q.MaxAttempts, 8)
	defaults.Fill(&q.Backoff, 10*time.Second)
	defaults.Fill(&q.MaxBackoff, 30*time.Minute)
	defaults.Fill(&q.Lease, 2*time.Minute)
	defaults.Fill(&q.Interval, time.Second)
	if q.Log == nil {
		q.Log = slog.Default()
	}
}

// Register adds the queue's counters to reg.
func (q *Mail) Register(reg prometheus.Registerer) {
	q.sent = prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_mail_sent_total", Help: "Emails the SMTP server accepted."})
	q.failed = prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_mail_failures_total", Help: "Failed email attempts (retried until the last)."})
	q.dead = prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_mail_dead_total", Help: "Emails that failed every attempt (support's dead-letter list)."})
	reg.MustRegister(q.sent, q.failed, q.dead)
}

// Send queues m once by its key and tries it at once. Only a failure to
// queue is an error: a failed attempt is the queue's to retry.
func (q *Mail) Send(ctx context.Context, m notify.Message) error {
	q.fill()
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	row, ok, err := q.Store.Mail().EnqueueClaimed(ctx, m.Key, m.To, m.Subject, raw, q.Lease)
	if err != nil {
		return err
	}
	if !ok {
		return nil // sent already, or someone else's now, or the loop's to try
	}
	q.attempt(ctx, row)
	return nil
}

// SendRetried is Send for a caller that is itself retried until it returns
// nil (a Temporal activity): the message is tried first and written once,
// with its outcome (sent, or pending for the loop to retry), so a message
// that goes out at once costs one row write, not Send's two. A process that
// dies between the server's acceptance and the write is undone by the
// caller's retry, which sends it again (at least once, the same Message-ID),
// as the end of Send's lease would. A key already written is not sent
// again. An error means nothing was written, and the caller must retry.
func (q *Mail) SendRetried(ctx context.Context, m notify.Message) error {
	q.fill()
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if queued, err := q.Store.Mail().Queued(ctx, m.Key); err != nil || queued {
		return err
	}
	sendErr := q.Transport.Send(ctx, m)
	// Written even when ctx ended meanwhile, as attempt's outcome is.
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if sendErr == nil {
		inc(q.sent)
		return q.Store.Mail().InsertAttempted(mctx, m.Key, m.To, m.Subject, raw, "", time.Time{}, false)
	}
	inc(q.failed)
	dead := q.MaxAttempts <= 1
	q.Log.Warn("mail queue: first attempt failed", "key", m.Key, "dead", dead, "err", sendErr)
	if dead {
		inc(q.dead)
	}
	return q.Store.Mail().InsertAttempted(mctx, m.Key, m.To, m.Subject, raw, sendErr.Error(), time.Now().Add(q.backoff(1)), dead)
}

// Run retries due messages until ctx ends. Every process may run it: each
// message is claimed by one.
func (q *Mail) Run(ctx context.Context) {
	q.fill()
	for {
		n, err := q.Drain(ctx)
		if err != nil && ctx.Err() == nil {
			q.Log.Warn("mail queue", "err", err)
		}
		if n > 0 && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(q.Interval):
		}
	}
}

// Drain sends every message due now, once each, and says how many it
// tried.
func (q *Mail) Drain(ctx context.Context) (int, error) {
	q.fill()
	n := 0
	for ctx.Err() == nil {
		row, ok, err := q.Store.Mail().ClaimDue(ctx, q.Lease)
		if err != nil || !ok {
			return n, err
		}
		q.attempt(ctx, row)
		n++
	}
	return n, ctx.Err()
}

// attempt sends one claimed message and records the outcome.
func (q *Mail) attempt(ctx context.Context, row store.MailRow) {
	var m notify.Message
	err := json.Unmarshal(row.Message, &m)
	if err == nil {
		err = q.Transport.Send(ctx, m)
	}
	// The outcome is recorded even when ctx ended meanwhile: a message the
	// server accepted must not be sent again for want of a mark.
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err == nil {
		if merr := q.Store.Mail().MarkSent(mctx, row.ID); merr != nil {
			q.Log.Warn("mail queue: mark sent", "id", row.ID, "err", merr)
		}
		inc(q.sent)
		return
	}
	inc(q.failed)
	dead := row.Attempts >= q.MaxAttempts
	next := time.Now().Add(q.backoff(row.Attempts))
	// The error names the server and its answer, never the message: no
	// personal data in logs.
	q.Log.Warn("mail queue: attempt failed", "id", row.ID, "attempt", row.Attempts, "dead", dead, "err", err)
	if dead {
		inc(q.dead)
	}
	if merr := q.Store.Mail().MarkFailed(mctx, row.ID, err.Error(), next, dead); merr != nil {
		q.Log.Warn("mail queue: mark failed", "id", row.ID, "err", merr)
	}
}

// backoff is the wait after the attempt-th failure.
func (q *Mail) backoff(attempt int) time.Duration {
	d := q.Backoff
	for i := 1; i < attempt && d < q.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, q.MaxBackoff)
}

func inc(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}
