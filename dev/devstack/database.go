package devstack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EnsureDatabase creates database name on the server of adminURL if it is
// missing and returns the URL of that database (adminURL with its database
// replaced). Concurrent calls for the same name all succeed.
func EnsureDatabase(ctx context.Context, adminURL, name string) (string, error) {
	dbURL, err := withDatabase(adminURL, name)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("ensure database %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for attempt := 0; ; attempt++ {
		var found bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&found); err != nil {
			return "", fmt.Errorf("ensure database %s: %w", name, err)
		}
		if found {
			return dbURL, nil
		}
		_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		if err == nil {
			return dbURL, nil
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			switch pgErr.Code {
			case "42P04", "23505": // duplicate_database; unique_violation on pg_database when racing
				return dbURL, nil
			case "55006": // object_in_use: someone is connected to template1; retry
				if attempt < 50 {
					if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
						return "", err
					}
					continue
				}
			}
		}
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
}

// DropDatabase drops database name, if it exists, disconnecting its
// sessions (WITH (FORCE)).
func DropDatabase(ctx context.Context, adminURL, name string) error {
	if err := checkDBName(name); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func checkDBName(name string) error {
	if name == "" || len(name) > 63 || strings.ContainsRune(name, 0) {
		return fmt.Errorf("invalid database name %q", name)
	}
	return nil
}

// withDatabase returns the connection string adminURL pointing at database
// name; it accepts URLs (postgres://...) and keyword/value strings.
func withDatabase(adminURL, name string) (string, error) {
	if err := checkDBName(name); err != nil {
		return "", err
	}
	if strings.HasPrefix(adminURL, "postgres://") || strings.HasPrefix(adminURL, "postgresql://") {
		u, err := url.Parse(adminURL)
		if err != nil {
			return "", fmt.Errorf("invalid database URL: %w", err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		q := u.Query()
		if q.Has("dbname") {
			q.Del("dbname")
			u.RawQuery = q.Encode()
		}
		return u.String(), nil
	}
	quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name)
	return strings.TrimSpace(adminURL) + " dbname='" + quoted + "'", nil
}
