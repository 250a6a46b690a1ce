// Package testenv gives every test package real infrastructure of its own: a
// fresh PostgreSQL database migrated from the embedded migrations, an isolated
// Redis key namespace, and (see temporal.go) an embedded Temporal server.
//
// Where the servers come from: ENCORE_TEST_DATABASE_URL and
// ENCORE_TEST_REDIS_URL when set (the README's test command sets them after
// starting private servers); otherwise devstack starts, or installs, a private
// PostgreSQL and Redis under .encore/test at the repository root and leaves
// them running for the next package.
//
// A package that uses testenv calls Main from its TestMain, which removes what
// the package created when its tests end.
//
// Tests are parallel by default (t.Parallel), so each test keeps to state of
// its own. What is shared is per package: DB's database and Redis's key
// prefix. Per test: rows under IDs of the test's own (RandomSuffix in every
// ID, as the fixtures do), Redis keys under a prefix of its own
// (RedisPrefix), and, for a test that needs a whole database to itself (a
// database-wide lock, a count or drain of a whole table, fixed IDs),
// FreshDB.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/schema"
)

// Environment variables the README's test command sets.
const (
	EnvDatabaseURL = "ENCORE_TEST_DATABASE_URL"
	EnvRedisURL    = "ENCORE_TEST_REDIS_URL"
	// EnvBinary names the encore binary that runs the test command
	// (`encore testinfra`, built by `go run` from this checkout): tests that
	// start encore processes run it instead of linking a 250 MB binary of
	// their own.
	EnvBinary = "ENCORE_TEST_BINARY"
	// EnvTemporalAddress is the Temporal server the test command runs for
	// every package's workflows (package temporaltest), and EnvTemporalLog
	// its log file.
	EnvTemporalAddress = "ENCORE_TEST_TEMPORAL_ADDRESS"
	EnvTemporalLog     = "ENCORE_TEST_TEMPORAL_LOG"
	// EnvTemporalAPIKey is that server's API key: it refuses every call
	// without it (or a signed-in support user's token).
	EnvTemporalAPIKey = "ENCORE_TEST_TEMPORAL_API_KEY"
)

// Ports of the private test servers, apart from the dev stack's.
const (
	testPostgresPort = 54339
	testRedisPort    = 63809
)

var (
	mainCalled bool
	mu         sync.Mutex
	cleanups   []func()

	adminOnce sync.Once
	adminURL  string
	redisURL  string
	adminErr  error

	// The package's own database and Redis namespace, made on first use.
	sharedDB    = sync.OnceValues(openDB)
	sharedRedis = sync.OnceValues(openRedis)
)

// packageDB is the package's own database.
type packageDB struct {
	pool *pgxpool.Pool
	url  string
}

// packageRedis is the package's Redis client and key prefix.
type packageRedis struct {
	client *redis.Client
	prefix string
}

// Main runs the package's tests and then drops the package's database, deletes
// its Redis keys and stops its Temporal server.
func Main(m *testing.M) {
	mainCalled = true
	code := m.Run()
	mu.Lock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	mu.Unlock()
	os.Exit(code)
}

func atExit(f func()) {
	mu.Lock()
	defer mu.Unlock()
	cleanups = append(cleanups, f)
}

func requireMain(tb testing.TB) {
	tb.Helper()
	if !mainCalled {
		tb.Fatal("testenv: call testenv.Main(m) from this package's TestMain")
	}
}

// RepoRoot is the folder holding the main module's go.mod: the nearest one
// above the working folder, which go test sets to the package's own. Not
// found from this source file's path: the test command builds with
// -trimpath, which leaves no folder in it.
func RepoRoot() string { return repoRoot() }

var repoRoot = sync.OnceValue(func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("testenv: working folder: %v", err))
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			panic("testenv: no go.mod above " + wd)
		}
	}
})

// ServerTempDir is tb.TempDir opened for other users to enter, for servers
// a test starts in it: when root runs the tests, devstack runs PostgreSQL
// as its own user, which cannot enter t.TempDir's private folders and would
// put the cluster in /var/tmp on disk instead of the test's temporary
// folder (a RAM disk under encore testinfra). The folder's contents stay
// the test's to make private.
func ServerTempDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	// t.TempDir is <TMPDIR>/<test><n>/<seq>: both levels are private.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			tb.Fatalf("testenv: %v", err)
		}
	}
	return dir
}

func servers() (string, string, error) {
	adminOnce.Do(func() {
		adminURL, redisURL = os.Getenv(EnvDatabaseURL), os.Getenv(EnvRedisURL)
		if adminURL != "" && redisURL != "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		opts := devstack.Options{
			Dir:          filepath.Join(RepoRoot(), ".encore", "test"),
			PostgresPort: testPostgresPort,
			RedisPort:    testRedisPort,
			AllowInstall: true,
			Fast:         true,
			Log:          os.Stderr,
		}
		// Only the servers the environment did not name are ensured.
		for _, s := range []struct {
			url    *string
			ensure func(context.Context, devstack.Options, string) (*devstack.Service, error)
		}{{&adminURL, devstack.EnsurePostgres}, {&redisURL, devstack.EnsureRedis}} {
			if *s.url != "" {
				continue
			}
			svc, err := s.ensure(ctx, opts, "")
			if err != nil {
				adminErr = err
				return
			}
			*s.url = svc.URL
		}
	})
	return adminURL, redisURL, adminErr
}

// packageTag names this test binary's package for database and key names.
func packageTag() string {
	exe := filepath.Base(os.Args[0])
	exe = strings.TrimSuffix(exe, ".test")
	exe = regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(exe), "_")
	if len(exe) > 30 {
		exe = exe[:30]
	}
	return exe
}

// RandomSuffix is a short random hex string for unique names.
func RandomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// shared returns one of the package's shared resources, made by get on
// first use, and fails tb if it could not be made.
func shared[T any](tb testing.TB, what string, get func() (T, error)) T {
	tb.Helper()
	requireMain(tb)
	v, err := get()
	if err != nil {
		tb.Fatalf("testenv: %s: %v", what, err)
	}
	return v
}

// DatabaseURL returns the URL of this package's own migrated database.
func DatabaseURL(tb testing.TB) string {
	tb.Helper()
	return shared(tb, "database", sharedDB).url
}

// DB returns a pool on this package's own database, created and migrated on
// first use and dropped when the package's tests end.
func DB(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return shared(tb, "database", sharedDB).pool
}

func openDB() (packageDB, error) {
	admin, _, err := servers()
	if err != nil {
		return packageDB{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := fmt.Sprintf("test_%s_%s", packageTag(), RandomSuffix())
	url, err := devstack.EnsureDatabase(ctx, admin, name)
	if err != nil {
		return packageDB{}, err
	}
	atExit(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = devstack.DropDatabase(ctx, admin, name)
	})
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return packageDB{}, err
	}
	cfg.MaxConns = 40
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return packageDB{}, err
	}
	atExit(pool.Close) // runs before the drop: cleanups run last-in first-out
	if _, err := schema.Migrate(ctx, pool); err != nil {
		return packageDB{}, err
	}
	return packageDB{pool: pool, url: url}, nil
}

// Redis returns a client and this package's key prefix. Every key a package's
// code writes must start with the prefix; the keys are deleted when the
// package's tests end. A test that wants keys of its own (so parallel tests
// never see each other's) uses RedisPrefix.
func Redis(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	r := shared(tb, "Redis", sharedRedis)
	return r.client, r.prefix
}

func openRedis() (packageRedis, error) {
	_, u, err := servers()
	if err != nil {
		return packageRedis{}, err
	}
	opt, err := redis.ParseURL(u)
	if err != nil {
		return packageRedis{}, err
	}
	opt.PoolSize = 64
	r := packageRedis{client: redis.NewClient(opt), prefix: fmt.Sprintf("test:%s:%s:", packageTag(), RandomSuffix())}
	atExit(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		iter := r.client.Scan(ctx, 0, r.prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			r.client.Del(ctx, iter.Val())
		}
		_ = r.client.Close()
	})
	return r, nil
}

// RedisPrefix returns the client and a key prefix of the calling test's own,
// under the package's (so the package's clean-up still deletes its keys):
// parallel tests, and the same test under -count, never share a key.
func RedisPrefix(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	rdb, prefix := Redis(tb)
	return rdb, prefix + RandomSuffix() + ":"
}
