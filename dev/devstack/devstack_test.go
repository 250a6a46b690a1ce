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
// no other test of this process was given. PostgreSQL's test ports start at
// 25432, below Linux's ephemeral range (32768-60999): a port in that range
// can be taken as the source port of any connection another test package
// opens between this check and the server's bind (seen under load as
// "could not bind ... Address already in use").
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

// ensureFunc is EnsurePostgres or EnsureRedis.
type ensureFunc func(ctx context.Context, opts Options, preferredURL string) (*Service, error)

// privateOptions completes opts for servers of the test's own: a folder the
// postgres user can enter, installing allowed, and whatever runs from it
// shut down when the test ends.
func privateOptions(t *testing.T, opts Options) Options {
	t.Helper()
	opts.Dir = reachableDir(t)
	opts.AllowInstall = true
	shutdownAtEnd(t, opts)
	return opts
}

// requireStarts ensures a server that does not run yet and requires this
// call to have started it.
func requireStarts(t *testing.T, ctx context.Context, ensure ensureFunc, opts Options) *Service {
	t.Helper()
	svc, err := ensure(ctx, opts, "")
	require.NoError(t, err)
	require.True(t, svc.Started)
	return svc
}

// requireFound ensures with preferredURL and requires the call to have found
// a server answering at want, not started one.
func requireFound(t *testing.T, ctx context.Context, ensure ensureFunc, opts Options, preferredURL, want string) *Service {
	t.Helper()
	svc, err := ensure(ctx, opts, preferredURL)
	require.NoError(t, err)
	require.False(t, svc.Started)
	require.Equal(t, want, svc.URL)
	return svc
}

// ensureAtOnce makes n calls of ensure at once, each with a log of its own,
// and requires every one to get the server at want and exactly one to have
// started it. It returns the Services and the calls' logs.
func ensureAtOnce(t *testing.T, ctx context.Context, ensure ensureFunc, opts Options, want string, n int) ([]*Service, []*logBuf) {
	t.Helper()
	svcs := make([]*Service, n)
	errs := make([]error, n)
	logs := make([]*logBuf, n)
	var wg sync.WaitGroup
	for i := range n {
		logs[i] = newLog(t)
		o := opts
		o.Log = logs[i]
		wg.Go(func() { svcs[i], errs[i] = ensure(ctx, o, "") })
	}
	wg.Wait()
	started := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, want, svcs[i].URL)
		if svcs[i].Started {
			started++
		}
	}
	require.Equal(t, 1, started, "exactly one caller starts the server")
	return svcs, logs
}

// stopStarterLast stops the Services of one server. The server stops with
// the last user's Stop only if that user started it, so the Services that
// found it running stop first, which leaves it running, and the starter
// last, which stops it.
func stopStarterLast(t *testing.T, svcs []*Service, answers func(url string) bool) {
	t.Helper()
	var starter *Service
	for _, s := range svcs {
		if s.Started {
			starter = s
			continue
		}
		require.NoError(t, s.Stop())
	}
	require.True(t, answers(starter.URL), "Stop of a Service that found the server running never stops it")
	require.NoError(t, starter.Stop())
	require.False(t, answers(starter.URL))
	require.NoError(t, starter.Stop(), "second Stop is a no-op")
}

func pgAnswers(url string) bool {
	return pingPostgres(context.Background(), url, 2*time.Second) == nil
}

func redisAnswers(url string) bool {
	return pingRedis(context.Background(), url, 2*time.Second) == nil
}

// dialRedis is a client of the Redis server at url.
func dialRedis(t *testing.T, url string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(url)
	require.NoError(t, err)
	return redis.NewClient(o)
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
		PostgresPort: freePort(t, 25480),
		RedisPort:    freePort(t, 63880),
		SearchPath:   []string{t.TempDir()}, // empty: nothing to find
		AllowInstall: false,
		Log:          newLog(t),
	}
	for _, k := range []struct {
		ensure ensureFunc
		what   string // what is not found
		envVar string // the variable that names a server instead
		debPkg string
	}{
		{EnsurePostgres, "PostgreSQL server", "ENCORE_DATABASE_URL", "postgresql"},
		{EnsureRedis, "Redis server", "ENCORE_REDIS_URL", "redis-server"},
	} {
		svc, err := k.ensure(ctx, opts, "")
		require.Nil(t, svc)
		require.ErrorIs(t, err, ErrNotInstalled)
		require.Contains(t, err.Error(), k.what+" not found: install it with `")
		require.Contains(t, err.Error(), "or set "+k.envVar)
		if isDebianLike() {
			require.Contains(t, err.Error(), "apt-get install "+k.debPkg+"`")
		}
		t.Log(err)
	}
}

// TestStartReuseStopRestart takes each kind of server through the life
// Ensure gives both alike: started, found running, stopped, restarted on
// its data, stopped while another Service uses it, and shut down.
func TestStartReuseStopRestart(t *testing.T) {
	t.Parallel()
	for _, k := range []struct {
		name     string // also the data folder's, under Options.Dir
		ensure   ensureFunc
		answers  func(url string) bool
		options  func(port int) Options // Options with the server on port
		basePort int                    // freePort's base
		url      string                 // the server's URL, %d its port
		pidFile  string                 // in the data folder while the server runs
		// started checks the server the first Ensure started.
		started func(t *testing.T, ctx context.Context, s *Service, opts Options, log *logBuf)
		// keep writes data that a restart must keep; kept checks it is there.
		keep, kept func(t *testing.T, ctx context.Context, url string)
	}{{
		name: "postgres", ensure: EnsurePostgres, answers: pgAnswers,
		options: func(port int) Options { return Options{PostgresPort: port} }, basePort: 25432,
		url: "postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pidFile: "postmaster.pid",
		started: func(t *testing.T, _ context.Context, s *Service, opts Options, log *logBuf) {
			require.FileExists(t, filepath.Join(s.DataDir, "PG_VERSION"))
			require.FileExists(t, filepath.Join(s.DataDir, fmt.Sprintf(".s.PGSQL.%d", opts.PostgresPort)), "unix socket in the data folder")
			require.Equal(t, 1, strings.Count(log.String(), "initialising cluster"))
			if isRoot() {
				fi, err := os.Stat(s.DataDir)
				require.NoError(t, err)
				owner, err := lookupSysUser("postgres")
				require.NoError(t, err)
				require.Equal(t, owner.uid, fi.Sys().(*syscall.Stat_t).Uid, "data folder owned by postgres")
			}
			require.Equal(t, 300, pgQueryInt(t, s.URL, "SELECT current_setting('max_connections')::int"))
			require.Equal(t, 1, pgQueryInt(t, s.URL, "SELECT (current_setting('server_encoding') = 'UTF8')::int"))
		},
		keep: func(t *testing.T, _ context.Context, url string) {
			pgExec(t, url, "CREATE TABLE kept (id int PRIMARY KEY, note text)")
			pgExec(t, url, "INSERT INTO kept VALUES (1, 'survives a restart')")
		},
		kept: func(t *testing.T, _ context.Context, url string) {
			require.Equal(t, 1, pgQueryInt(t, url, "SELECT count(*) FROM kept WHERE note = 'survives a restart'"))
		},
	}, {
		name: "redis", ensure: EnsureRedis, answers: redisAnswers,
		options: func(port int) Options { return Options{RedisPort: port} }, basePort: 63800,
		url: "redis://127.0.0.1:%d/0", pidFile: "redis.pid",
		started: func(t *testing.T, ctx context.Context, s *Service, _ Options, _ *logBuf) {
			c := dialRedis(t, s.URL)
			defer c.Close()
			require.Equal(t, "127.0.0.1", c.ConfigGet(ctx, "bind").Val()["bind"])
		},
		keep: func(t *testing.T, ctx context.Context, url string) {
			c := dialRedis(t, url)
			defer c.Close()
			require.NoError(t, c.Set(ctx, "kept", "survives a restart", 0).Err())
		},
		kept: func(t *testing.T, ctx context.Context, url string) {
			c := dialRedis(t, url)
			defer c.Close()
			require.Equal(t, "survives a restart", c.Get(ctx, "kept").Val(), "append-only file keeps the data")
		},
	}} {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			log := newLog(t)
			port := freePort(t, k.basePort)
			opts := k.options(port)
			opts.Log = log
			opts = privateOptions(t, opts)

			start := time.Now()
			s1 := requireStarts(t, ctx, k.ensure, opts)
			t.Logf("first Ensure (install if needed, initialise, start): %s", time.Since(start))
			require.Equal(t, fmt.Sprintf(k.url, port), s1.URL)
			require.Equal(t, filepath.Join(opts.Dir, k.name), s1.DataDir)
			k.started(t, ctx, s1, opts, log)

			// A second Ensure reuses the running server and does not own it.
			s2 := requireFound(t, ctx, k.ensure, opts, "", s1.URL)
			k.keep(t, ctx, s1.URL)
			stopStarterLast(t, []*Service{s2, s1}, k.answers)

			// Restart: the data is reused (PostgreSQL: no second initdb).
			before := len(log.String())
			start = time.Now()
			s3 := requireStarts(t, ctx, k.ensure, opts)
			t.Logf("restart: %s", time.Since(start))
			require.NotContains(t, log.String()[before:], "initialising cluster")
			k.kept(t, ctx, s3.URL)

			// While another Service uses it, even the starter's Stop leaves
			// it running.
			s4 := requireFound(t, ctx, k.ensure, opts, "", s3.URL)
			require.NoError(t, s3.Stop())
			require.True(t, k.answers(s3.URL), "still used by s4")
			require.Contains(t, log.String(), "leaving it running")
			require.NoError(t, s4.Stop())
			require.True(t, k.answers(s3.URL), "s4 did not start it")

			// Shutdown stops it whoever started it.
			require.NoError(t, Shutdown(ctx, opts))
			require.False(t, k.answers(s3.URL))
			require.NoFileExists(t, filepath.Join(s3.DataDir, k.pidFile))
		})
	}
}

func TestPostgresPreferredURL(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := privateOptions(t, Options{PostgresPort: freePort(t, 25440), Log: newLog(t)})
	base := requireStarts(t, ctx, EnsurePostgres, opts)

	// An answering preferred URL is used as it is, with nothing to find,
	// start or stop.
	other := Options{Dir: filepath.Join(t.TempDir(), ".encore"), PostgresPort: freePort(t, 25490), SearchPath: []string{}, Log: newLog(t)}
	preferred := strings.Replace(base.URL, "sslmode=disable", "sslmode=disable&application_name=devstack", 1)
	svc := requireFound(t, ctx, EnsurePostgres, other, preferred, preferred)
	require.NoError(t, svc.Stop())
	require.True(t, pgAnswers(base.URL))

	// A preferred URL that does not answer falls back to the local server,
	// here the one already running on the port.
	dead := PostgresURL(freePort(t, 25500))
	svc = requireFound(t, ctx, EnsurePostgres, opts, dead, base.URL)
	require.NoError(t, svc.Stop())
	require.NoError(t, base.Stop())
	require.False(t, pgAnswers(base.URL))
}

func TestPostgresConcurrentEnsure(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := privateOptions(t, Options{PostgresPort: freePort(t, 25450), Fast: true})

	start := time.Now()
	svcs, logs := ensureAtOnce(t, ctx, EnsurePostgres, opts, PostgresURL(opts.PostgresPort), 4)
	t.Logf("4 concurrent EnsurePostgres: %s", time.Since(start))
	inits := 0
	for _, l := range logs {
		inits += strings.Count(l.String(), "initialising cluster")
	}
	require.Equal(t, 1, inits, "exactly one initdb")
	require.Equal(t, 0, pgQueryInt(t, svcs[0].URL, "SELECT (current_setting('fsync') = 'on')::int"), "Fast turns fsync off")
	stopStarterLast(t, svcs, pgAnswers)
}

func TestPostgresStalePidFileAfterCrash(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	log := newLog(t)
	opts := privateOptions(t, Options{PostgresPort: freePort(t, 25460), Fast: true, Log: log})
	s1 := requireStarts(t, ctx, EnsurePostgres, opts)

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

	s2 := requireStarts(t, ctx, EnsurePostgres, opts)
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
	opts := Options{Dir: filepath.Join(private, "project", ".encore"), PostgresPort: freePort(t, 25470), AllowInstall: true, Fast: true, Log: log}
	shutdownAtEnd(t, opts)
	fallback := filepath.Join("/var/tmp", "encore-"+dirHash(opts.Dir))
	t.Cleanup(func() { os.RemoveAll(fallback) })

	svc := requireStarts(t, ctx, EnsurePostgres, opts)
	require.Equal(t, filepath.Join(fallback, "postgres"), svc.DataDir)
	require.Contains(t, log.String(), fallback)
	require.True(t, pgAnswers(svc.URL))
	require.NoError(t, svc.Stop())
	require.False(t, pgAnswers(svc.URL))

	// The next start finds the cluster there again.
	before := len(log.String())
	svc = requireStarts(t, ctx, EnsurePostgres, opts)
	require.Equal(t, filepath.Join(fallback, "postgres"), svc.DataDir)
	require.NotContains(t, log.String()[before:], "initialising cluster")
	require.NoError(t, svc.Stop())
}

func TestEnsureAndDropDatabase(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := privateOptions(t, Options{PostgresPort: freePort(t, 25475), Fast: true, Log: newLog(t)})
	svc := requireStarts(t, ctx, EnsurePostgres, opts)
	t.Cleanup(func() { svc.Stop() })

	const name = "encore_Test-db"
	var wg sync.WaitGroup
	urls := make([]string, 8)
	errs := make([]error, 8)
	for i := range urls {
		wg.Go(func() { urls[i], errs[i] = EnsureDatabase(ctx, svc.URL, name) })
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

func TestRedisFastHasNoPersistence(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := privateOptions(t, Options{RedisPort: freePort(t, 63810), Fast: true, Log: newLog(t)})
	s1 := requireStarts(t, ctx, EnsureRedis, opts)
	c := dialRedis(t, s1.URL)
	require.NoError(t, c.Set(ctx, "gone", "1", 0).Err())
	require.Equal(t, "no", c.ConfigGet(ctx, "appendonly").Val()["appendonly"])
	c.Close()
	require.NoError(t, s1.Stop())
	s2 := requireStarts(t, ctx, EnsureRedis, opts)
	c = dialRedis(t, s2.URL)
	require.Equal(t, int64(0), c.Exists(ctx, "gone").Val())
	c.Close()
	require.NoError(t, s2.Stop())
}

func TestRedisConcurrentAndPreferred(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	opts := privateOptions(t, Options{RedisPort: freePort(t, 63820), Fast: true})
	svcs, _ := ensureAtOnce(t, ctx, EnsureRedis, opts, RedisURL(opts.RedisPort), 4)

	// Preferred URL that answers: used, never stopped.
	other := Options{Dir: filepath.Join(t.TempDir(), ".encore"), RedisPort: freePort(t, 63890), SearchPath: []string{}, Log: newLog(t)}
	preferred := strings.TrimSuffix(svcs[0].URL, "/0") + "/3"
	p := requireFound(t, ctx, EnsureRedis, other, preferred, preferred)
	require.NoError(t, p.Stop())
	require.True(t, redisAnswers(svcs[0].URL))

	// Preferred URL that does not answer: falls back to the local server.
	p = requireFound(t, ctx, EnsureRedis, opts, RedisURL(freePort(t, 63900)), RedisURL(opts.RedisPort))
	require.NoError(t, p.Stop())

	stopStarterLast(t, svcs, redisAnswers)
	for _, s := range svcs {
		require.NoError(t, s.Stop(), "a second Stop is a no-op")
	}
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
	pgPort, redisPort := freePort(t, 25510), freePort(t, 63910)
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
