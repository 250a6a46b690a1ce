// Package system assembles Encore's processes from their parts: it connects
// to (or, for encore dev, provides) PostgreSQL, Redis and Temporal, and wires
// the API, the worker and the background loops. The parts know nothing of
// each other; only this package does.
package system

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/backpressure"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/internal/redisurl"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/outbox"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/schema"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/waitingroom"
)

// Logger builds the process logger at the configured level.
func Logger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// Connect opens the pool and the Redis client for an already running infra
// (encore api and encore worker in production do not start servers).
// redisURL may name one server, a Redis Cluster or a Sentinel master (see
// package redisurl).
func Connect(ctx context.Context, cfg config.Config, dbURL, redisURL string) (*pgxpool.Pool, redis.UniversalClient, error) {
	if dbURL == "" || redisURL == "" {
		return nil, nil, errors.New("ENCORE_DATABASE_URL and ENCORE_REDIS_URL are required (encore dev provides them itself)")
	}
	pool, err := store.OpenPool(ctx, dbURL, store.PoolOptions{MaxConns: cfg.DBMaxConns,
		StatementTimeout: cfg.DBStatementTimeout, LockTimeout: cfg.LockTimeout, ApplicationName: "encore",
		QuietBookingChanges: !cfg.BookingChanges})
	if err != nil {
		return nil, nil, err
	}
	// Short timeouts and one dial a connection: Redis is advice and
	// admission, and must fail fast (each caller has its fallback).
	rdb, err := redisurl.Open(redisURL, redisurl.Timeouts{Dial: 500 * time.Millisecond,
		Read: 300 * time.Millisecond, Write: 300 * time.Millisecond, DialAttempts: 1})
	if err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("ENCORE_REDIS_URL: %w", err)
	}
	return pool, rdb, nil
}

// Migrate applies the embedded migrations under their advisory lock and
// returns the schema version.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	return schema.Migrate(ctx, pool)
}

// Registry is a Prometheus registry with Go runtime and process metrics.
func Registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// OpenStore is the buy plane's data layer over pool, with the configured
// lock and statement timeouts.
func OpenStore(cfg config.Config, pool *pgxpool.Pool) *store.Store {
	return store.New(pool, store.Options{LockTimeout: cfg.LockTimeout, StatementTimeout: cfg.StatementTimeout})
}

// BuyPlane is the hold service over its store, hints and limiter.
func BuyPlane(cfg config.Config, st *store.Store, rdb redis.UniversalClient, reg prometheus.Registerer, log *slog.Logger) *holds.Service {
	svc := &holds.Service{
		Store: st,
		Limiter: ratelimit.New(rdb, "rl:hold:", ratelimit.Limit{Count: cfg.HoldRatePerMinute, Per: time.Minute,
			Burst: max(cfg.HoldRatePerMinute/6, 1)}),
		MaxUnpaidRoomNights: cfg.MaxUnpaidRoomNights,
		Log:                 log,
	}
	if cfg.HintsEnabled {
		svc.Hints = seathint.New(rdb, "")
	}
	svc.Register(reg)
	return svc
}

// SandboxKey is the payment sandbox's API key (the default of
// ENCORE_STRIPE_KEY): with it, stripe-go talks to the sandbox.
const SandboxKey = "sk_test_encore_sandbox"

// SandboxWebhookURL is where the payment sandbox posts its events:
// ENCORE_PSP_WEBHOOK_URL, else the API's public URL.
func SandboxWebhookURL(cfg config.Config) string {
	if cfg.PSPWebhookURL != "" {
		return cfg.PSPWebhookURL
	}
	return PublicURL(cfg) + "/v1/webhooks/stripe"
}

// Payments builds the stripe-go payment client: the sandbox at
// ENCORE_PSP_ADDR with the sandbox key, Stripe itself with a real key, or
// ENCORE_STRIPE_API_URL when set.
func Payments(cfg config.Config) *payments.Client {
	base := cfg.StripeAPIURL
	if base == "" && cfg.StripeKey.Reveal() == SandboxKey {
		base = HTTPURL(cfg.PSPAddr)
	}
	hosted := ""
	if cfg.StripeKey.Reveal() == SandboxKey {
		hosted = base
	}
	return payments.New(payments.Config{APIKey: cfg.StripeKey.Reveal(), BaseURL: base, HostedPage: hosted})
}

// BookingActivities builds the saga's side effects.
func BookingActivities(cfg config.Config, st *store.Store, log *slog.Logger) (*activities.Booking, error) {
	keyring, err := TicketKeyring(cfg)
	if err != nil {
		return nil, err
	}
	public, err := cfg.EffectivePublicURL()
	if err != nil {
		return nil, err
	}
	if _, err := MailTransport(cfg); err != nil {
		return nil, err
	}
	return &activities.Booking{Store: st, Payments: Payments(cfg), Keyring: keyring, Mailer: Mailer(cfg, st), Log: log,
		ReturnURL: public + "/v1/payments/return", PublicURL: public, NoLoopbackReturn: cfg.Env == config.Production,
		IPSecret: []byte(cfg.FraudIPSecret.Reveal())}, nil
}

// Mailer is how the process sends fans' emails: through the mail queue
// (outbox.Mail: retries, a dead-letter list) to MailTransport when there is
// a store, straight to the transport without one. A transport that does
// not configure is refused by BookingActivities at start.
func Mailer(cfg config.Config, st *store.Store) notify.Mailer {
	t, err := MailTransport(cfg)
	if err != nil {
		t = brokenMailer{err}
	}
	if st == nil {
		return t
	}
	return &outbox.Mail{Store: st, Transport: t}
}

// MailTransport is the configured SMTP server (ENCORE_SMTP_URL, else
// ENCORE_SMTP_ADDR; encore dev sets the URL to its Mailpit), or the
// mailbox folder ENCORE_DATA_DIR/mailbox when there is none.
func MailTransport(cfg config.Config) (notify.Mailer, error) {
	switch {
	case cfg.SMTPURL != "":
		s, err := notify.ParseSMTPURL(cfg.SMTPURL.Reveal(), cfg.SMTPFrom)
		if err != nil {
			return nil, fmt.Errorf("ENCORE_SMTP_URL: %w", err)
		}
		return s, nil
	case cfg.SMTPAddr != "":
		s, err := notify.ParseSMTPAddr(cfg.SMTPAddr, cfg.SMTPFrom, cfg.SMTPUser, cfg.SMTPPassword.Reveal())
		if err != nil {
			return nil, fmt.Errorf("ENCORE_SMTP_ADDR: %w", err)
		}
		return s, nil
	}
	return notify.Mailbox{Dir: filepath.Join(cfg.DataDir, "mailbox"), From: cfg.SMTPFrom}, nil
}

// MailQueue is the loop that retries the mail queue's due messages
// (every worker runs one; each message is claimed by one).
func MailQueue(cfg config.Config, st *store.Store, reg prometheus.Registerer, log *slog.Logger) *outbox.Mail {
	t, err := MailTransport(cfg)
	if err != nil {
		t = brokenMailer{err}
	}
	q := &outbox.Mail{Store: st, Transport: t, Log: log.With("component", "mail")}
	q.Register(reg)
	return q
}

// brokenMailer fails every send with the configuration's error.
type brokenMailer struct{ err error }

func (b brokenMailer) Send(context.Context, notify.Message) error { return b.err }

// TicketKeyring is the keyring that seals ticket QR secrets
// (ENCORE_TICKET_SEALING_KEY).
func TicketKeyring(cfg config.Config) (*tickets.Keyring, error) {
	key, err := tickets.ParseKey(cfg.TicketSealingKey.Reveal())
	if err != nil {
		return nil, fmt.Errorf("ENCORE_TICKET_SEALING_KEY: %w", err)
	}
	return tickets.NewKeyring(key)
}

// Checks are the readiness checks of the API.
func Checks(pool *pgxpool.Pool, rdb redis.UniversalClient, temporal func(context.Context) error) []api.Check {
	checks := []api.Check{
		{Name: "postgres", Ping: pool.Ping},
		{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
	}
	if temporal != nil {
		checks = append(checks, api.Check{Name: "temporal", Ping: temporal})
	}
	return checks
}

// Timeouts bound one HTTP connection of a listener.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
	MaxHeaderBytes                int
}

// APITimeouts are the fan API's and the gate's: headers within 5s, a whole
// request within 30s, a response within 90s (the longest route, a checkout,
// waits on its workflow Update up to a minute). A WebSocket is hijacked
// before these apply to it, and net/http clears the deadlines then.
var APITimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 30 * time.Second, Write: 90 * time.Second,
	Idle: 2 * time.Minute, MaxHeaderBytes: 64 << 10}

// AdminTimeouts are the admin listener's: as the API's, but a CPU profile or
// trace may stream for up to its ?seconds= (at most a few minutes).
var AdminTimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 30 * time.Second, Write: 5 * time.Minute,
	Idle: 2 * time.Minute, MaxHeaderBytes: 64 << 10}

// Serve listens on addr with APITimeouts until ctx ends, then drains for up
// to 10 seconds.
func Serve(ctx context.Context, addr string, h http.Handler) (net.Addr, <-chan error, error) {
	return ServeWith(ctx, addr, h, APITimeouts)
}

// ServeWith is Serve with other timeouts.
func ServeWith(ctx context.Context, addr string, h http.Handler, t Timeouts) (net.Addr, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write,
		IdleTimeout: t.Idle, MaxHeaderBytes: t.MaxHeaderBytes}
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), done, nil
}

// DataPath is a file under the data folder, created as needed.
func DataPath(cfg config.Config, parts ...string) string {
	p := filepath.Join(append([]string{cfg.DataDir}, parts...)...)
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	return p
}

// HTTPURL turns a listen address into a URL for humans.
func HTTPURL(addr string) string {
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	return "http://" + addr
}

// AdmitPlane builds the waiting room of metered events over the hold
// service's store (read-only counts) and Redis, makes it the service's
// admission (its Passes) and registers its metrics. The edge serves it; its
// Admitter runs in dev and worker.
func AdmitPlane(cfg config.Config, rdb redis.UniversalClient, st *store.Store, svc *holds.Service, reg *prometheus.Registry, log *slog.Logger) *waitingroom.Room {
	room := waitingroom.New(rdb, st.Holds, []byte(cfg.RoomPassSeed.Reveal()), waitingroom.Options{
		Capacity: cfg.RoomCapacity, Batch: cfg.RoomBatch, Tick: cfg.RoomTick, PassTTL: cfg.RoomPassTTL, Rechoose: cfg.RoomRechoose,
		JoinPerAccount: cfg.RoomJoinPerMinute, JoinPerIP: cfg.RoomJoinIPPerMinute,
		HoldPerIP: cfg.RoomJoinIPPerMinute, CheckoutPerIP: cfg.RoomJoinIPPerMinute,
		Risk: waitingroom.Risk{Difficulty: cfg.RoomPowDifficulty},
		Log:  log.With("component", "waitingroom"),
	})
	room.Register(reg)
	svc.Admission = room.Passes()
	return room
}

// SagaLoad builds the monitor of the booking saga's load, shared through
// Redis, with the configured bounds, and registers its metrics.
func SagaLoad(cfg config.Config, rdb redis.UniversalClient, reg prometheus.Registerer, log *slog.Logger) *backpressure.Monitor {
	m := backpressure.New(rdb, "", backpressure.Bounds{MaxLatency: cfg.SagaMaxLatency,
		MaxErrorRate: float64(cfg.SagaMaxErrorPercent) / 100, MaxInFlight: cfg.SagaMaxInFlight, MaxBacklog: cfg.SagaMaxBacklog,
		RetryAfter: cfg.SagaRetryAfter}, log.With("component", "backpressure"))
	m.Register(reg)
	return m
}

// CheckPaymentConfig refuses to run against a real provider with the
// sandbox's public webhook secret (or none): anyone could then forge the
// events money moves on (money moves only on a verified provider event).
func CheckPaymentConfig(cfg config.Config) error {
	if cfg.StripeKey.Reveal() == SandboxKey {
		return nil
	}
	if s := cfg.StripeWebhookSecret.Reveal(); s == "" || s == config.Default().StripeWebhookSecret.Reveal() {
		return errors.New("ENCORE_STRIPE_KEY is a real key: set ENCORE_STRIPE_WEBHOOK_SECRET to the endpoint's signing secret")
	}
	return nil
}
