package main

// What encore api and encore worker run. This file imports nothing from
// dev/ (layout_test.go checks it, with everything its imports import):
// production processes carry no sandbox, demo data or private servers.

import (
	"context"
	"log/slog"
	"os"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/workflows"
)

// runAPI serves the fan API until ctx ends.
func runAPI(ctx context.Context, cfg config.Config) error {
	return runProcess(ctx, cfg, func(p *system.Process, log *slog.Logger) error {
		addr, done, err := p.ServeAPI(ctx)
		if err != nil {
			return err
		}
		log.Info("api listening", "url", system.HTTPURL(addr))
		return <-done
	})
}

// runWorker runs the booking worker and the background loops until ctx
// ends.
func runWorker(ctx context.Context, cfg config.Config) error {
	return runProcess(ctx, cfg, func(p *system.Process, log *slog.Logger) error {
		stop, err := p.RunWorker(ctx)
		if err != nil {
			return err
		}
		defer stop()
		log.Info("worker running", "task_queue", workflows.TaskQueue)
		<-ctx.Done()
		return nil
	})
}

// runProcess opens what encore api and encore worker both stand on (the
// configured database, Redis and Temporal), warns about a superuser
// database login, and runs run with it; the process closes after run
// returns.
func runProcess(ctx context.Context, cfg config.Config, run func(p *system.Process, log *slog.Logger) error) error {
	log := system.Logger(cfg, os.Stderr)
	p, err := system.New(ctx, cfg, log, cfg.DatabaseURL.Reveal(), cfg.RedisURL.Reveal(), temporalAddress(cfg))
	if err != nil {
		return err
	}
	defer p.Close()
	warnSuperuser(ctx, cfg, p, log)
	return run(p, log)
}

// warnSuperuser says loudly, once at start, that a production process
// connects as a database superuser: every grant is then moot.
func warnSuperuser(ctx context.Context, cfg config.Config, p *system.Process, log *slog.Logger) {
	if cfg.Development() {
		return
	}
	super, err := store.IsSuperuser(ctx, p.Pool)
	if err != nil {
		log.Warn("could not check whether the database login is a superuser", "err", err)
		return
	}
	if super {
		log.Warn("DATABASE LOGIN IS A SUPERUSER: ENCORE_DATABASE_URL should connect as encore_app, which may only " +
			"read and write rows; create it with encore db logins (see README, Running in production)")
	}
}

// temporalAddress is the configured Temporal cluster, else the embedded
// server's listen address.
func temporalAddress(cfg config.Config) string {
	if cfg.TemporalAddress != "" {
		return cfg.TemporalAddress
	}
	return cfg.TemporalListenAddr
}
