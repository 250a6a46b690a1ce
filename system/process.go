package system

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/backpressure"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/booking/saga"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/waitingroom"
)

// Process is the one composition root: every plane of an Encore process,
// wired once. encore dev, encore api and encore worker all build it with New
// and then serve the API, run the worker and loops, or both.
type Process struct {
	Config   config.Config
	Log      *slog.Logger
	Pool     *pgxpool.Pool
	Redis    *redis.Client
	Registry *prometheus.Registry
	Temporal client.Client
	Store    *store.Store

	Holds      *holds.Service
	Bookings   *booking.Service
	Room       *waitingroom.Room
	Browse     *BrowsePlane
	Tickets    *tickets.Wallet
	Activities *saga.Activities
	Sessions   *session.Issuer
	// Saga is the booking saga's load as every process shares it: checkouts
	// and holds on unmetered events are refused past its bounds, and the
	// waiting room's adaptive mode steers by it.
	Saga *backpressure.Monitor

	sagaOnce sync.Once
	trusted  []netip.Prefix
}

// New connects to PostgreSQL, Redis and Temporal at the given addresses and
// wires every plane.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, dbURL, redisURL, temporalAddr string) (*Process, error) {
	if err := CheckPaymentConfig(cfg); err != nil {
		return nil, err
	}
	trusted, err := api.ParseTrustedProxies(cfg.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("ENCORE_TRUSTED_PROXIES: %w", err)
	}
	pool, rdb, err := Connect(ctx, cfg, dbURL, redisURL)
	if err != nil {
		return nil, err
	}
	p := &Process{Config: cfg, Log: log, Pool: pool, Redis: rdb, Registry: Registry(),
		Sessions: session.NewIssuer(cfg.SessionSecret.Reveal()), trusted: trusted}
	p.Store = OpenStore(cfg, pool)
	p.Saga = SagaLoad(cfg, rdb, p.Registry, log)
	p.Holds = BuyPlane(cfg, p.Store, rdb, p.Registry, log)
	p.Holds.Saga = p.Saga
	p.Room = AdmitPlane(cfg, rdb, p.Store, p.Holds, p.Registry, log)
	if cfg.RoomAdaptive {
		p.Room.SetAdaptive(nil, &waitingroom.StandardSignals{Saga: p.Saga, Payments: p.Store})
	}
	if p.Browse, err = NewBrowsePlane(ctx, cfg, dbURL, rdb, p.Registry, log); err != nil {
		p.Close()
		return nil, err
	}
	keyring, err := TicketKeyring(cfg)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.Tickets = &tickets.Wallet{Store: p.Store, Keyring: keyring}
	if p.Activities, err = BookingActivities(cfg, p.Store, log); err != nil {
		p.Close()
		return nil, err
	}
	p.Temporal, err = client.DialContext(ctx, client.Options{
		HostPort:  temporalAddr,
		Namespace: cfg.TemporalNamespace,
		Logger:    sdklog.NewStructuredLogger(log.With("component", "temporal-client")),
	})
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("connect to Temporal at %s: %w", temporalAddr, err)
	}
	p.Saga.ProbeBacklog(func(ctx context.Context) (time.Duration, error) {
		return saga.Backlog(ctx, p.Temporal, cfg.TemporalNamespace, saga.TaskQueue)
	})
	p.Bookings = &booking.Service{Holds: p.Holds, Store: p.Store, Temporal: p.Temporal, Log: log,
		WebhookSecret: cfg.StripeWebhookSecret.Reveal(), Saga: p.Saga}
	p.Bookings.Register(p.Registry)
	return p, nil
}

// shareSagaLoad publishes this process's saga load and reads every
// process's, once per process whether it serves the API, the worker or both.
func (p *Process) shareSagaLoad(ctx context.Context) {
	p.sagaOnce.Do(func() { go p.Saga.Run(ctx) })
}

// Close releases what New opened.
func (p *Process) Close() {
	if p.Room != nil {
		p.Room.Close()
	}
	if p.Temporal != nil {
		p.Temporal.Close()
	}
	if p.Browse != nil {
		p.Browse.Close()
	}
	_ = p.Redis.Close()
	p.Pool.Close()
}

// API is the HTTP edge over the process's planes.
func (p *Process) API() *api.Server {
	checks := Checks(p.Pool, p.Redis, func(ctx context.Context) error {
		_, err := p.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	})
	return &api.Server{Holds: p.Holds, Bookings: p.Bookings, Room: p.Room, Browse: p.Browse.API, Tickets: p.Tickets,
		Sessions: p.Sessions, Checks: checks, Gatherer: p.Registry, Log: p.Log, TrustedProxies: p.trusted}
}

// ServeAPI runs the fan API and the live seat-map hub until ctx ends.
func (p *Process) ServeAPI(ctx context.Context) (string, <-chan error, error) {
	p.shareSagaLoad(ctx)
	go p.Browse.Hub.Run(ctx)
	addr, done, err := Serve(ctx, p.Config.HTTPAddr, p.API().Handler())
	if err != nil {
		return "", nil, err
	}
	return addr.String(), done, nil
}

// RunWorker runs the Temporal worker and the background loops (sweeper,
// outbox relay, admitter, reconciliation schedule) until ctx ends. The
// returned stop waits for the worker to finish its tasks; call it before
// Close.
func (p *Process) RunWorker(ctx context.Context) (stop func(), err error) {
	w := saga.NewWorker(p.Temporal, saga.Dependencies{Holds: &saga.HoldActivities{Service: p.Holds}, Booking: p.Activities})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	if err := saga.EnsureReconcileSchedule(ctx, p.Temporal, p.Config.ReconcileEvery, 24*time.Hour); err != nil {
		p.Log.Warn("reconciliation schedule", "err", err)
	}
	p.shareSagaLoad(ctx)
	go p.Holds.RunSweeper(ctx, p.Config.SweepInterval, p.Config.SweepBatch)
	go NewRelay(p.Config, p.Store, p.Browse.Cache, p.Registry, p.Log).Run(ctx)
	go p.Room.RunAdmitter(ctx, "")
	return w.Stop, nil
}
