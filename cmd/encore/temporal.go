package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/temporalserver"
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
// encore dev and encore temporal.
func embeddedTemporal(cfg config.Config, databaseURL string, log *slog.Logger) temporalserver.Config {
	return temporalserver.Config{
		DatabaseURL:      databaseURL,
		FrontendAddress:  cfg.TemporalListenAddr,
		UIAddress:        cfg.TemporalUIAddr,
		CodecEndpoint:    system.CodecEndpoint(cfg),
		CodecToken:       cfg.TemporalCodecToken.Reveal(),
		Namespace:        cfg.TemporalNamespace,
		NumHistoryShards: cfg.TemporalShards,
		SearchAttributes: workflows.SearchAttributes,
		Logger:           log.With("component", "temporal-server"),
	}
}

// runTemporal serves the embedded Temporal server until ctx ends.
func runTemporal(ctx context.Context, cfg config.Config) error {
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
	srv, err := temporalserver.Start(ctx, embeddedTemporal(cfg, dbURL, log))
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
