package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/dev/stack"
	"github.com/encore-tickets/encore/schema"
	"github.com/encore-tickets/encore/store"
)

// openDatabase connects a small pool to Encore's database for a one-shot
// command: the configured one, or encore dev's private cluster (started for
// the command and stopped by done when the command started it).
func openDatabase(ctx context.Context, cfg config.Config) (*pgxpool.Pool, func(), error) {
	inf, err := stack.Provide(ctx, cfg, os.Stderr)
	if err != nil {
		return nil, nil, err
	}
	pool, err := store.Open(ctx, inf.DatabaseURL, 2)
	if err != nil {
		_ = inf.Close()
		return nil, nil, err
	}
	return pool, func() {
		pool.Close()
		_ = inf.Close()
	}, nil
}

// runMigrate applies migrations (and the demo seed) to the configured
// database, or to encore dev's private one when none is configured.
func runMigrate(ctx context.Context, cfg config.Config, seed bool) error {
	pool, done, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	before, err := schema.Version(ctx, pool)
	if err != nil {
		return err
	}
	v, err := stack.MigrateAndSeed(ctx, pool, seed)
	if err != nil {
		return err
	}
	fmt.Printf("schema version %d (was %d, latest embedded %d)\n", v, before, schema.Latest())
	if seed {
		fmt.Println("demo events seeded")
	}
	return nil
}

// runDBLogins creates the least-privilege logins with the configured
// passwords, connecting as the configured (superuser) login.
func runDBLogins(ctx context.Context, cfg config.Config) error {
	l := schema.Logins{Migrator: cfg.DBMigratorPassword.Reveal(), App: cfg.DBAppPassword.Reveal(), Reader: cfg.DBReaderPassword.Reveal()}
	var missing []string
	for env, pw := range map[string]string{"ENCORE_DB_MIGRATOR_PASSWORD": l.Migrator, "ENCORE_DB_APP_PASSWORD": l.App,
		"ENCORE_DB_READER_PASSWORD": l.Reader} {
		if pw == "" {
			missing = append(missing, env)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("db logins: set %s (encore keys generate prints fresh ones)", strings.Join(missing, ", "))
	}
	pool, done, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := schema.SetupLogins(ctx, pool, l); err != nil {
		return err
	}
	fmt.Printf("logins ready: %s owns the database (encore migrate), %s reads and writes rows (encore api, encore worker), "+
		"%s reads the browse tables (ENCORE_READER_DATABASE_URL)\n", schema.MigratorRole, schema.AppRole, schema.ReaderRole)
	return nil
}

// runAudit checks the inventory invariants of one event, or of all when event
// is empty.
func runAudit(ctx context.Context, cfg config.Config, event string) error {
	pool, done, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	rep, err := store.New(pool, store.Options{}).Holds.Audit(ctx, event, cfg.SweepLagAllowance)
	if err != nil {
		return err
	}
	fmt.Println(rep)
	if rep.Violations() > 0 {
		fmt.Fprintf(os.Stderr, "audit: %d violations\n", rep.Violations())
		return exitCode(1)
	}
	fmt.Println("audit: ok")
	return nil
}

// runTestInfra starts private PostgreSQL and Redis for tests (installing them
// when missing), runs the command with ENCORE_TEST_DATABASE_URL and
// ENCORE_TEST_REDIS_URL set, and stops what it started. ENCORE_TEST_BINARY
// names this executable: built from the checkout under test, it is the
// binary the topology tests start, so they need not link another.
// ENCORE_TEST_TEMPORAL_ADDRESS names the Temporal server it runs for the
// packages whose tests run workflows (testTemporal). args is the child's
// command line exactly as given after --: cobra has already taken the --.
func runTestInfra(ctx context.Context, cfg config.Config, ramBase string, args []string) error {
	if len(args) == 0 {
		return errors.New("testinfra: give a command after --")
	}
	dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "test"))
	if err != nil {
		return err
	}
	tmp := ""
	if ram := testRAMDir(ramBase, dir); ram != "" {
		if dir, tmp, err = prepareRAMDir(ram); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "testinfra: the test servers' data and TMPDIR in %s (a RAM disk)\n", ram)
	}
	opts := devstack.Options{Dir: dir, PostgresPort: 54339, RedisPort: 63809, AllowInstall: true, Fast: true, Log: os.Stderr}
	sctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	pg, err := devstack.EnsurePostgres(sctx, opts, os.Getenv("ENCORE_TEST_DATABASE_URL"))
	if err != nil {
		return err
	}
	defer pg.Stop()
	rd, err := devstack.EnsureRedis(sctx, opts, os.Getenv("ENCORE_TEST_REDIS_URL"))
	if err != nil {
		return err
	}
	defer rd.Stop()
	tsrv, err := startTestTemporal(pg.URL, dir)
	if err != nil {
		return err
	}
	defer tsrv.Stop()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "ENCORE_TEST_DATABASE_URL="+pg.URL, "ENCORE_TEST_REDIS_URL="+rd.URL)
	if tmp != "" {
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	}
	if self, err := os.Executable(); err == nil {
		cmd.Env = append(cmd.Env, "ENCORE_TEST_BINARY="+self)
	}
	cmd.Env = append(cmd.Env, "ENCORE_TEST_TEMPORAL_ADDRESS="+tsrv.Addr, "ENCORE_TEST_TEMPORAL_LOG="+tsrv.LogPath,
		"ENCORE_TEST_TEMPORAL_API_KEY="+tsrv.APIKey)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return exitCode(ee.ExitCode())
		}
		return err
	}
	return nil
}

// minRAMDisk is the free space a RAM disk needs before testinfra puts the
// test data on it: a full run's databases, PostgreSQL clusters and test
// binaries peak at a few GiB.
const minRAMDisk = 8 << 30

// testRAMDir returns the folder for the test data of the checkout whose disk
// folder is disk, under base when base is a tmpfs with minRAMDisk free, or
// "" to stay on disk. The test servers run with fsync off and their data is
// thrown away, so a disk only costs: a full run wrote 5.5 GB to it (the test
// databases, the topology tests' clusters, the test binaries), 0.4 GB with
// the RAM disk (BENCHMARKS.md). The name is a hash of
// disk, so two checkouts never share a cluster, and short: it is the tests'
// TMPDIR, and a PostgreSQL socket in a test's folder must fit the 100 bytes
// devstack allows a Unix socket's path, as it does under /tmp.
func testRAMDir(base, disk string) string {
	if base == "" || freeRAMDisk(base) < minRAMDisk {
		return ""
	}
	sum := sha256.Sum256([]byte(disk))
	return filepath.Join(base, "et-"+hex.EncodeToString(sum[:3]))
}

// prepareRAMDir makes ram, the tests' TMPDIR, sticky and open to all as /tmp
// is (the servers run as another user when root starts them), and in it
// servers, for the test PostgreSQL and Redis.
func prepareRAMDir(ram string) (servers, tmp string, err error) {
	servers = filepath.Join(ram, "servers")
	if err := os.MkdirAll(servers, 0o755); err != nil {
		return "", "", fmt.Errorf("testinfra: %w", err)
	}
	if err := os.Chmod(ram, 0o777|os.ModeSticky); err != nil {
		return "", "", fmt.Errorf("testinfra: %w", err)
	}
	return servers, ram, nil
}
