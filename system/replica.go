package system

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/encore-tickets/encore/store"
)

// DefaultReplicaWait is how long a seat-map fill on a replica waits for
// the replica to replay what the primary had written when the fill began,
// before it reads the primary instead. Well inside the snapshot cache's
// one-second wait for another process's fill (seatmap.CacheOptions.Wait),
// and above the 200 ms a primary with synchronous_commit off may take to
// flush (and so send) a commit (wal_writer_delay).
const DefaultReplicaWait = 500 * time.Millisecond

// FreshLoader fills seat-map snapshots from a streaming read replica, never
// older than the primary was when the fill began: it reads the primary's
// WAL insert position (every commit made so far, the one an invalidation
// announced included), waits on one replica connection until the replica
// has replayed that far (at most MaxWait), and reads the section on that
// same connection; past MaxWait it reads the primary. A server that is not
// a standby (ENCORE_READER_DATABASE_URL naming a primary, or a promoted
// replica) is read at once.
//
// Why: the relay deletes a section's snapshot and publishes its
// invalidation after the change commits on the primary, and viewers refetch
// at once. Read from a replica that has not replayed the change yet, the
// refill would put the old seats back in Redis for the snapshot's whole TTL,
// under the generation the invalidation set.
type FreshLoader struct {
	// Primary is a small read-only pool on the primary: its WAL position,
	// and the reads of fills that waited MaxWait in vain.
	Primary *pgxpool.Pool
	// Replica is the browse plane's pool.
	Replica *pgxpool.Pool
	// MaxWait bounds the wait for replay (DefaultReplicaWait when zero);
	// Poll is how often the replica is asked meanwhile (2 ms when zero).
	MaxWait, Poll time.Duration

	waits      prometheus.Histogram
	fallbacks  prometheus.Counter
	nFallbacks atomic.Int64
}

// NewFreshLoader wraps the browse plane's replica pool; primary is the
// read-only pool on the primary.
func NewFreshLoader(primary, replica *pgxpool.Pool) *FreshLoader {
	return &FreshLoader{Primary: primary, Replica: replica,
		waits: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "encore_browse_replica_wait_seconds",
			Help:    "How long a seat-map fill waited for the read replica to replay the primary's position.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1}}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_browse_replica_fallbacks_total",
			Help: "Seat-map fills read from the primary because the read replica had not caught up in time."}),
	}
}

// Register adds the loader's metrics to reg.
func (l *FreshLoader) Register(reg prometheus.Registerer) { reg.MustRegister(l.waits, l.fallbacks) }

// Fallbacks is how many fills read the primary because the replica had
// not caught up (or failed).
func (l *FreshLoader) Fallbacks() int64 { return l.nFallbacks.Load() }

func (l *FreshLoader) fellBack() {
	l.fallbacks.Inc()
	l.nFallbacks.Add(1)
}

// Load is a seatmap.Loader.
func (l *FreshLoader) Load(ctx context.Context, eventID, sectionID string) (store.SectionSeats, error) {
	start := time.Now()
	var target string
	if err := l.Primary.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&target); err != nil {
		// The primary does not answer: the replica's seats are the best
		// there are (and nothing commits meanwhile).
		return store.SectionSeatsOn(ctx, l.Replica, eventID, sectionID)
	}
	conn, err := l.Replica.Acquire(ctx)
	if err != nil {
		l.fellBack()
		return store.SectionSeatsOn(ctx, l.Primary, eventID, sectionID)
	}
	defer conn.Release()
	maxWait, poll := l.MaxWait, l.Poll
	if maxWait <= 0 {
		maxWait = DefaultReplicaWait
	}
	if poll <= 0 {
		poll = 2 * time.Millisecond
	}
	deadline := start.Add(maxWait)
	for {
		var fresh bool
		err := conn.QueryRow(ctx, "SELECT NOT pg_is_in_recovery() OR coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)",
			target).Scan(&fresh)
		if err != nil {
			if ctx.Err() != nil {
				return store.SectionSeats{}, ctx.Err()
			}
			l.fellBack()
			return store.SectionSeatsOn(ctx, l.Primary, eventID, sectionID)
		}
		if fresh {
			l.waits.Observe(time.Since(start).Seconds())
			return store.SectionSeatsOn(ctx, conn, eventID, sectionID)
		}
		if time.Now().After(deadline) {
			l.waits.Observe(time.Since(start).Seconds())
			l.fellBack()
			return store.SectionSeatsOn(ctx, l.Primary, eventID, sectionID)
		}
		select {
		case <-time.After(poll):
		case <-ctx.Done():
			return store.SectionSeats{}, ctx.Err()
		}
	}
}

// openFreshLoader opens the primary's read-only pool (four connections:
// one statement per fill, and fills are one per section and TTL) for a
// browse plane on a replica.
func openFreshLoader(ctx context.Context, dbURL string, replica *pgxpool.Pool, opts store.PoolOptions) (*FreshLoader, error) {
	opts.MaxConns = 4
	opts.ApplicationName = "encore-browse-primary"
	primary, err := store.OpenReader(ctx, dbURL, store.ReaderRole, opts)
	if err != nil {
		return nil, fmt.Errorf("browse plane: the primary's read-only pool: %w", err)
	}
	return NewFreshLoader(primary, replica), nil
}
