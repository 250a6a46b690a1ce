// Package store is Encore's data layer: every SQL statement of the buy plane
// runs here, and only here are PostgreSQL error codes turned into domain
// errors. PostgreSQL is the authority on who owns a seat; the constraints in
// schema/migrations carry the rules and this package's transactions keep them
// short: a bounded lock_timeout and statement_timeout on every one.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options bound every buy-plane transaction.
type Options struct {
	LockTimeout      time.Duration // default 2s
	StatementTimeout time.Duration // default 5s
}

// Store is the buy plane's data layer on one pool: one repository a
// domain, each with its SQL in the files beside it, all sharing the pool
// and the transaction timeouts.
type Store struct {
	base
	// Holds: seat holds and their inventory (pre-checks, the deciding
	// transaction, release and expiry, idempotency keys, the inventory
	// audit).
	Holds *Holds
	// Bookings: bookings and their payments, provider events, fraud
	// signals, support's search.
	Bookings *Bookings
	// Tickets: issued tickets and the gate manifest's rows.
	Tickets *Tickets
	// Catalogue: venues, events, seat blocks and an event's controls.
	Catalogue *Catalogue
	// Promotions: promotion codes.
	Promotions *Promotions
	// Hotels: properties, stays and walks.
	Hotels *Hotels
	// Orgs: users, organisations' audit of admin actions.
	Orgs *Orgs
	// Jobs: event cancellation jobs and the outbox relay's lease.
	Jobs *Jobs
	// Waitlists: sold-out events' waitlists and their offers.
	Waitlists *Waitlists
	// Door: the scans venue gates report, counted for the organiser.
	Door *Door
	// Resale: fan-to-fan resale listings and their payouts.
	Resale *Resale
}

// base is what every repository shares: the pool, the timeouts, and the
// Store, through which one repository's transaction reaches another's.
type base struct {
	pool *pgxpool.Pool
	opts Options
	st   *Store
	// connTimeouts: every connection of the pool starts with exactly the
	// store's lock_timeout and statement_timeout (OpenPool's runtime
	// parameters), so a transaction need not set them again.
	connTimeouts bool
}

// Holds is the repository of seat holds and their inventory.
type Holds struct{ base }

// Bookings is the repository of bookings and payments.
type Bookings struct{ base }

// Tickets is the repository of issued tickets.
type Tickets struct{ base }

// Catalogue is the repository of venues and events.
type Catalogue struct{ base }

// Promotions is the repository of promotion codes.
type Promotions struct{ base }

// Hotels is the repository of properties, stays and walks.
type Hotels struct{ base }

// Orgs is the repository of users and the admin audit.
type Orgs struct{ base }

// Jobs is the repository of background jobs and the relay lease.
type Jobs struct{ base }

// Waitlists is the repository of waitlists and offers.
type Waitlists struct{ base }

// Door is the repository of the scans gates report.
type Door struct{ base }

// New wraps a pool.
func New(pool *pgxpool.Pool, opts Options) *Store {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.StatementTimeout <= 0 {
		opts.StatementTimeout = 5 * time.Second
	}
	s := &Store{}
	b := base{pool: pool, opts: opts, st: s, connTimeouts: startsWith(pool, opts)}
	s.base = b
	s.Holds, s.Bookings, s.Tickets = &Holds{b}, &Bookings{b}, &Tickets{b}
	s.Catalogue, s.Promotions, s.Hotels = &Catalogue{b}, &Promotions{b}, &Hotels{b}
	s.Orgs, s.Jobs, s.Waitlists, s.Door, s.Resale = &Orgs{b}, &Jobs{b}, &Waitlists{b}, &Door{b}, &Resale{b}
	return s
}

// Pool exposes the pool for health checks.
func (s *base) Pool() *pgxpool.Pool { return s.pool }

// PoolOptions shape a pool. Every pool is built by OpenPool, so every
// connection carries a statement_timeout and lock_timeout: a runaway query
// is cancelled by the server rather than holding a connection.
type PoolOptions struct {
	MaxConns         int32
	StatementTimeout time.Duration // every statement of every connection; 0: none
	LockTimeout      time.Duration // 0: none
	// Role, when set, is SET ROLE on every new connection (the login must be
	// a member of it).
	Role     string
	ReadOnly bool // default_transaction_read_only
	// QuietBookingChanges: this pool's writes send no booking-change
	// notifications (migration 0045; ENCORE_BOOKING_CHANGES=false).
	QuietBookingChanges bool
	ApplicationName     string
	Tracer              pgx.QueryTracer
}

// OpenPool connects a pool shaped by opts.
func OpenPool(ctx context.Context, url string, opts PoolOptions) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse database URL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	cfg.MaxConnIdleTime = 5 * time.Minute
	rp := cfg.ConnConfig.RuntimeParams
	if opts.StatementTimeout > 0 {
		rp["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	}
	if opts.LockTimeout > 0 {
		rp["lock_timeout"] = strconv.FormatInt(opts.LockTimeout.Milliseconds(), 10)
	}
	if opts.ReadOnly {
		rp["default_transaction_read_only"] = "on"
	}
	if opts.QuietBookingChanges {
		rp["encore.booking_changes"] = "off"
	}
	if opts.ApplicationName != "" {
		rp["application_name"] = opts.ApplicationName
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	if opts.Role != "" {
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, "SET ROLE "+pgx.Identifier{opts.Role}.Sanitize())
			return err
		}
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// AdminStatementTimeout bounds each statement of the one-off commands
// (migrations, seeding, audit) that Open serves.
const AdminStatementTimeout = 5 * time.Minute

// Open connects a small pool for one-off commands (migrations, demo data,
// audit): statements may run long, but not forever.
func Open(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	return OpenPool(ctx, url, PoolOptions{MaxConns: maxConns, StatementTimeout: AdminStatementTimeout})
}

// Connections counts the server's connections to the pool's database
// (pg_stat_activity, every client's): the soak's plot watches it stay
// flat.
func Connections(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()`).Scan(&n)
	return n, err
}

// startsWith says whether every connection of pool starts with opts'
// timeouts, as OpenPool sets them: then they hold in every transaction
// unless a statement changes them for the session, which nothing in Encore
// does (SET LOCAL ends with its transaction).
func startsWith(pool *pgxpool.Pool, opts Options) bool {
	rp := pool.Config().ConnConfig.RuntimeParams
	return rp["lock_timeout"] == strconv.FormatInt(opts.LockTimeout.Milliseconds(), 10) &&
		rp["statement_timeout"] == strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
}

// tx runs fn in a transaction with the store's timeouts: the connection's
// own when they are the store's (no statement, no round trip), else set for
// the transaction.
func (s *base) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if s.connTimeouts {
			return fn(tx)
		}
		// One round trip for both settings; SET LOCAL ends with the transaction.
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d; SET LOCAL statement_timeout = %d",
			s.opts.LockTimeout.Milliseconds(), s.opts.StatementTimeout.Milliseconds())); err != nil {
			return err
		}
		return fn(tx)
	})
}

// queryIDs runs a query whose one column is a UUID (reservations' ids, in
// the main) and returns that column of every row.
func queryIDs(ctx context.Context, q rowsQuerier, sql string, args ...any) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}

// orNotFound is err with pgx.ErrNoRows, a read of one row that found
// none, made ErrNotFound.
func orNotFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// queryOne runs a query of at most one row and reads it with scan; when
// there is none the answer is absent (ErrNotFound, or what none means to
// the caller).
func queryOne[T any](ctx context.Context, q rowsQuerier, absent error, scan pgx.RowToFunc[T], sql string, args ...any) (T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, absent
	}
	return v, err
}

// Domain errors. The API maps each to one problem type.
var (
	ErrNotFound          = errors.New("store: not found")
	ErrHoldExpired       = errors.New("store: hold expired")
	ErrNotPending        = errors.New("store: reservation is no longer pending")
	ErrKeyReused         = errors.New("store: idempotency key reused with another request")
	ErrRequestInProgress = errors.New("store: a request with this idempotency key is in progress")
	ErrBusy              = errors.New("store: contention, retry")
	ErrNotOnSale         = errors.New("store: event not on sale")
	// ErrOtherOrg: the object exists but belongs to another organiser.
	ErrOtherOrg = errors.New("store: belongs to another organisation")
)

// NotOnSaleError says why a hold was refused outside the event's sale, with
// the sale's times. It is ErrNotOnSale for errors.Is.
type NotOnSaleError struct {
	Reason    string
	OnsaleAt  time.Time
	OffsaleAt *time.Time // nil: the sale does not close by itself
}

func (e *NotOnSaleError) Error() string { return "store: event not on sale: " + e.Reason }

// Is makes every NotOnSaleError an ErrNotOnSale.
func (e *NotOnSaleError) Is(target error) bool { return target == ErrNotOnSale }

// SeatUnavailableError names the seats another fan owns and offers others.
type SeatUnavailableError struct {
	SeatIDs      []string
	Alternatives []string
	Detail       string
}

func (e *SeatUnavailableError) Error() string { return "store: seats unavailable: " + e.Detail }

// PendingCheckoutError says the fan already holds seats for this event.
type PendingCheckoutError struct{ HoldID string }

func (e *PendingCheckoutError) Error() string {
	return "store: a pending checkout exists: " + e.HoldID
}

// PurchaseLimitError says the cart would take the fan past the event's limit.
type PurchaseLimitError struct{ Limit, Owned, Requested int }

func (e *PurchaseLimitError) Error() string {
	return fmt.Sprintf("store: purchase limit %d: owns %d, asked %d", e.Limit, e.Owned, e.Requested)
}

// InvalidError is bad input only the database can detect (an unknown seat).
type InvalidError struct{ Field, Message string }

func (e *InvalidError) Error() string { return "store: invalid " + e.Field + ": " + e.Message }

// PromotionError says a promotion code cannot be used.
type PromotionError struct{ Code, Reason string }

func (e *PromotionError) Error() string { return "store: promotion " + e.Code + ": " + e.Reason }

// PostgreSQL error codes this package maps.
const (
	pgUniqueViolation  = "23505"
	pgCheckViolation   = "23514"
	pgLockNotAvailable = "55P03"
	pgDeadlock         = "40P01"
	pgSerialization    = "40001"
	pgQueryCanceled    = "57014"
	pgBadEncoding      = "22021"
	pgUntranslatable   = "22P05"
)

// inputError turns text PostgreSQL cannot store (a NUL, bad UTF-8) into a
// refusal of the request rather than a failure of the database.
func inputError(err error) error {
	switch code, _ := pgCode(err); code {
	case pgBadEncoding, pgUntranslatable:
		return &InvalidError{Field: "body", Message: "contains characters that cannot be stored"}
	}
	return err
}

func pgCode(err error) (string, string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}

// transient reports errors that mean "try again": lock timeouts, deadlocks,
// serialisation failures and statement timeouts.
func transient(err error) bool {
	switch code, _ := pgCode(err); code {
	case pgLockNotAvailable, pgDeadlock, pgSerialization, pgQueryCanceled:
		return true
	}
	return false
}

// IsSuperuser reports whether the pool's login is a PostgreSQL superuser:
// then every grant is moot, and a bug or an injection could drop the schema.
func IsSuperuser(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var super bool
	err := pool.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super)
	return super, err
}
