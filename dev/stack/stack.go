// Package stack provides what encore dev runs beside Encore's own
// processes: private PostgreSQL and Redis servers (started, or found
// running), the demo data, and the drill switches of encore drill. Nothing
// encore api, encore worker or encore gate runs imports it.
package stack

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/schema"
)

// Infra is the running infrastructure a process uses.
type Infra struct {
	DatabaseURL string // Encore's own database
	AdminURL    string // the same server, a database that can create others
	RedisURL    string
	stops       []func() error

	// What Provide started, for a drill to stop and start again.
	opts     devstack.Options
	postgres *devstack.Service
	redis    *devstack.Service
}

// Close stops what Provide started (never what it found running).
func (i *Infra) Close() error {
	var errs []error
	for j := len(i.stops) - 1; j >= 0; j-- {
		errs = append(errs, i.stops[j]())
	}
	return errors.Join(errs...)
}

// Provide finds PostgreSQL and Redis as configured, or starts private ones
// under cfg.DataDir (installing them on Debian or Ubuntu as root), and makes
// sure Encore's database exists.
func Provide(ctx context.Context, cfg config.Config, log io.Writer) (*Infra, error) {
	opts := devstack.Options{Dir: cfg.DataDir, AllowInstall: true, Log: log,
		PostgresPort: cfg.DevPostgresPort, RedisPort: cfg.DevRedisPort}
	inf := &Infra{}
	pg, err := devstack.EnsurePostgres(ctx, opts, cfg.DatabaseURL.Reveal())
	if err != nil {
		return nil, err
	}
	inf.opts = opts
	if pg.Started {
		inf.postgres = pg
		inf.stops = append(inf.stops, func() error { return inf.postgres.Stop() })
	}
	inf.AdminURL = pg.URL
	if cfg.DatabaseURL != "" {
		inf.DatabaseURL = cfg.DatabaseURL.Reveal()
	} else if inf.DatabaseURL, err = devstack.EnsureDatabase(ctx, pg.URL, cfg.DatabaseName); err != nil {
		_ = inf.Close()
		return nil, err
	}
	rd, err := devstack.EnsureRedis(ctx, opts, cfg.RedisURL.Reveal())
	if err != nil {
		_ = inf.Close()
		return nil, err
	}
	if rd.Started {
		inf.redis = rd
		inf.stops = append(inf.stops, func() error {
			if inf.redis == nil {
				return nil
			}
			return inf.redis.Stop()
		})
	}
	inf.RedisURL = rd.URL
	return inf, nil
}

// ErrNotOwned refuses a drill on a server this process did not start.
var ErrNotOwned = errors.New("this process did not start that server, so it does not stop it")

// StopRedis stops the Redis server Provide started (a drill: Redis lost).
func (i *Infra) StopRedis() error {
	if i.redis == nil {
		return ErrNotOwned
	}
	err := i.redis.StopNow()
	i.redis = nil
	return err
}

// StartRedis starts it again on the same port and data.
func (i *Infra) StartRedis(ctx context.Context) error {
	if i.redis != nil {
		return nil
	}
	rd, err := devstack.EnsureRedis(ctx, i.opts, "")
	if err != nil {
		return err
	}
	i.redis = rd
	return nil
}

// RestartPostgres stops the PostgreSQL server Provide started and starts
// it again on the same port and data (a drill: the database restarts).
func (i *Infra) RestartPostgres(ctx context.Context) error {
	if i.postgres == nil {
		return ErrNotOwned
	}
	if err := i.postgres.StopNow(); err != nil {
		return err
	}
	pg, err := devstack.EnsurePostgres(ctx, i.opts, "")
	if err != nil {
		return err
	}
	i.postgres = pg
	return nil
}

// MigrateAndSeed applies migrations and, when seed is true, the demo data.
func MigrateAndSeed(ctx context.Context, pool *pgxpool.Pool, seed bool) (int, error) {
	v, err := schema.Migrate(ctx, pool)
	if err != nil {
		return v, err
	}
	if seed {
		err = demo.Seed(ctx, pool, time.Now())
	}
	return v, err
}
