package system

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/backpressure"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/controls"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/invoices"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/outbox"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/temporalclient"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/waitingroom"
	"github.com/encore-tickets/encore/waitlist"
	encworker "github.com/encore-tickets/encore/worker"
	"github.com/encore-tickets/encore/workflows"
)

// Process is the one composition root: every plane of an Encore process,
// wired once. encore dev, encore api and encore worker all build it with New
// and then serve the API, run the worker and loops, or both.
type Process struct {
	Config   config.Config
	Log      *slog.Logger
	Pool     *pgxpool.Pool
	Redis    redis.UniversalClient
	Registry *prometheus.Registry
	Temporal client.Client
	Store    *store.Store

	Holds *holds.Service
	// Dials are the operator's runtime dials as this process follows them.
	Dials    *controls.Watcher
	Bookings *booking.Service
	// Waitlist offers seats that come back to the fans waiting for them.
	Waitlist   *waitlist.Offers
	Room       *waitingroom.Room
	Browse     *BrowsePlane
	Tickets    *tickets.Wallet
	Transfers  *tickets.Transfers
	Resale     *tickets.Resale
	Activities *activities.Booking
	// Sessions is the development issuer of the demo login (nil when off);
	// Tokens verifies bearer tokens, set by ServeAPI.
	Sessions *session.Issuer
	Tokens   *session.Verifier
	// Saga is the booking saga's load as every process shares it: checkouts
	// and holds on unmetered events are refused past its bounds, and the
	// waiting room's adaptive mode steers by it.
	Saga *backpressure.Monitor

	// AdminHandlers are mounted on the admin listener beside /metrics and
	// /debug/pprof/, by ServeMux pattern (for example "/codec/"). Set them
	// before ServeAPI or RunWorker.
	AdminHandlers map[string]http.Handler
	// Sockets caps the open queue and live seat-map sockets of the API.
	Sockets *api.SocketCap
	// Reads limits the API's browse routes per client address.
	Reads *api.ReadLimits
	// Edge are the API's per-route metrics.
	Edge *api.EdgeMetrics

	sagaOnce sync.Once
	// The worker and the outbox relay, which a drill may stop and start.
	runMu     sync.Mutex
	worker    sdkworker.Worker
	relay     *outbox.Relay
	relayCtx  context.Context
	stopRelay context.CancelFunc
	relayDone chan struct{}
	dialsOnce sync.Once
	// changesOnce: the booking-change listener, once per process.
	changesOnce sync.Once
	trusted     []netip.Prefix
	adminOnce   sync.Once
	adminAddr   string
	adminErr    error
	// The verifier of bearer tokens, resolved once (identity) and read by
	// the admin listener's handlers while ServeAPI may still be starting.
	identityOnce sync.Once
	identityErr  error
	verifier     atomic.Pointer[session.Verifier]
}

// identity resolves the verifier of bearer tokens once (the configured
// issuer's keys, else the development issuer's) for the API and the admin
// listener's codec and drill switches.
func (p *Process) identity(ctx context.Context) (*session.Verifier, error) {
	p.identityOnce.Do(func() {
		v, err := Identity(ctx, p.Config, p.Sessions, p.Log)
		if err != nil {
			p.identityErr = err
			return
		}
		p.verifier.Store(v)
	})
	return p.verifier.Load(), p.identityErr
}

// TokenVerifier is the verifier of bearer tokens once ServeAPI or
// ServeAdmin resolved it; nil before, or when the process has no identity
// provider (a worker without ENCORE_OIDC_ISSUER).
func (p *Process) TokenVerifier() *session.Verifier { return p.verifier.Load() }

// New connects to PostgreSQL, Redis and Temporal at the given addresses and
// wires every plane.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, dbURL, redisURL, temporalAddr string) (*Process, error) {
	if err := CheckPaymentConfig(cfg); err != nil {
		return nil, err
	}
	if err := CheckDemoLogin(cfg); err != nil {
		return nil, err
	}
	if _, err := cfg.EffectivePublicURL(); err != nil {
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
		Sessions: DemoIssuer(cfg), trusted: trusted}
	p.Store = OpenStore(cfg, pool)
	codec, err := CodecHandler(cfg, p.TokenVerifier)
	if err != nil {
		p.Close()
		return nil, err
	}
	// The Web UI decodes history through the admin listener only, and only
	// for a support or admin token or the codec bearer.
	p.AdminHandlers = map[string]http.Handler{"/codec/": codec}
	p.Sockets = api.NewSocketCap(cfg.WSMaxPerIP, cfg.WSMaxPerProcess)
	p.Sockets.Register(p.Registry)
	p.Reads = api.NewReadLimits(rdb, "", cfg.ReadPerIPPerMinute)
	p.Reads.Register(p.Registry)
	p.Edge = api.NewEdgeMetrics(p.Registry)
	p.Saga = SagaLoad(cfg, rdb, p.Registry, log)
	p.Holds = BuyPlane(cfg, p.Store, rdb, p.Registry, log)
	p.Holds.Saga = p.Saga
	p.Dials = controls.NewWatcher(p.Store.Catalogue, cfg.ControlsPoll, log.With("component", "controls"))
	p.Dials.Register(p.Registry)
	p.Holds.Dials = p.Dials
	p.Room = AdmitPlane(cfg, rdb, p.Store, p.Holds, p.Registry, log)
	p.Room.Capacity().SetControls(p.Dials)
	public, err := cfg.EffectivePublicURL()
	if err != nil {
		p.Close()
		return nil, err
	}
	p.Waitlist = &waitlist.Offers{Store: p.Store, Room: p.Room, Mailer: Mailer(cfg, p.Store), PublicURL: public,
		TTL: cfg.RoomPassTTL, Log: log.With("component", "waitlist")}
	p.Waitlist.Register(p.Registry)
	if cfg.RoomAdaptive {
		p.Room.Capacity().SetAdaptive(nil, &waitingroom.StandardSignals{Saga: p.Saga, Payments: p.Store.Bookings})
	}
	if p.Browse, err = NewBrowsePlane(ctx, cfg, dbURL, rdb, p.Registry, log); err != nil {
		p.Close()
		return nil, err
	}
	p.Browse.API.Dials = p.Dials
	p.Browse.Cache.SetTTLFor(func(eventID string, def time.Duration) time.Duration {
		return p.Dials.For(eventID).CacheTTL(def)
	})
	keyring, err := TicketKeyring(cfg)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.Tickets = &tickets.Wallet{Store: p.Store, Keyring: keyring}
	p.Transfers = &tickets.Transfers{Store: p.Store, Keyring: keyring, Mailer: Mailer(cfg, p.Store), TTL: cfg.TransferTTL,
		Limits:    store.TransferLimits{PerTicket: cfg.TransferPerTicket, OpenPerFan: cfg.TransferOpenPerFan},
		PublicURL: public, Log: log.With("component", "transfers")}
	first := cfg.ResaleWaitlistFirst
	if first == 0 {
		first = -1 // tickets.Resale reads 0 as its default
	}
	p.Resale = &tickets.Resale{Store: p.Store, Mailer: Mailer(cfg, p.Store), WaitlistFirst: first, PublicURL: public,
		Limits: store.ResaleLimits{PerTicket: cfg.ResaleListingsPerTicket, ActivePerFan: cfg.ResaleActivePerFan, Hands: cfg.TransferPerTicket},
		Log:    log.With("component", "resale")}
	if p.Activities, err = BookingActivities(cfg, p.Store, log); err != nil {
		p.Close()
		return nil, err
	}
	tcfg, err := withTemporalKey(cfg, temporalAddr)
	if err != nil {
		p.Close()
		return nil, err
	}
	opts, err := temporalclient.Options(tcfg, temporalAddr, log)
	if err != nil {
		p.Close()
		return nil, err
	}
	// Every payload this client (and the worker built on it) writes is
	// encrypted: the history Temporal keeps holds no fan data in clear.
	p.Temporal, err = client.DialContext(ctx, opts)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("connect to Temporal at %s: %w", temporalAddr, err)
	}
	// Against a cluster Encore did not start, the namespace may lack the
	// saga's search attributes: register them now, or refuse to run.
	if err := temporalclient.EnsureNamespace(ctx, p.Temporal, cfg.TemporalNamespace, workflows.SearchAttributes); err != nil {
		p.Close()
		return nil, err
	}
	p.Activities.Sagas = workflows.Sagas{Client: p.Temporal}
	p.Activities.Metrics = activities.NewMetrics(p.Registry)
	p.Saga.ProbeBacklog(func(ctx context.Context) (time.Duration, error) {
		return workflows.Backlog(ctx, p.Temporal, cfg.TemporalNamespace, workflows.TaskQueue)
	})
	p.Bookings = &booking.Service{Holds: p.Holds, Store: p.Store, Temporal: p.Temporal, Log: log,
		WebhookSecret: cfg.StripeWebhookSecret.Reveal(), Saga: p.Saga, IPSecret: []byte(cfg.FraudIPSecret.Reveal()),
		CancelRate: cfg.CancelRate}
	if cfg.BookingChanges {
		p.Bookings.Changes = store.NewBookingChanges(p.Pool, log.With("component", "booking-changes"))
	}
	p.Bookings.Register(p.Registry)
	return p, nil
}

// shareSagaLoad publishes this process's saga load and reads every
// process's, once per process whether it serves the API, the worker or both.
func (p *Process) shareSagaLoad(ctx context.Context) {
	p.sagaOnce.Do(func() { go p.Saga.Run(ctx) })
}

// followDials keeps the operator's dials fresh, once per process whether it
// serves the API, the worker or both.
func (p *Process) followDials(ctx context.Context) {
	p.dialsOnce.Do(func() { go p.Dials.Run(ctx) })
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
	return &api.Server{Holds: p.Holds, Bookings: p.Bookings, Room: p.Room, Browse: p.Browse.API, Tickets: p.Tickets, Transfers: p.Transfers, Resale: p.Resale, Invoices: &invoices.Service{Store: p.Store},
		Sessions: p.Sessions, Tokens: p.Tokens, ClientID: p.Config.OIDCClientID, ReturnURLs: ReturnURLs(p.Config), Checks: checks, Log: p.Log, TrustedProxies: p.trusted,
		Sockets: p.Sockets, RequestTimeout: p.Config.RequestTimeout, Admin: p.adminAPI(), Operator: p.operatorAPI(),
		Waitlist: p.Waitlist, Metrics: p.Edge, Reads: p.Reads, Payments: PaymentPage(p.Config)}
}

// adminAPI is the organiser and admin API over the buy plane's store, its
// sales report over the browse plane's read-only pool.
func (p *Process) adminAPI() *api.Admin {
	return &api.Admin{Venues: venues.NewService(p.Store), Events: organiser.NewService(p.Store),
		Sales: &organiser.Sales{Reader: store.NewReader(p.Browse.Reader)}, Overbooking: &hotels.Overbooking{Store: p.Store},
		Walks: p.Bookings, Hotels: hotels.NewService(p.Store), Store: p.Store}
}

// HotelNotices is the loop that emails properties their bookings,
// changes, cancellations and walks through the mail queue.
func (p *Process) HotelNotices() *hotels.Notices {
	public, _ := p.Config.EffectivePublicURL()
	return &hotels.Notices{Store: p.Store, Mailer: Mailer(p.Config, p.Store), PublicURL: public,
		Log: p.Log.With("component", "property-notices")}
}

// operatorAPI is the operator's dials and revocations.
func (p *Process) operatorAPI() *api.Operator {
	return &api.Operator{Controls: &organiser.Controls{Store: p.Store, Room: p.Room}, Dials: p.Dials}
}

// ServeAPI runs the fan API, the live seat-map hub, the listener that wakes
// pages waiting on a booking, and the admin listener until ctx ends.
func (p *Process) ServeAPI(ctx context.Context) (string, <-chan error, error) {
	if _, err := p.ServeAdmin(ctx); err != nil {
		return "", nil, err
	}
	tokens, err := p.identity(ctx)
	if err != nil {
		return "", nil, err
	}
	p.Tokens = tokens
	p.shareSagaLoad(ctx)
	p.followDials(ctx)
	go p.Browse.Hub.Run(ctx)
	p.watchBookingChanges(ctx)
	addr, done, err := Serve(ctx, p.Config.HTTPAddr, p.API().Handler())
	if err != nil {
		return "", nil, err
	}
	return addr.String(), done, nil
}

// watchBookingChanges runs the listener that wakes pages waiting on a
// booking, once per process, with its two gauges: a listener that stays
// down leaves every waiting page reading each second.
func (p *Process) watchBookingChanges(ctx context.Context) {
	p.changesOnce.Do(func() {
		c := p.Bookings.Changes
		if c == nil {
			return // ENCORE_BOOKING_CHANGES=false: waiting pages read every second
		}
		p.Registry.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "encore_booking_watched",
				Help: "Bookings waited on now: by fans' pages (GET /v1/bookings/{id} with Prefer: wait) and by provider events that arrived before their payment was recorded."},
				func() float64 { return float64(c.Watchers()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "encore_booking_changes_listening",
				Help: "1 while this API's connection listening for booking changes is up; 0: waiting pages read every second instead."},
				func() float64 {
					if c.Listening() {
						return 1
					}
					return 0
				}))
		go c.Run(ctx)
	})
}

// RunWorker runs the Temporal worker and the background loops (sweeper,
// outbox relay, admitter, reconciliation schedule, mail queue, property
// notices) and the admin listener
// until ctx ends. The
// returned stop waits for the worker to finish its tasks; call it before
// Close.
func (p *Process) RunWorker(ctx context.Context) (stop func(), err error) {
	if _, err := p.ServeAdmin(ctx); err != nil {
		return nil, err
	}
	if err := p.SetWorkerRunning(true); err != nil {
		return nil, err
	}
	if err := workflows.EnsureReconcileSchedule(ctx, p.Temporal, p.Config.ReconcileEvery, 24*time.Hour); err != nil {
		p.Log.Warn("reconciliation schedule", "err", err)
	}
	if err := workflows.EnsureAuditSchedule(ctx, p.Temporal, p.Config.AuditEvery); err != nil {
		p.Log.Warn("inventory audit schedule", "err", err)
	}
	p.shareSagaLoad(ctx)
	p.followDials(ctx)
	go p.Holds.RunSweeper(ctx, p.Config.SweepInterval, p.Config.SweepBatch)
	p.relay = NewRelay(p.Config, p.Store, p.Browse.Cache, p.Registry, p.Log)
	p.relayCtx = ctx
	p.SetRelayRunning(true)
	go p.Room.Admitter().Run(ctx, "")
	go p.Waitlist.Run(ctx)
	go p.Activities.Metrics.FollowSaga(ctx, p.Store, 15*time.Second)
	go MailQueue(p.Config, p.Store, p.Registry, p.Log).Run(ctx)
	go p.HotelNotices().Run(ctx)
	return func() { _ = p.SetWorkerRunning(false) }, nil
}

// SetWorkerRunning starts the Temporal worker or stops it (waiting for its
// tasks to finish); a drill stops it to show bookings finish once it is
// back. Starting a running worker or stopping a stopped one does nothing.
func (p *Process) SetWorkerRunning(on bool) error {
	p.runMu.Lock()
	defer p.runMu.Unlock()
	if on && p.worker == nil {
		w := encworker.New(p.Temporal, encworker.Dependencies{Holds: &activities.Holds{Service: p.Holds}, Booking: p.Activities})
		if err := w.Start(); err != nil {
			return fmt.Errorf("start worker: %w", err)
		}
		p.worker = w
	}
	if !on && p.worker != nil {
		p.worker.Stop()
		p.worker = nil
	}
	return nil
}

// SetRelayRunning starts the outbox relay or stops it (RunWorker must have
// run); a drill stops it to show the outbox-age alert and the live maps
// catching up after.
func (p *Process) SetRelayRunning(on bool) {
	p.runMu.Lock()
	defer p.runMu.Unlock()
	if p.relay == nil {
		return
	}
	if on && p.stopRelay == nil {
		ctx, cancel := context.WithCancel(p.relayCtx)
		done := make(chan struct{})
		go func() { p.relay.Run(ctx); close(done) }()
		p.stopRelay, p.relayDone = cancel, done
	}
	if !on && p.stopRelay != nil {
		p.stopRelay()
		<-p.relayDone
		p.stopRelay, p.relayDone = nil, nil
	}
}
