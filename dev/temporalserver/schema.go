package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/server/common/config"
	serverlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Embedded schema names understood by the server's schema tool.
const (
	mainSchemaName       = "postgresql/v12/temporal"
	visibilitySchemaName = "postgresql/v12/visibility"
)

// pluginName is the server's PostgreSQL persistence plugin built on pgx.
const pluginName = postgresql.PluginNamePGX

// sqlConfig is the server's connection config for one of the Temporal databases.
func (t pgTarget) sqlConfig(dbName string, maxConns int) *config.SQL {
	attrs := make(map[string]string, len(t.attrs))
	for k, v := range t.attrs {
		attrs[k] = v
	}
	return &config.SQL{
		PluginName:        pluginName,
		User:              t.user,
		Password:          t.password,
		DatabaseName:      dbName,
		ConnectAddr:       t.hostPort,
		ConnectProtocol:   "tcp",
		ConnectAttributes: attrs,
		MaxConns:          maxConns,
		MaxIdleConns:      maxConns,
		MaxConnLifetime:   0,
	}
}

// prepareDatabases creates the two databases if missing and brings their
// schemas to the version this server release expects. Safe to run on every
// start and from several processes at once (a PostgreSQL advisory lock on the
// admin database serialises set-up of the same database names).
func prepareDatabases(ctx context.Context, cfg Config, t pgTarget, logger serverlog.Logger) error {
	admin, err := pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("temporalserver: connect to %s: %w", t.hostPort, err)
	}
	defer admin.Close(context.Background())

	lockKey := schemaLockKey(cfg)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return fmt.Errorf("temporalserver: advisory lock: %w", err)
	}
	defer func() {
		_, _ = admin.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", lockKey)
	}()

	for _, db := range []struct {
		name, schema, version string
		beforeUpgrade         func(exec func(string, ...any) error) error
	}{
		{cfg.DatabaseName, mainSchemaName, pgschema.Version, nil},
		// Start drops the indexes of unmapped custom columns
		// (fitVisibilityIndexes); the migrations expect them.
		{cfg.VisibilityDatabaseName, visibilitySchemaName, pgschema.VisibilityVersion, restoreCustomIndexes},
	} {
		if err := createDatabaseIfMissing(ctx, admin, db.name); err != nil {
			return err
		}
		if err := setupSchema(t.sqlConfig(db.name, 2), db.schema, db.version, db.beforeUpgrade, logger); err != nil {
			return fmt.Errorf("temporalserver: schema %s in database %s: %w", db.schema, db.name, err)
		}
	}
	if err := preRegisterNamespace(t.sqlConfig(cfg.DatabaseName, 2), cfg); err != nil {
		return fmt.Errorf("temporalserver: pre-register namespace %s: %w", cfg.Namespace, err)
	}
	return nil
}

// preRegisterNamespace writes the namespace, with its retention and custom
// search attributes, straight into a database the server is not running on
// yet, if no namespace of that name exists. Every service then loads it at
// start: no waiting for namespace caches to pick up a registration made
// through the API (about 1.5 s a fresh start). Existing namespaces are left
// alone; Start adds missing search attributes to them through the operator API.
//
// The helpers live in the server's schema/sqlite package (temporaltest and
// the Temporal CLI dev server use them) but only use the generic SQL plugin
// interface, so they work with the PostgreSQL plugin too.
func preRegisterNamespace(sqlCfg *config.SQL, cfg Config) error {
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, cfg.Namespace, false, cfg.SearchAttributes)
	if err != nil {
		return err
	}
	ns.Detail.Info.Description = "Encore bookings"
	ns.Detail.Config.Retention = durationpb.New(cfg.Retention)
	return sqliteschema.CreateNamespaces(sqlCfg, ns)
}

// schemaLockKey is the advisory lock (on the admin database) that the
// schemas' set-up and the visibility index fit take, so starts on the same
// databases take turns.
func schemaLockKey(cfg Config) int64 {
	return advisoryKey(cfg.DatabaseName + "/" + cfg.VisibilityDatabaseName)
}

func advisoryKey(s string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("encore-temporalserver:" + s))
	return int64(h.Sum64())
}

func createDatabaseIfMissing(ctx context.Context, admin *pgx.Conn, name string) error {
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("temporalserver: look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: created concurrently
		return nil
	}
	if err != nil {
		return fmt.Errorf("temporalserver: create database %s: %w", name, err)
	}
	return nil
}

// setupSchema runs the server's schema tool on one database.
//
// A database without tables gets the embedded schema.sql of schemaName at the
// version this server release expects, like `temporal-sql-tool setup-schema
// --schema-name <name> --version <expected>`: one pass of CREATE statements,
// where replaying every versioned migration from 0.0 takes seconds (the
// visibility history alone is about 2.5 s here). A database with tables gets
// `setup-schema --version 0.0` (creates the version tables if missing, a
// no-op once a version is recorded). Either way `update-schema --schema-name
// <name>` then applies any embedded migration newer than the recorded version:
// a no-op on a current database, the upgrade path after a server upgrade. All
// steps are idempotent, so this runs on every start.
//
// A database at an older version gets beforeUpgrade (when not nil) first.
//
// The tool's tasks are called directly rather than through RunTool: RunTool
// either calls os.Exit(1) on failure or, with --quiet, swallows the error, and
// logs at info level through its own CLI logger.
func setupSchema(cfg *config.SQL, schemaName, expectedVersion string,
	beforeUpgrade func(exec func(string, ...any) error) error, logger serverlog.Logger) error {
	conn, err := sqltool.NewConnection(cfg, logger)
	if err != nil {
		return err
	}
	defer conn.Close()

	tables, err := conn.ListTables()
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	setup := &schema.SetupConfig{InitialVersion: "0.0"}
	if len(tables) == 0 {
		setup = &schema.SetupConfig{SchemaName: schemaName, InitialVersion: expectedVersion}
	}
	if err := schema.NewSetupSchemaTask(conn, setup, logger).Run(); err != nil {
		return fmt.Errorf("setup-schema: %w", err)
	}
	if beforeUpgrade != nil {
		if version, err := conn.ReadSchemaVersion(); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		} else if version != expectedVersion {
			if err := beforeUpgrade(conn.Exec); err != nil {
				return err
			}
		}
	}
	if err := schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{
		DBName:     cfg.DatabaseName,
		SchemaName: schemaName,
	}, logger).Run(); err != nil {
		return fmt.Errorf("update-schema: %w", err)
	}
	version, err := conn.ReadSchemaVersion()
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version != expectedVersion {
		return fmt.Errorf("schema version is %s after update, server expects %s", version, expectedVersion)
	}
	return nil
}

// dropDatabases removes the two databases (used by StartForTest's cleanup).
func dropDatabases(ctx context.Context, databaseURL string, names ...string) error {
	admin, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	var errs []error
	for _, n := range names {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("drop database %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}
