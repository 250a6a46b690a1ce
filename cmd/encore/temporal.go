package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/temporalserver"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/workflows"
)

func newTemporalCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "temporal",
		Short: "Run the embedded Temporal server and its Web UI alone",
		Long: `Runs the Temporal server that encore dev embeds, as a process of its own, for
small deployments and for running several encore api and encore worker processes
against one cluster (point them at it with ENCORE_TEMPORAL_ADDRESS).

It persists to the PostgreSQL of ENCORE_DATABASE_URL (a login that may create
databases), else a private one started under ENCORE_DATA_DIR; listens on
ENCORE_TEMPORAL_LISTEN_ADDR with the Web UI on ENCORE_TEMPORAL_UI_ADDR; creates
ENCORE_TEMPORAL_NAMESPACE with the booking saga's search attributes. Stops on
Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runTemporal(cmd.Context(), cfg)
		}),
	}
}

// embeddedTemporal is the embedded server's configuration, the same for
// encore dev and encore temporal: cfg.TemporalAPIKey is the key of Encore's
// own processes (EmbeddedTemporalKey), and the Web UI's users sign in at
// the API's identity provider (uiSignIn).
func embeddedTemporal(ctx context.Context, cfg config.Config, databaseURL string, log *slog.Logger) temporalserver.Config {
	signIn, staff := uiSignIn(ctx, cfg, log)
	return temporalserver.Config{
		APIKey:                 cfg.TemporalAPIKey.Reveal(),
		StaffTokens:            staff,
		SignIn:                 signIn,
		DatabaseURL:            databaseURL,
		DatabaseName:           cfg.TemporalDatabase,
		VisibilityDatabaseName: cfg.TemporalDatabase + "_visibility",
		FrontendAddress:        cfg.TemporalListenAddr,
		UIAddress:              cfg.TemporalUIAddr,
		CodecEndpoint:          system.CodecEndpoint(cfg),
		CodecToken:             cfg.TemporalCodecToken.Reveal(),
		Namespace:              cfg.TemporalNamespace,
		NumHistoryShards:       cfg.TemporalShards,
		SearchAttributes:       workflows.SearchAttributes,
		Logger:                 log.With("component", "temporal-server"),
	}
}

// runTemporal serves the embedded Temporal server until ctx ends.
func runTemporal(ctx context.Context, cfg config.Config) error {
	var err error
	log := system.Logger(cfg, os.Stderr)
	dbURL := cfg.DatabaseURL.Reveal()
	if dbURL == "" {
		inf, stopInfra, err := provideInfra(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer stopInfra()
		dbURL = inf.AdminURL
	}
	if cfg, err = withEmbeddedTemporalKey(cfg); err != nil {
		return err
	}
	srv, err := temporalserver.Start(ctx, embeddedTemporal(ctx, cfg, dbURL, log))
	if err != nil {
		return fmt.Errorf("embedded Temporal: %w", err)
	}
	fmt.Fprintf(os.Stderr, "Temporal %s (namespace %s)\n", srv.FrontendAddress(), srv.Namespace())
	if ui := srv.UIURL(); ui != "" {
		fmt.Fprintf(os.Stderr, "Temporal Web UI %s\n", ui)
	}
	<-ctx.Done()
	log.Info("stopping Temporal")
	return srv.Stop()
}

// withEmbeddedTemporalKey is cfg with the embedded server's API key
// (ENCORE_TEMPORAL_API_KEY, else the data folder's, made on first use).
func withEmbeddedTemporalKey(cfg config.Config) (config.Config, error) {
	key, err := system.EmbeddedTemporalKey(cfg)
	if err != nil {
		return cfg, err
	}
	cfg.TemporalAPIKey = key
	return cfg, nil
}

// uiSignIn is where the embedded Web UI's users sign in and the verifier
// of the access tokens it forwards: the development issuer of the demo
// login (encore dev; its key is derived from ENCORE_SESSION_SECRET, so no
// fetch), else ENCORE_OIDC_ISSUER, whose keys are fetched at the first
// token (and again a minute after a failure: the server starts without
// its identity provider).
func uiSignIn(ctx context.Context, cfg config.Config, log *slog.Logger) (temporalserver.SignIn, func() *session.Verifier) {
	si := temporalserver.SignIn{ClientID: cfg.TemporalUIClientID}
	if dev := system.DemoIssuer(cfg); dev != nil {
		si.Issuer = dev.URL()
		v := dev.Verifier()
		return si, func() *session.Verifier { return v }
	}
	if cfg.OIDCIssuer == "" {
		log.Warn("the Temporal Web UI has no identity provider, so no one can sign in to it: " +
			"set ENCORE_OIDC_ISSUER, or ENCORE_DEMO_LOGIN=true with ENCORE_ENV=development")
		return si, nil
	}
	si.Issuer = cfg.OIDCIssuer
	var (
		mu      sync.Mutex
		v       *session.Verifier
		lastTry time.Time
	)
	return si, func() *session.Verifier {
		mu.Lock()
		defer mu.Unlock()
		if v != nil || time.Since(lastTry) < time.Minute {
			return v
		}
		lastTry = time.Now()
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		got, err := session.Discover(dctx, session.Options{Issuer: cfg.OIDCIssuer, Audience: cfg.OIDCAudience,
			JWKSURL: cfg.OIDCJWKSURL, Log: log.With("component", "temporal-ui-oidc")})
		if err != nil {
			log.Warn("the Temporal Web UI's identity provider", "issuer", cfg.OIDCIssuer, "err", err)
			return nil
		}
		v = got
		return v
	}
}
