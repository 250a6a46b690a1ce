package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// OutboxRow is one unpublished outbox row.
type OutboxRow struct {
	ID        int64
	Topic     string
	Key       string
	Payload   []byte
	CreatedAt time.Time
}

// relayLockKey is the advisory lock of the one active relay ("encore-r").
const relayLockKey int64 = 0x656e636f72652d72

// RelayLease is the outbox relay's leadership: a dedicated connection that
// holds a session-level advisory lock. Every read and mark runs on that
// connection, so a relay whose connection died (and with it the lock) fails
// its next statement instead of racing the new leader.
type RelayLease struct {
	conn *pgxpool.Conn
}

// AcquireRelayLease tries to become the active relay. It returns nil and no
// error when another relay holds the lease.
func (s *Jobs) AcquireRelayLease(ctx context.Context) (*RelayLease, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, relayLockKey).Scan(&got); err != nil {
		conn.Release()
		return nil, err
	}
	if !got {
		conn.Release()
		return nil, nil
	}
	return &RelayLease{conn: conn}, nil
}

// Unpublished reads up to limit unpublished rows of the given topics in ID
// order. Rows of other topics wait for a relay that handles them.
func (l *RelayLease) Unpublished(ctx context.Context, topics []string, limit int) ([]OutboxRow, error) {
	rows, err := l.conn.Query(ctx, `SELECT id, topic, key, payload::text, created_at FROM outbox
		WHERE published_at IS NULL AND topic = ANY($1) ORDER BY id LIMIT $2`, topics, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutboxRow, error) {
		var r OutboxRow
		err := row.Scan(&r.ID, &r.Topic, &r.Key, &r.Payload, &r.CreatedAt)
		return r, err
	})
}

// MarkPublished records that rows went out, in one statement: a drained
// batch costs one commit, not one a row (with fsync on, the relay's commits
// were as many as the holds it published).
func (l *RelayLease) MarkPublished(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := l.conn.Exec(ctx, `UPDATE outbox SET published_at = now() WHERE id = ANY($1) AND published_at IS NULL`, ids)
	return err
}

// Release gives the lease up. A connection that cannot unlock is closed,
// which ends its session and so the lock: never returned to the pool holding it.
func (l *RelayLease) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, relayLockKey); err != nil {
		_ = l.conn.Hijack().Close(ctx)
		return
	}
	l.conn.Release()
}

// OldestUnpublishedAge is how long the oldest unpublished row has waited
// (zero when none waits): the relay's freshness, as the database sees it.
func (s *Jobs) OldestUnpublishedAge(ctx context.Context) (time.Duration, error) {
	var secs float64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM now() - created_at), 0)::float8 FROM outbox
		WHERE published_at IS NULL ORDER BY id LIMIT 1`).Scan(&secs)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return time.Duration(secs * float64(time.Second)), err
}
