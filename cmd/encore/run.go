package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/dev/stack"
	"github.com/encore-tickets/encore/dev/temporalserver"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"

	"github.com/encore-tickets/encore/vocab"
)

// devConfig is cfg as encore dev runs it: the demo login on unless
// ENCORE_DEMO_LOGIN says otherwise (its default is off, for production).
func devConfig(cfg config.Config, lookup func(string) (string, bool)) config.Config {
	if _, set := lookup("ENCORE_DEMO_LOGIN"); !set {
		cfg.DemoLogin = true
	}
	// The codec answers a bearer only: the embedded Web UI's codec proxy
	// sends this run's.
	if cfg.TemporalCodecToken == "" {
		cfg.TemporalCodecToken = config.Secret(rand.Text() + rand.Text())
	}
	return cfg
}

// The files in ENCORE_DATA_DIR where encore dev leaves this run's tokens,
// readable by this user only: encore drill reads the drill token there, and
// a developer takes the codec bearer from there for the temporal CLI.
const (
	drillTokenFile = "drill.token"
	codecTokenFile = "codec.token"
)

// writeDevToken writes a token of this run to its file under the data
// folder and returns the path; the token itself is never printed or logged.
func writeDevToken(cfg config.Config, name, token string) (string, error) {
	path := system.DataPath(cfg, name)
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// provideInfra is stack.Provide for a command that runs until ctx ends:
// stop closes the infrastructure again and logs, rather than returns, a
// failure to.
func provideInfra(ctx context.Context, cfg config.Config, log *slog.Logger) (inf *stack.Infra, stop func(), err error) {
	inf, err = stack.Provide(ctx, cfg, os.Stderr)
	if err != nil {
		return nil, nil, err
	}
	return inf, func() {
		if err := inf.Close(); err != nil {
			log.Warn("stop infrastructure", "err", err)
		}
	}, nil
}

// runDev brings up the whole system in one process.
func runDev(ctx context.Context, cfg config.Config) error {
	start := time.Now()
	log := system.Logger(cfg, os.Stderr)
	inf, stopInfra, err := provideInfra(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stopInfra()
	// Every email of the run goes to Mailpit, unless an SMTP server is
	// configured; without Mailpit (it would not build) to the mailbox folder.
	mailpit, err := stack.ProvideMail(ctx, cfg, os.Stderr)
	if err != nil {
		log.Warn("mailpit not started: emails go to the mailbox folder", "dir", system.DataPath(cfg, "mailbox"), "err", err)
	}
	if mailpit != nil {
		defer func() { _ = mailpit.Stop() }()
		cfg.SMTPURL = config.Secret(mailpit.SMTPURL())
	}
	pool, err := store.Open(ctx, inf.DatabaseURL, 2)
	if err != nil {
		return err
	}
	v, err := stack.MigrateAndSeed(ctx, pool, true)
	pool.Close()
	if err != nil {
		return err
	}
	log.Info("database ready", "schema_version", v)

	drillToken := rand.Text() + rand.Text()
	drillFile, err := writeDevToken(cfg, drillTokenFile, drillToken)
	if err != nil {
		return err
	}
	codecFile, err := writeDevToken(cfg, codecTokenFile, cfg.TemporalCodecToken.Reveal())
	if err != nil {
		return err
	}

	temporalAddr, uiURL := cfg.TemporalAddress, ""
	if temporalAddr == "" {
		// The embedded server admits this run's processes by their API
		// key, and the Web UI's support and admin users signed in at the
		// API's development issuer.
		if cfg, err = withEmbeddedTemporalKey(cfg); err != nil {
			return err
		}
		srv, err := temporalserver.Start(ctx, embeddedTemporal(ctx, cfg, inf.AdminURL, log))
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

	p, err := system.New(ctx, cfg, log, inf.DatabaseURL, inf.RedisURL, temporalAddr)
	if err != nil {
		return err
	}
	defer p.Close()
	// encore drill's switches, on the admin listener of a development
	// stack only.
	p.AdminHandlers["/drill/"] = stack.DrillHandler(p, inf, drillToken)
	wctx, cancelWorker := context.WithCancel(ctx)
	defer cancelWorker()
	stopWorker, err := p.RunWorker(wctx)
	if err != nil {
		return err
	}
	defer stopWorker()
	addr, done, err := p.ServeAPI(ctx)
	if err != nil {
		return err
	}
	adminAddr, _ := p.ServeAdmin(ctx) // already listening: the worker started it
	printURLs(os.Stdout, system.HTTPURL(addr), "http://"+adminAddr, temporalAddr, uiURL, time.Since(start))
	if mailpit != nil {
		fmt.Fprintf(os.Stdout, "  Mailpit         %s   (every email of the run; API: %s/api/v1/messages)\n", mailpit.URL(), mailpit.URL())
	}
	printTokens(os.Stdout, drillFile, codecFile)
	fmt.Fprintf(os.Stdout, "Press Ctrl-C to stop.\n")
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		<-done
		return nil
	case err := <-done:
		return err
	}
}

func printURLs(w io.Writer, apiURL, adminURL, temporalAddr, uiURL string, took time.Duration) {
	fmt.Fprintf(w, "\nEncore is up (%.1fs)\n", took.Seconds())
	fmt.Fprintf(w, "  API             %s   (try %s/v1/holds, %s/readyz)\n", apiURL, apiURL, apiURL)
	fmt.Fprintf(w, "  Admin           %s/metrics, %s/debug/pprof/\n", adminURL, adminURL)
	fmt.Fprintf(w, "  Payment sandbox %s   (test cards: pm_card_visa, pm_card_chargeDeclined, pm_card_threeDSecure2Required)\n", system.HTTPURL(config.Default().PSPAddr))
	fmt.Fprintf(w, "  Temporal        %s\n", temporalAddr)
	if uiURL != "" {
		fmt.Fprintf(w, "  Temporal Web UI %s   (sign in at the development issuer's page: any user name, role support or admin)\n", uiURL)
	}
}

// printTokens says where this run's tokens are, never what they are.
func printTokens(w io.Writer, drillFile, codecFile string) {
	fmt.Fprintf(w, "  Drill token     %s   (encore drill reads it; /drill/ switches need it)\n", drillFile)
	fmt.Fprintf(w, "  Codec bearer    %s   (the embedded Web UI sends it; the temporal CLI: --codec-auth \"Bearer $(cat %s)\")\n", codecFile, codecFile)
}

// newSandbox builds the payment sandbox: state under the data folder,
// webhooks signed with the configured secret to this API.
func newSandbox(cfg config.Config, log *slog.Logger) (*psp.Server, error) {
	sandbox, err := psp.New(psp.Config{
		// The key it accepts is the one the API sends: the sandbox key in
		// development, a generated one when it stands in for Stripe in staging.
		Addr: cfg.PSPAddr, APIKey: cfg.StripeKey.Reveal(),
		WebhookURL:    system.SandboxWebhookURL(cfg),
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
