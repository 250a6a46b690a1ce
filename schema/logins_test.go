package schema_test

import (
	"context"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/schema"
	"github.com/encore-tickets/encore/store"
)

// Fixed passwords: the roles belong to the whole test cluster, so concurrent
// runs must agree on them.
var testLogins = schema.Logins{Migrator: "test-migrator-password", App: "test-app-password", Reader: "test-reader-password"}

// loginsDatabase is a migrated database of its own whose logins are set up:
// SetupLogins hands every object to encore_migrator, which the package's
// shared database must not see mid-test.
func loginsDatabase(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbURL, pool := emptyDatabase(t, "test_logins_")
	_, err := schema.Migrate(ctx, pool)
	require.NoError(t, err)
	require.NoError(t, schema.SetupLogins(ctx, pool, testLogins))
	return dbURL, pool
}

// emptyDatabase is a database of the test's own, with nothing in it yet,
// dropped when the test ends.
func emptyDatabase(t *testing.T, prefix string) (string, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := testenv.DatabaseURL(t)
	name := prefix + testenv.RandomSuffix()
	dbURL, err := devstack.EnsureDatabase(ctx, admin, name)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = devstack.DropDatabase(ctx, admin, name)
	})
	return dbURL, connect(t, dbURL)
}

func connect(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close) // before the database's drop: cleanups run last-in first-out
	return pool
}

func connectAs(t *testing.T, dbURL, role, password string) *pgxpool.Pool {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.User = url.UserPassword(role, password)
	pool := connect(t, u.String())
	var who string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT current_user`).Scan(&who))
	require.Equal(t, role, who)
	return pool
}

// requireDenied runs sql and wants PostgreSQL's insufficient_privilege (or,
// for an object the role may not even own, must-be-owner: the same code).
func requireDenied(t *testing.T, pool *pgxpool.Pool, sql string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), sql)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, sql)
	require.Equal(t, "42501", pgErr.Code, "%s: %s", sql, pgErr.Message)
}

func TestDatabaseLoginsHaveLeastPrivilege(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL, super := loginsDatabase(t)
	app := connectAs(t, dbURL, schema.AppRole, testLogins.App)
	reader := connectAs(t, dbURL, schema.ReaderRole, testLogins.Reader)
	migrator := connectAs(t, dbURL, schema.MigratorRole, testLogins.Migrator)
	user, venue := "u_"+testenv.RandomSuffix(), "v_"+testenv.RandomSuffix()

	t.Run("encore_app reads and writes rows", func(t *testing.T) {
		_, err := app.Exec(ctx, `INSERT INTO users (id) VALUES ($1)`, user)
		require.NoError(t, err)
		_, err = app.Exec(ctx, `INSERT INTO venues (id, name, city) VALUES ($1, 'Hall', 'Oslo')`, venue)
		require.NoError(t, err)
		var n int
		require.NoError(t, app.QueryRow(ctx, `SELECT count(*) FROM users WHERE id = $1`, user).Scan(&n))
		require.Equal(t, 1, n)
		_, err = app.Exec(ctx, `UPDATE venues SET city = 'Bergen' WHERE id = $1`, venue)
		require.NoError(t, err)
		var v int
		require.NoError(t, app.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v), "it may read the schema version")
		require.Equal(t, schema.Latest(), v)
	})
	t.Run("encore_app changes no schema", func(t *testing.T) {
		for _, sql := range []string{
			`CREATE TABLE app_made (id int)`,
			`DROP TABLE users`,
			`ALTER TABLE users ADD COLUMN nickname text`,
			`TRUNCATE users`,
			`CREATE TEMP TABLE scratch (id int)`,
			`DELETE FROM schema_migrations`,
		} {
			requireDenied(t, app, sql)
		}
	})
	t.Run("encore_reader reads the browse tables and writes nothing", func(t *testing.T) {
		var n int
		require.NoError(t, reader.QueryRow(ctx, `SELECT count(*) FROM venues`).Scan(&n))
		require.Positive(t, n)
		requireDenied(t, reader, `INSERT INTO venues (id, name, city) VALUES ('v_reader', 'X', 'Y')`)
		requireDenied(t, reader, `UPDATE venues SET city = 'Z'`)
		requireDenied(t, reader, `SELECT count(*) FROM users`)
		// The sales report reads its view, never the reservations behind it.
		require.NoError(t, reader.QueryRow(ctx, `SELECT count(*) FROM sales_items`).Scan(&n))
		requireDenied(t, reader, `SELECT count(*) FROM reservations`)
		requireDenied(t, reader, `CREATE TABLE reader_made (id int)`)
	})
	t.Run("the migrator migrates and encore_app may use what a later migration creates", func(t *testing.T) {
		v, err := schema.Migrate(ctx, migrator)
		require.NoError(t, err)
		require.Equal(t, schema.Latest(), v)
		_, err = migrator.Exec(ctx, `CREATE TABLE later_table (id bigserial PRIMARY KEY, note text)`)
		require.NoError(t, err)
		_, err = app.Exec(ctx, `INSERT INTO later_table (note) VALUES ('default privileges')`)
		require.NoError(t, err)
		requireDenied(t, app, `DROP TABLE later_table`)
	})
	t.Run("the superuser check tells the superuser from encore_app", func(t *testing.T) {
		for _, tc := range []struct {
			pool  *pgxpool.Pool
			super bool
		}{{super, true}, {app, false}, {reader, false}, {migrator, false}} {
			got, err := store.IsSuperuser(ctx, tc.pool)
			require.NoError(t, err)
			require.Equal(t, tc.super, got)
		}
	})
	t.Run("setting the logins up again changes nothing but the passwords", func(t *testing.T) {
		require.NoError(t, schema.SetupLogins(ctx, super, testLogins))
		_, err := app.Exec(ctx, `DELETE FROM users WHERE id = $1`, user)
		require.NoError(t, err)
	})
}

func TestMigrationsGrantEncoreAppTablesMadeLaterWithoutSetup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t) // migrated as the superuser, as development and tests are
	tbl := "later_" + testenv.RandomSuffix()
	_, err := pool.Exec(ctx, `CREATE TABLE `+tbl+` (id int)`)
	require.NoError(t, err)
	for _, tc := range []struct {
		check string
		want  bool
	}{
		{`has_table_privilege('encore_app', 'reservations', 'INSERT, SELECT, UPDATE, DELETE')`, true},
		{`has_table_privilege('encore_app', '` + tbl + `', 'INSERT, SELECT, UPDATE, DELETE')`, true},
		{`has_table_privilege('encore_app', 'schema_migrations', 'INSERT')`, false},
		{`has_table_privilege('encore_app', 'admin_audit', 'INSERT, SELECT')`, true},
		{`has_table_privilege('encore_app', 'admin_audit', 'UPDATE')`, false},
		{`has_table_privilege('encore_app', 'admin_audit', 'DELETE')`, false},
		{`has_schema_privilege('encore_app', 'public', 'CREATE')`, false},
		{`has_schema_privilege('encore_migrator', 'public', 'USAGE')`, true},
	} {
		var got bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT `+tc.check).Scan(&got))
		require.Equal(t, tc.want, got, tc.check)
	}
}

// PostgreSQL computes a verifier itself for a password given in clear; ours,
// given the same salt and iterations, must be the same string, or production
// logins would never authenticate.
func TestPasswordVerifiersMatchPostgreSQLs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	role := "encore_scram_" + testenv.RandomSuffix()
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SET password_encryption = 'scram-sha-256'; CREATE ROLE `+role+` NOLOGIN PASSWORD 'correct horse battery staple'`)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP ROLE IF EXISTS `+role) })
	var stored string
	require.NoError(t, conn.QueryRow(ctx, `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, role).Scan(&stored))
	// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>
	head, _, ok := strings.Cut(strings.TrimPrefix(stored, "SCRAM-SHA-256$"), "$")
	require.True(t, ok, stored)
	iter, saltB64, _ := strings.Cut(head, ":")
	n, err := strconv.Atoi(iter)
	require.NoError(t, err)
	salt, err := base64.StdEncoding.DecodeString(saltB64)
	require.NoError(t, err)
	ours, err := schema.ScramVerifierWith("correct horse battery staple", salt, n)
	require.NoError(t, err)
	require.Equal(t, stored, ours)
}
