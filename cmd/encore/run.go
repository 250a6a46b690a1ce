package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/booking/saga"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/outbox"
	"github.com/encore-tickets/encore/psp"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/temporalserver"
	"github.com/encore-tickets/encore/waitingroom"

	"github.com/encore-tickets/encore/vocab"
)

// searchAttributes are registered on the embedded server's namespace.
var searchAttributes = map[string]enumspb.IndexedValueType{
	saga.SearchAttrEvent:  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	saga.SearchAttrUser:   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	saga.SearchAttrStatus: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// process is what api, worker and dev share once infrastructure is up.
type process struct {
	cfg      config.Config
	log      *slog.Logger
	pool     *pgxpool.Pool
	rdb      *redis.Client
	reg      *prometheus.Registry
	holds    *holds.Service
	room     *waitingroom.Room
	booking  *saga.Activities
	temporal client.Client
	browse   *system.BrowsePlane
	relay    *outbox.Relay // set by runWorkerLoops; planes add handlers there
}

func newProcess(ctx context.Context, cfg config.Config, log *slog.Logger, dbURL, redisURL, temporalAddr string) (*process, error) {
	if err := system.CheckPaymentConfig(cfg); err != nil {
		return nil, err
	}
	pool, rdb, err := system.Connect(ctx, cfg, dbURL, redisURL)
	if err != nil {
		return nil, err
	}
	p := &process{cfg: cfg, log: log, pool: pool, rdb: rdb, reg: system.Registry()}
	p.holds = system.BuyPlane(cfg, pool, rdb, p.reg, log)
	p.room = system.AdmitPlane(cfg, rdb, p.holds, p.reg, log)
	if p.browse, err = system.NewBrowsePlane(ctx, cfg, dbURL, rdb, p.reg, log); err != nil {
		p.close()
		return nil, err
	}
	if p.booking, err = system.BookingActivities(cfg, p.holds.Store, log); err != nil {
		p.close()
		return nil, err
	}
	p.temporal, err = client.DialContext(ctx, client.Options{
		HostPort:  temporalAddr,
		Namespace: cfg.TemporalNamespace,
		Logger:    sdklog.NewStructuredLogger(log.With("component", "temporal-client")),
	})
	if err != nil {
		p.close()
		return nil, fmt.Errorf("connect to Temporal at %s: %w", temporalAddr, err)
	}
	p.holds.Started = func(ctx context.Context, h store.Hold) {
		// The outbox row written with the hold is the backstop if this fails.
		if err := saga.StartBooking(ctx, p.temporal, saga.BookingInput{
			ReservationID: h.ID.String(), EventID: h.EventID, UserID: h.UserID, ExpiresAt: h.ExpiresAt,
		}); err != nil {
			log.Warn("start booking workflow", "hold", h.ID, "err", err)
		}
	}
	return p, nil
}

func (p *process) close() {
	if p.room != nil {
		p.room.Close()
	}
	if p.temporal != nil {
		p.temporal.Close()
	}
	if p.browse != nil {
		p.browse.Close()
	}
	_ = p.rdb.Close()
	p.pool.Close()
}

// serveAPI runs the fan API until ctx ends.
func (p *process) serveAPI(ctx context.Context) (string, <-chan error, error) {
	checks := system.Checks(p.pool, p.rdb, func(ctx context.Context) error {
		_, err := p.temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	})
	srv := system.NewAPI(p.cfg, p.holds, checks, p.reg, p.log)
	srv.Temporal = p.temporal
	srv.WebhookSecret = p.cfg.StripeWebhookSecret.Reveal()
	srv.Register(p.reg)
	keyring, err := system.TicketKeyring(p.cfg)
	if err != nil {
		return "", nil, err
	}
	srv.Extra = append(srv.Extra, api.TicketQR(p.holds.Store, keyring))
	srv.Extra = append(srv.Extra, p.room.Routes)
	srv.Extra = append(srv.Extra, p.browse.API.Routes)
	go p.browse.Hub.Run(ctx)
	addr, done, err := system.Serve(ctx, p.cfg.HTTPAddr, p.room.Guard(srv.Handler(), srv.Sessions))
	if err != nil {
		return "", nil, err
	}
	return addr.String(), done, nil
}

// runWorkerLoops runs the Temporal worker and the background loops until ctx
// ends. The returned stop waits for the worker to finish its tasks; call it
// before closing the Temporal client.
func (p *process) runWorkerLoops(ctx context.Context) (stop func(), err error) {
	w := saga.NewWorker(p.temporal, saga.Dependencies{Holds: &saga.HoldActivities{Service: p.holds}, Booking: p.booking})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	if err := saga.EnsureReconcileSchedule(ctx, p.temporal, p.cfg.ReconcileEvery, 24*time.Hour); err != nil {
		p.log.Warn("reconciliation schedule", "err", err)
	}
	go p.holds.RunSweeper(ctx, p.cfg.SweepInterval, p.cfg.SweepBatch)
	p.relay = system.NewRelay(p.cfg, p.holds.Store, p.browse.Cache, p.reg, p.log)
	p.relay.Handle(store.TopicHoldCreated, system.StartMissedBooking(p.temporal, p.log))
	go p.relay.Run(ctx)
	go p.room.RunAdmitter(ctx, "")
	return w.Stop, nil
}

func runAPI(ctx context.Context, cfg config.Config) error {
	log := system.Logger(cfg, os.Stderr)
	p, err := newProcess(ctx, cfg, log, cfg.DatabaseURL.Reveal(), cfg.RedisURL.Reveal(), temporalAddress(cfg))
	if err != nil {
		return err
	}
	defer p.close()
	addr, done, err := p.serveAPI(ctx)
	if err != nil {
		return err
	}
	log.Info("api listening", "url", system.HTTPURL(addr))
	return <-done
}

func runWorker(ctx context.Context, cfg config.Config) error {
	log := system.Logger(cfg, os.Stderr)
	p, err := newProcess(ctx, cfg, log, cfg.DatabaseURL.Reveal(), cfg.RedisURL.Reveal(), temporalAddress(cfg))
	if err != nil {
		return err
	}
	defer p.close()
	stop, err := p.runWorkerLoops(ctx)
	if err != nil {
		return err
	}
	defer stop()
	log.Info("worker running", "task_queue", saga.TaskQueue)
	<-ctx.Done()
	return nil
}

func temporalAddress(cfg config.Config) string {
	if cfg.TemporalAddress != "" {
		return cfg.TemporalAddress
	}
	return cfg.TemporalListenAddr
}

// runDev brings up the whole system in one process.
func runDev(ctx context.Context, cfg config.Config) error {
	start := time.Now()
	log := system.Logger(cfg, os.Stderr)
	inf, err := system.Provide(ctx, cfg, os.Stderr)
	if err != nil {
		return err
	}
	defer func() {
		if err := inf.Close(); err != nil {
			log.Warn("stop infrastructure", "err", err)
		}
	}()
	pool, err := store.Open(ctx, inf.DatabaseURL, 2)
	if err != nil {
		return err
	}
	v, err := system.MigrateAndSeed(ctx, pool, true)
	pool.Close()
	if err != nil {
		return err
	}
	log.Info("database ready", "schema_version", v)

	temporalAddr, uiURL := cfg.TemporalAddress, ""
	if temporalAddr == "" {
		srv, err := temporalserver.Start(ctx, temporalserver.Config{
			DatabaseURL:      inf.AdminURL,
			FrontendAddress:  cfg.TemporalListenAddr,
			UIAddress:        cfg.TemporalUIAddr,
			Namespace:        cfg.TemporalNamespace,
			NumHistoryShards: cfg.TemporalShards,
			SearchAttributes: searchAttributes,
			Logger:           log.With("component", "temporal-server"),
		})
		if err != nil {
			return fmt.Errorf("embedded Temporal: %w", err)
		}
		defer func() {
			if err := srv.Stop(); err != nil {
				log.Warn("stop Temporal", "err", err)
			}
		}()
		temporalAddr, uiURL = srv.FrontendAddress(), srv.UIURL()
	}

	if cfg.StripeKey.Reveal() == system.SandboxKey && cfg.StripeAPIURL == "" {
		sandbox, err := newSandbox(cfg, log)
		if err != nil {
			return err
		}
		pctx, stopPSP := context.WithCancel(context.Background())
		pspDone := make(chan error, 1)
		go func() { pspDone <- sandbox.ListenAndServe(pctx) }()
		defer func() {
			stopPSP()
			<-pspDone
		}()
	}

	p, err := newProcess(ctx, cfg, log, inf.DatabaseURL, inf.RedisURL, temporalAddr)
	if err != nil {
		return err
	}
	defer p.close()
	wctx, cancelWorker := context.WithCancel(ctx)
	defer cancelWorker()
	stopWorker, err := p.runWorkerLoops(wctx)
	if err != nil {
		return err
	}
	defer stopWorker()
	addr, done, err := p.serveAPI(ctx)
	if err != nil {
		return err
	}
	printURLs(os.Stdout, system.HTTPURL(addr), temporalAddr, uiURL, time.Since(start))
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		<-done
		return nil
	case err := <-done:
		return err
	}
}

func printURLs(w io.Writer, apiURL, temporalAddr, uiURL string, took time.Duration) {
	fmt.Fprintf(w, "\nEncore is up (%.1fs)\n", took.Seconds())
	fmt.Fprintf(w, "  API             %s   (try %s/v1/holds, %s/readyz)\n", apiURL, apiURL, apiURL)
	fmt.Fprintf(w, "  Metrics         %s/metrics\n", apiURL)
	fmt.Fprintf(w, "  Payment sandbox %s   (test cards: pm_card_visa, pm_card_chargeDeclined, pm_card_threeDSecure2Required)\n", system.HTTPURL(config.Default().PSPAddr))
	fmt.Fprintf(w, "  Temporal        %s\n", temporalAddr)
	if uiURL != "" {
		fmt.Fprintf(w, "  Temporal Web UI %s\n", uiURL)
	}
	fmt.Fprintf(w, "Press Ctrl-C to stop.\n")
}

// newSandbox builds the payment sandbox: state under the data folder,
// webhooks signed with the configured secret to this API.
func newSandbox(cfg config.Config, log *slog.Logger) (*psp.Server, error) {
	sandbox, err := psp.New(psp.Config{
		Addr: cfg.PSPAddr, APIKey: system.SandboxKey,
		WebhookURL:    system.HTTPURL(cfg.HTTPAddr) + "/v1/webhooks/stripe",
		WebhookSecret: cfg.StripeWebhookSecret.Reveal(),
		StatePath:     system.DataPath(cfg, "psp", "state.json"),
		EnabledEvents: vocab.ProviderEventTypes(),
		Logger:        log.With("component", "psp"),
	})
	if err != nil {
		return nil, fmt.Errorf("payment sandbox: %w", err)
	}
	return sandbox, nil
}

// runPSP runs the payment sandbox alone until interrupted.
func runPSP(ctx context.Context, cfg config.Config) error {
	log := system.Logger(cfg, os.Stderr)
	sandbox, err := newSandbox(cfg, log)
	if err != nil {
		return err
	}
	return sandbox.ListenAndServe(ctx)
}
