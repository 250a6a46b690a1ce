package testenv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/schema"
)

var (
	templateOnce sync.Once
	templateName string
	templateErr  error

	// cloneMu serialises this process's clones of the template: a clone
	// is a file copy, two at once gain nothing, and PostgreSQL refuses a
	// CREATE DATABASE ... TEMPLATE while any other session uses the
	// template.
	cloneMu sync.Mutex
)

// FreshDB returns a pool on a migrated database of the calling test's own,
// and its URL, for a test that needs a whole database to itself and so
// could not share the package's (DB) with parallel tests: one that takes a
// database-wide advisory lock (the outbox relay's lease), drains or counts a
// whole table (the outbox, "nothing was written"), audits every row, or
// seeds fixed IDs. Each is a copy of a template database migrated once per
// package, so it costs a file copy, not a migration; it is dropped when the
// test ends. Tests whose rows carry IDs of their own (RandomSuffix) should
// keep using DB: one database is cheaper than many.
func FreshDB(tb testing.TB) (*pgxpool.Pool, string) {
	tb.Helper()
	requireMain(tb)
	admin, _, err := servers()
	if err != nil {
		tb.Fatalf("testenv: database: %v", err)
	}
	tmpl, err := migratedTemplate(admin)
	if err != nil {
		tb.Fatalf("testenv: template database: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := fmt.Sprintf("test_%s_%s", packageTag(), RandomSuffix())
	url, err := cloneDatabase(ctx, admin, tmpl, name)
	if err != nil {
		tb.Fatalf("testenv: fresh database: %v", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = devstack.DropDatabase(ctx, admin, name)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		drop()
		tb.Fatalf("testenv: fresh database: %v", err)
	}
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		drop()
		tb.Fatalf("testenv: fresh database: %v", err)
	}
	tb.Cleanup(func() { pool.Close(); drop() })
	return pool, url
}

// migratedTemplate creates and migrates this package's template database
// once; nothing stays connected to it. It is dropped when the package's
// tests end.
func migratedTemplate(admin string) (string, error) {
	templateOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := fmt.Sprintf("tmpl_%s_%s", packageTag(), RandomSuffix())
		url, err := devstack.EnsureDatabase(ctx, admin, name)
		if err != nil {
			templateErr = err
			return
		}
		atExit(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = devstack.DropDatabase(ctx, admin, name)
		})
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			templateErr = err
			return
		}
		_, templateErr = schema.Migrate(ctx, pool)
		pool.Close()
		templateName = name
	})
	return templateName, templateErr
}

// cloneDatabase creates database name as a copy of tmpl and returns its URL.
func cloneDatabase(ctx context.Context, admin, tmpl, name string) (string, error) {
	cloneMu.Lock()
	defer cloneMu.Unlock()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for attempt := 0; ; attempt++ {
		_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{tmpl}.Sanitize())
		if err == nil {
			break
		}
		// 55006 object_in_use: a session of the template (the pool that
		// migrated it, still closing) has not gone yet.
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55006" || attempt >= 100 {
			return "", fmt.Errorf("create database %s from %s: %w", name, tmpl, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	// EnsureDatabase finds it and only builds its URL.
	return devstack.EnsureDatabase(ctx, admin, name)
}
