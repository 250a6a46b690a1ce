package devstack

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// testTimeout bounds each test, a first-time apt-get install included.
const testTimeout = 12 * time.Minute

// logBuf collects progress lines and echoes them to the test log.
type logBuf struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer
}

func newLog(t *testing.T) *logBuf { return &logBuf{t: t} }

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// handedOut holds the ports freePort has returned in this process: the
// tests run in parallel, and a port handed to one test but not yet listened
// on must not go to another.
var handedOut sync.Map

// freePort returns the first port from base on that nothing listens on and
// no other test of this process was given.
func freePort(t *testing.T, base int) int {
	t.Helper()
	for p := base; p < base+200; p++ {
		if portOpen(p) {
			continue
		}
		if _, taken := handedOut.LoadOrStore(p, t.Name()); taken {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		// Handed back after the test's own clean-ups (LIFO), which stop
		// what it started on the port.
		t.Cleanup(func() { handedOut.Delete(p) })
		return p
	}
	t.Fatalf("no free port from %d", base)
	return 0
}

// reachableDir is a temporary folder the postgres user can enter, so the
// cluster lives in Dir/postgres even when the tests run as root.
func reachableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	return filepath.Join(dir, ".encore")
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// shutdownAtEnd stops whatever runs from opts.Dir when the test ends.
func shutdownAtEnd(t *testing.T, opts Options) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		opts.Log = nil
		if err := Shutdown(ctx, opts); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
}

func pgAnswers(url string) bool {
	return pingPostgres(context.Background(), url, 2*time.Second) == nil
}

func redisAnswers(url string) bool {
	return pingRedis(context.Background(), url, 2*time.Second) == nil
}

func pgExec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	require.NoError(t, err)
}

func pgQueryInt(t *testing.T, url, sql string) int {
	t.Helper()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, sql).Scan(&n))
	return n
}

func TestMissingProgramsGiveAClearError(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := Options{
		Dir:          filepath.Join(t.TempDir(), ".encore"),
		PostgresPort: freePort(t, 55480),
		RedisPort:    freePort(t, 63880),
		SearchPath:   []string{t.TempDir()}, // empty: nothing to find
		AllowInstall: false,
		Log:          newLog(t),
	}
	svc, err := EnsurePostgres(ctx, opts, "")
	require.Nil(t, svc)
	require.ErrorIs(t, err, ErrNotInstalled)
	require.Contains(t, err.Error(), "PostgreSQL server not found: install it with `")
	require.Contains(t, err.Error(), "or set ENCORE_DATABASE_URL")
	if isDebianLike() {
		require.Contains(t, err.Error(), "apt-get install postgresql`")
	}
	t.Log(err)

	svc, err = EnsureRedis(ctx, opts, "")
	require.Nil(t, svc)
	require.ErrorIs(t, err, ErrNotInstalled)
	require.Contains(t, err.Error(), "Redis server not found: install it with `")
	require.Contains(t, err.Error(), "or set ENCORE_REDIS_URL")
	if isDebianLike() {
		require.Contains(t, err.Error(), "apt-get install redis-server`")
	}
	t.Log(err)
}

func TestPostgresStartReuseStopRestart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	log := newLog(t)
	opts := Options{Dir: reachableDir(t), PostgresPort: freePort(t, 55432), AllowInstall: true, Log: log}
	shutdownAtEnd(t, opts)

	start := time.Now()
	s1, err := EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	t.Logf("first EnsurePostgres (install if needed, initdb, start): %s", time.Since(start))
	require.True(t, s1.Started)
	require.Equal(t, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", opts.PostgresPort), s1.URL)
	require.Equal(t, filepath.Join(opts.Dir, "postgres"), s1.DataDir)
	require.FileExists(t, filepath.Join(s1.DataDir, "PG_VERSION"))
	require.FileExists(t, filepath.Join(s1.DataDir, fmt.Sprintf(".s.PGSQL.%d", opts.PostgresPort)), "unix socket in the data folder")
	require.Equal(t, 1, strings.Count(log.String(), "initialising cluster"))
	if isRoot() {
		fi, err := os.Stat(s1.DataDir)
		require.NoError(t, err)
		owner, err := lookupSysUser("postgres")
		require.NoError(t, err)
		require.Equal(t, owner.uid, fi.Sys().(*syscall.Stat_t).Uid, "data folder owned by postgres")
	}
	require.Equal(t, 300, pgQueryInt(t, s1.URL, "SELECT current_setting('max_connections')::int"))
	require.Equal(t, 1, pgQueryInt(t, s1.URL, "SELECT (current_setting('server_encoding') = 'UTF8')::int"))

	// A second Ensure reuses the running server and does not own it.
	s2, err := EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	require.False(t, s2.Started)
	require.Equal(t, s1.URL, s2.URL)

	pgExec(t, s1.URL, "CREATE TABLE kept (id int PRIMARY KEY, note text)")
	pgExec(t, s1.URL, "INSERT INTO kept VALUES (1, 'survives a restart')")

	// Stop of a Service that found the server running never stops it.
	require.NoError(t, s2.Stop())
	require.True(t, pgAnswers(s1.URL))

	// The starter's Stop stops it once nobody else uses it.
	require.NoError(t, s1.Stop())
	require.False(t, pgAnswers(s1.URL))
	require.NoError(t, s1.Stop(), "second Stop is a no-op")

	// Restart: the data is reused, no second initdb.
	before := len(log.String())
	start = time.Now()
	s3, err := EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	t.Logf("restart of an initialised cluster: %s", time.Since(start))
	require.True(t, s3.Started)
	require.NotContains(t, log.String()[before:], "initialising cluster")
	require.Equal(t, 1, pgQueryInt(t, s3.URL, "SELECT count(*) FROM kept WHERE note = 'survives a restart'"))

	// While another Service uses it, even the starter's Stop leaves it running.
	s4, err := EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	require.False(t, s4.Started)
	require.NoError(t, s3.Stop())
	require.True(t, pgAnswers(s3.URL))
	require.Contains(t, log.String(), "leaving it running")
	require.NoError(t, s4.Stop())
	require.True(t, pgAnswers(s3.URL), "s4 did not start it")

	// Shutdown stops it whoever started it.
	require.NoError(t, Shutdown(ctx, opts))
	require.False(t, pgAnswers(s3.URL))
	require.NoFileExists(t, filepath.Join(s3.DataDir, "postmaster.pid"))
}

func TestPostgresPreferredURL(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := Options{Dir: reachableDir(t), PostgresPort: freePort(t, 55440), AllowInstall: true, Log: newLog(t)}
	shutdownAtEnd(t, opts)
	base, err := EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	require.True(t, base.Started)

	// An answering preferred URL is used as it is, with nothing to find,
	// start or stop.
	other := Options{Dir: filepath.Join(t.TempDir(), ".encore"), PostgresPort: freePort(t, 55490), SearchPath: []string{}, Log: newLog(t)}
	preferred := strings.Replace(base.URL, "sslmode=disable", "sslmode=disable&application_name=devstack", 1)
	svc, err := EnsurePostgres(ctx, other, preferred)
	require.NoError(t, err)
	require.False(t, svc.Started)
	require.Equal(t, preferred, svc.URL)
	require.NoError(t, svc.Stop())
	require.True(t, pgAnswers(base.URL))

	// A preferred URL that does not answer falls back to the local server,
	// here the one already running on the port.
	dead := PostgresURL(freePort(t, 55500))
	svc, err = EnsurePostgres(ctx, opts, dead)
	require.NoError(t, err)
	require.False(t, svc.Started)
	require.Equal(t, base.URL, svc.URL)
	require.NoError(t, svc.Stop())
	require.NoError(t, base.Stop())
	require.False(t, pgAnswers(base.URL))
}

func TestPostgresConcurrentEnsure(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := Options{Dir: reachableDir(t), PostgresPort: freePort(t, 55450), AllowInstall: true, Fast: true}
	shutdownAtEnd(t, opts)

	const n = 4
	var wg sync.WaitGroup
	svcs := make([]*Service, n)
	errs := make([]error, n)
	logs := make([]*logBuf, n)
	start := time.Now()
	for i := range n {
		logs[i] = newLog(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := opts
			o.Log = logs[i]
			svcs[i], errs[i] = EnsurePostgres(ctx, o, "")
		}()
	}
	wg.Wait()
	t.Logf("4 concurrent EnsurePostgres: %s", time.Since(start))
	started, inits := 0, 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, PostgresURL(opts.PostgresPort), svcs[i].URL)
		if svcs[i].Started {
			started++
		}
		inits += strings.Count(logs[i].String(), "initialising cluster")
	}
	require.Equal(t, 1, started, "exactly one caller starts the server")
	require.Equal(t, 1, inits, "exactly one initdb")
	require.Equal(t, 0, pgQueryInt(t, svcs[0].URL, "SELECT (current_setting('fsync') = 'on')::int"), "Fast turns fsync off")

	// Stop in any order: the server stops with the last user's Stop only if
	// that user started it, so stop the starter last and check it stops.
	var starter *Service
	for _, s := range svcs {
		if s.Started {
			starter = s
			continue
		}
		require.NoError(t, s.Stop())
	}
	require.True(t, pgAnswers(starter.URL))
	require.NoError(t, starter.Stop())
	require.False(t, pgAnswers(starter.URL))
}

func TestPostgresStalePidFileAfterCrash(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	log := newLog(t)
	opts := Options{Dir: reachableDir(t), PostgresPort: freePort(t, 55460), AllowInstall: true, Fast: true, Log: log}
	shutdownAtEnd(t, opts)
	s1, err := EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	require.True(t, s1.Started)

	// Crash: kill the postmaster, then make its pid file name a live
	// process that is not PostgreSQL (as after a reboot that reused the pid).
	pidFile := filepath.Join(s1.DataDir, "postmaster.pid")
	pid, lines := readPidFile(pidFile)
	require.Greater(t, pid, 0)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.True(t, waitExit(pid, 10*time.Second))
	require.Eventually(t, func() bool { return !portOpen(opts.PostgresPort) }, 10*time.Second, 50*time.Millisecond)
	lines[0] = strconv.Itoa(os.Getpid())
	require.NoError(t, os.WriteFile(pidFile, []byte(strings.Join(lines, "\n")), 0o600))

	s2, err := EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	require.True(t, s2.Started)
	require.Contains(t, log.String(), "removing stale")
	require.True(t, pgAnswers(s2.URL))
	s1.done = true // its server is gone; drop its in-use lock
	s1.releaseInUse()
	require.NoError(t, s2.Stop())
	require.False(t, pgAnswers(s2.URL))
}

func TestPostgresPrivateParentFolder(t *testing.T) {
	t.Parallel()
	if !isRoot() {
		t.Skip("only root runs PostgreSQL as another user")
	}
	ctx := testContext(t)
	log := newLog(t)
	private := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(private), 0o700))
	opts := Options{Dir: filepath.Join(private, "project", ".encore"), PostgresPort: freePort(t, 55470), AllowInstall: true, Fast: true, Log: log}
	shutdownAtEnd(t, opts)
	fallback := filepath.Join("/var/tmp", "encore-"+dirHash(opts.Dir))
	t.Cleanup(func() { os.RemoveAll(fallback) })

	svc, err := EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	require.True(t, svc.Started)
	require.Equal(t, filepath.Join(fallback, "postgres"), svc.DataDir)
	require.Contains(t, log.String(), fallback)
	require.True(t, pgAnswers(svc.URL))
	require.NoError(t, svc.Stop())
	require.False(t, pgAnswers(svc.URL))

	// The next start finds the cluster there again.
	before := len(log.String())
	svc, err = EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	require.True(t, svc.Started)
	require.Equal(t, filepath.Join(fallback, "postgres"), svc.DataDir)
	require.NotContains(t, log.String()[before:], "initialising cluster")
	require.NoError(t, svc.Stop())
}

func TestEnsureAndDropDatabase(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := Options{Dir: reachableDir(t), PostgresPort: freePort(t, 55475), AllowInstall: true, Fast: true, Log: newLog(t)}
	shutdownAtEnd(t, opts)
	svc, err := EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	t.Cleanup(func() { svc.Stop() })

	const name = "encore_Test-db"
	var wg sync.WaitGroup
	urls := make([]string, 8)
	errs := make([]error, 8)
	for i := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			urls[i], errs[i] = EnsureDatabase(ctx, svc.URL, name)
		}()
	}
	wg.Wait()
	want := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/encore_Test-db?sslmode=disable", opts.PostgresPort)
	for i := range urls {
		require.NoError(t, errs[i])
		require.Equal(t, want, urls[i])
	}
	conn, err := pgx.Connect(ctx, want)
	require.NoError(t, err)
	var db string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	require.Equal(t, name, db)

	// Drop while a session is connected: WITH (FORCE) ends it.
	require.NoError(t, DropDatabase(ctx, svc.URL, name))
	require.Error(t, conn.Ping(ctx))
	conn.Close(ctx)
	require.Equal(t, 0, pgQueryInt(t, svc.URL, "SELECT count(*) FROM pg_database WHERE datname = 'encore_Test-db'"))
	require.NoError(t, DropDatabase(ctx, svc.URL, name), "dropping a missing database is fine")
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	u, err := withDatabase("postgres://u:p@h:5/postgres?sslmode=disable", "app")
	require.NoError(t, err)
	require.Equal(t, "postgres://u:p@h:5/app?sslmode=disable", u)
	u, err = withDatabase("host=h port=5 user=u dbname=postgres", "o'k")
	require.NoError(t, err)
	require.Equal(t, `host=h port=5 user=u dbname=postgres dbname='o\'k'`, u)
	_, err = withDatabase("postgres://h/x", "")
	require.Error(t, err)
}

func TestRedisStartReuseStopRestart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	log := newLog(t)
	opts := Options{Dir: reachableDir(t), RedisPort: freePort(t, 63800), AllowInstall: true, Log: log}
	shutdownAtEnd(t, opts)

	start := time.Now()
	s1, err := EnsureRedis(ctx, opts, "")
	require.NoError(t, err)
	t.Logf("first EnsureRedis (install if needed, start): %s", time.Since(start))
	require.True(t, s1.Started)
	require.Equal(t, fmt.Sprintf("redis://127.0.0.1:%d/0", opts.RedisPort), s1.URL)
	require.Equal(t, filepath.Join(opts.Dir, "redis"), s1.DataDir)

	s2, err := EnsureRedis(ctx, opts, "")
	require.NoError(t, err)
	require.False(t, s2.Started)
	require.Equal(t, s1.URL, s2.URL)

	o, err := redis.ParseURL(s1.URL)
	require.NoError(t, err)
	c := redis.NewClient(o)
	require.NoError(t, c.Set(ctx, "kept", "survives a restart", 0).Err())
	require.Equal(t, "127.0.0.1", c.ConfigGet(ctx, "bind").Val()["bind"])
	c.Close()

	require.NoError(t, s2.Stop())
	require.True(t, redisAnswers(s1.URL), "Stop of a reused server is a no-op")
	require.NoError(t, s1.Stop())
	require.False(t, redisAnswers(s1.URL))

	start = time.Now()
	s3, err := EnsureRedis(ctx, opts, "")
	require.NoError(t, err)
	t.Logf("restart: %s", time.Since(start))
	require.True(t, s3.Started)
	c = redis.NewClient(o)
	require.Equal(t, "survives a restart", c.Get(ctx, "kept").Val(), "append-only file keeps the data")
	c.Close()

	s4, err := EnsureRedis(ctx, opts, "")
	require.NoError(t, err)
	require.False(t, s4.Started)
	require.NoError(t, s3.Stop())
	require.True(t, redisAnswers(s3.URL), "still used by s4")
	require.NoError(t, s4.Stop())
	require.True(t, redisAnswers(s3.URL))
	require.NoError(t, Shutdown(ctx, opts))
	require.False(t, redisAnswers(s3.URL))
}

func TestRedisFastHasNoPersistence(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := Options{Dir: reachableDir(t), RedisPort: freePort(t, 63810), AllowInstall: true, Fast: true, Log: newLog(t)}
	shutdownAtEnd(t, opts)
	s1, err := EnsureRedis(ctx, opts, "")
	require.NoError(t, err)
	o, err := redis.ParseURL(s1.URL)
	require.NoError(t, err)
	c := redis.NewClient(o)
	require.NoError(t, c.Set(ctx, "gone", "1", 0).Err())
	require.Equal(t, "no", c.ConfigGet(ctx, "appendonly").Val()["appendonly"])
	c.Close()
	require.NoError(t, s1.Stop())
	s2, err := EnsureRedis(ctx, opts, "")
	require.NoError(t, err)
	require.True(t, s2.Started)
	c = redis.NewClient(o)
	require.Equal(t, int64(0), c.Exists(ctx, "gone").Val())
	c.Close()
	require.NoError(t, s2.Stop())
}

func TestRedisConcurrentAndPreferred(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := Options{Dir: reachableDir(t), RedisPort: freePort(t, 63820), AllowInstall: true, Fast: true}
	shutdownAtEnd(t, opts)
	const n = 4
	var wg sync.WaitGroup
	svcs := make([]*Service, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := opts
			o.Log = newLog(t)
			svcs[i], errs[i] = EnsureRedis(ctx, o, "")
		}()
	}
	wg.Wait()
	started := 0
	for i := range n {
		require.NoError(t, errs[i])
		if svcs[i].Started {
			started++
		}
	}
	require.Equal(t, 1, started)

	// Preferred URL that answers: used, never stopped.
	other := Options{Dir: filepath.Join(t.TempDir(), ".encore"), RedisPort: freePort(t, 63890), SearchPath: []string{}, Log: newLog(t)}
	preferred := strings.TrimSuffix(svcs[0].URL, "/0") + "/3"
	p, err := EnsureRedis(ctx, other, preferred)
	require.NoError(t, err)
	require.False(t, p.Started)
	require.Equal(t, preferred, p.URL)
	require.NoError(t, p.Stop())
	require.True(t, redisAnswers(svcs[0].URL))

	// Preferred URL that does not answer: falls back to the local server.
	p, err = EnsureRedis(ctx, opts, RedisURL(freePort(t, 63900)))
	require.NoError(t, err)
	require.False(t, p.Started)
	require.Equal(t, RedisURL(opts.RedisPort), p.URL)
	require.NoError(t, p.Stop())

	for _, s := range svcs {
		if !s.Started {
			require.NoError(t, s.Stop())
		}
	}
	for _, s := range svcs {
		require.NoError(t, s.Stop())
	}
	require.False(t, redisAnswers(svcs[0].URL))
}

// TestHelperEnsureProcess is run as a child process by
// TestConcurrentProcesses; it is skipped otherwise.
func TestHelperEnsureProcess(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("DEVSTACK_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process of TestConcurrentProcesses")
	}
	pgPort, _ := strconv.Atoi(os.Getenv("DEVSTACK_HELPER_PG_PORT"))
	redisPort, _ := strconv.Atoi(os.Getenv("DEVSTACK_HELPER_REDIS_PORT"))
	ctx := testContext(t)
	var buf bytes.Buffer
	opts := Options{Dir: dir, PostgresPort: pgPort, RedisPort: redisPort, Fast: true, AllowInstall: true, Log: &buf}
	pg, err := EnsurePostgres(ctx, opts, "")
	require.NoError(t, err)
	rd, err := EnsureRedis(ctx, opts, "")
	require.NoError(t, err)
	fmt.Printf("RESULT pg_started=%v redis_started=%v inits=%d\n", pg.Started, rd.Started, strings.Count(buf.String(), "initialising cluster"))
	// Exit without Stop: the servers keep running for the others.
}

func TestConcurrentProcesses(t *testing.T) {
	t.Parallel()
	testContext(t)
	dirA, dirB := reachableDir(t), reachableDir(t)
	pgPort, redisPort := freePort(t, 55510), freePort(t, 63910)
	for _, d := range []string{dirA, dirB} {
		shutdownAtEnd(t, Options{Dir: d, PostgresPort: pgPort, RedisPort: redisPort})
	}
	// Four processes at once: two share a Dir, two others share another
	// Dir, all share the ports.
	const n = 4
	outs := make([]bytes.Buffer, n)
	cmds := make([]*exec.Cmd, n)
	for i := range n {
		dir := dirA
		if i%2 == 1 {
			dir = dirB
		}
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestHelperEnsureProcess$", "-test.count=1")
		cmds[i].Env = append(os.Environ(),
			"DEVSTACK_HELPER_DIR="+dir,
			"DEVSTACK_HELPER_PG_PORT="+strconv.Itoa(pgPort),
			"DEVSTACK_HELPER_REDIS_PORT="+strconv.Itoa(redisPort))
		cmds[i].Stdout = &outs[i]
		cmds[i].Stderr = &outs[i]
		cmds[i].WaitDelay = time.Second
		require.NoError(t, cmds[i].Start())
	}
	pgStarted, redisStarted, inits := 0, 0, 0
	for i := range n {
		err := cmds[i].Wait()
		require.NoError(t, err, outs[i].String())
		var pg, rd bool
		var in int
		line := outs[i].String()[strings.Index(outs[i].String(), "RESULT"):]
		_, err = fmt.Sscanf(line, "RESULT pg_started=%t redis_started=%t inits=%d", &pg, &rd, &in)
		require.NoError(t, err, outs[i].String())
		if pg {
			pgStarted++
		}
		if rd {
			redisStarted++
		}
		inits += in
	}
	require.Equal(t, 1, pgStarted)
	require.Equal(t, 1, redisStarted)
	require.Equal(t, 1, inits)
	require.True(t, pgAnswers(PostgresURL(pgPort)), "the servers outlive the processes")
	require.True(t, redisAnswers(RedisURL(redisPort)))
}
