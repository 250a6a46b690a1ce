package devstack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// maxSocketPath is the longest Unix-domain socket path PostgreSQL accepts
// (sizeof(sun_path) - 1, minus room for the ".lock" file beside it).
const maxSocketPath = 100

// PostgresURL is the URL of the local server on port.
func PostgresURL(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}

// EnsurePostgres returns a PostgreSQL server to use: preferredURL if it
// answers, else the server answering on opts.PostgresPort, else one started
// from opts.Dir/postgres (initialised on first use, installed with apt-get
// if allowed). See the package documentation.
func EnsurePostgres(ctx context.Context, opts Options, preferredURL string) (*Service, error) {
	return postgresKind.ensure(ctx, opts, preferredURL)
}

var postgresKind = serverKind{
	name:   "postgres",
	port:   func(o Options) int { return o.PostgresPort },
	url:    PostgresURL,
	ping:   pingPostgres,
	redact: redact,
	starting: func(err error) bool {
		// cannot_connect_now: starting up, recovering or shutting down.
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == "57P03"
	},
	foreign: func(port int, connURL string, err error) error {
		return fmt.Errorf("postgres: port %d is in use, but not by a PostgreSQL server that accepts %s (%v): stop that program or choose another port", port, redact(connURL), err)
	},
	start: func(ctx context.Context, opts Options, log logger, svc *Service) error {
		p := &pgServer{opts: opts, log: log}
		if err := p.start(ctx); err != nil {
			return err
		}
		svc.DataDir, svc.LogFile, svc.stop, svc.crash = p.dataDir, p.logFile, p.stop, p.crash
		return nil
	},
}

func pingPostgres(ctx context.Context, connURL string, timeout time.Duration) error {
	cfg, err := pgx.ParseConfig(connURL)
	if err != nil {
		return err
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > timeout {
		cfg.ConnectTimeout = timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

// redact hides the password of a URL for log lines.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return "the preferred URL"
	}
	return u.Redacted()
}

// pgBins are the server programs of one PostgreSQL installation.
type pgBins struct {
	dir, initdb, pgCtl, postgres string
	major                        string // "15"; "" until asked
}

func (b *pgBins) version() string {
	if b.major == "" {
		b.major = pgMajor(b.postgres)
	}
	return b.major
}

// pgMajor runs `postgres --version` ("postgres (PostgreSQL) 15.18 (Debian ...)")
// and returns the major version as PG_VERSION spells it ("15", "9.6").
func pgMajor(postgres string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := runAs(ctx, nil, postgres, "--version")
	if err != nil {
		return ""
	}
	_, v, ok := strings.Cut(out, ") ")
	if !ok {
		return ""
	}
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return ""
	}
	parts := strings.Split(fields[0], ".")
	if n, err := strconv.Atoi(parts[0]); err == nil && n < 10 && len(parts) > 1 {
		return parts[0] + "." + parts[1]
	}
	return strings.TrimRightFunc(parts[0], func(r rune) bool { return r < '0' || r > '9' })
}

// pgCandidateDirs lists where to look for initdb, pg_ctl and postgres:
// PATH, then the versioned install folders, newest version first.
func pgCandidateDirs(searchPath []string) []string {
	if searchPath != nil {
		return searchPath
	}
	dirs := pathDirs()
	dirs = append(dirs, versionedDirs("/usr/lib/postgresql/*/bin")...)
	dirs = append(dirs, versionedDirs("/usr/pgsql-*/bin")...)
	dirs = append(dirs, "/usr/local/pgsql/bin", "/opt/homebrew/bin", "/usr/local/bin")
	return dirs
}

// versionedDirs globs pattern and sorts the matches by the version in the
// path, newest first.
func versionedDirs(pattern string) []string {
	matches, _ := filepath.Glob(pattern)
	ver := func(p string) []int {
		var v []int
		for _, f := range strings.FieldsFunc(p, func(r rune) bool { return r < '0' || r > '9' }) {
			n, _ := strconv.Atoi(f)
			v = append(v, n)
		}
		return v
	}
	sort.SliceStable(matches, func(i, j int) bool {
		a, b := ver(matches[i]), ver(matches[j])
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] > b[k]
			}
		}
		return len(a) > len(b)
	})
	return matches
}

// findPostgres returns the first installation found, preferring one of
// major version want when want != "".
func findPostgres(searchPath []string, want string) *pgBins {
	var first *pgBins
	for _, d := range pgCandidateDirs(searchPath) {
		if findInDirs([]string{d}, "initdb", "pg_ctl", "postgres") == "" {
			continue
		}
		b := &pgBins{dir: d, initdb: filepath.Join(d, "initdb"), pgCtl: filepath.Join(d, "pg_ctl"), postgres: filepath.Join(d, "postgres")}
		if want == "" || b.version() == want {
			return b
		}
		if first == nil {
			first = b
		}
	}
	return first
}

// pgServer starts and stops one cluster under Options.Dir.
type pgServer struct {
	opts    Options
	log     logger
	bins    *pgBins
	as      *sysUser // the postgres user when we are root
	dataDir string
	logFile string
}

func (p *pgServer) start(ctx context.Context) error {
	if err := p.findOrInstall(ctx); err != nil {
		return err
	}
	if isRoot() {
		as, err := lookupSysUser("postgres")
		if err != nil {
			return fmt.Errorf("postgres: PostgreSQL refuses to run as root and there is no `postgres` user to run it as (%v): create one with `useradd --system --user-group --home-dir /var/lib/postgresql postgres`, or install the postgresql package, or set ENCORE_DATABASE_URL", err)
		}
		p.as = as
	}
	if err := p.chooseDataDir(ctx); err != nil {
		return err
	}
	if err := p.checkVersion(); err != nil {
		return err
	}
	if err := p.initdb(ctx); err != nil {
		return err
	}
	if err := p.writeConf(); err != nil {
		return err
	}
	if err := p.clearStalePid(ctx); err != nil {
		return err
	}
	return p.pgCtlStart(ctx)
}

func (p *pgServer) findOrInstall(ctx context.Context) error {
	return serverPackage{
		name:      "postgres",
		programs:  "server programs",
		debPkg:    "postgresql",
		stillGone: "installed, but initdb and pg_ctl are still not in the searched folders",
		what:      "PostgreSQL server",
		hint:      "install it with " + installHint("postgresql", "postgresql@16") + " or set ENCORE_DATABASE_URL",
	}.findOrInstall(ctx, p.opts, p.log, func() bool {
		p.bins = findPostgres(p.opts.SearchPath, "")
		return p.bins != nil
	})
}

// chooseDataDir picks Dir/postgres, or, when root and the postgres user
// cannot reach Dir, /var/tmp/encore-<hash>/postgres.
func (p *pgServer) chooseDataDir(ctx context.Context) error {
	primary := filepath.Join(p.opts.Dir, "postgres")
	p.dataDir = primary
	if p.as == nil || exists(filepath.Join(primary, "PG_VERSION")) {
		return nil
	}
	fallback := filepath.Join("/var/tmp", "encore-"+dirHash(p.opts.Dir), "postgres")
	if !exists(filepath.Join(fallback, "PG_VERSION")) && p.as.canReach(ctx, p.opts.Dir) {
		return nil
	}
	p.dataDir = fallback
	p.log.printf("postgres: the postgres user cannot reach %s (a parent folder is private), and PostgreSQL refuses to run as root: the cluster lives in %s instead", display(p.opts.Dir), fallback)
	return os.MkdirAll(filepath.Dir(fallback), 0o755)
}

// checkVersion makes sure the programs can run an existing cluster.
func (p *pgServer) checkVersion() error {
	b, err := os.ReadFile(filepath.Join(p.dataDir, "PG_VERSION"))
	if err != nil {
		return nil // no cluster yet
	}
	want := strings.TrimSpace(string(b))
	if p.bins.version() == want {
		return nil
	}
	if other := findPostgres(p.opts.SearchPath, want); other != nil && other.version() == want {
		p.bins = other
		return nil
	}
	return fmt.Errorf("postgres: the cluster in %s was created by PostgreSQL %s, but the server found is PostgreSQL %s (%s): install postgresql-%s, or remove %s to start afresh",
		display(p.dataDir), want, p.bins.version(), p.bins.dir, want, display(p.dataDir))
}

// initdb creates the cluster once. It initialises a sibling folder and
// renames it into place, so an interrupted initdb never leaves a
// half-made cluster behind.
func (p *pgServer) initdb(ctx context.Context) error {
	if exists(filepath.Join(p.dataDir, "PG_VERSION")) {
		return nil
	}
	if entries, err := os.ReadDir(p.dataDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("postgres: %s exists but holds no PostgreSQL cluster (no PG_VERSION): remove it to initialise a new one", display(p.dataDir))
	}
	if err := os.MkdirAll(filepath.Dir(p.dataDir), 0o755); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	start := time.Now()
	p.log.printf("postgres: initialising cluster in %s ...", display(p.dataDir))
	tmp := p.dataDir + ".initdb"
	var lastErr error
	for _, locale := range [][]string{{"--locale=C", "--lc-ctype=C.UTF-8"}, {"--locale=C"}} {
		if err := os.RemoveAll(tmp); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		if err := p.as.chown(tmp); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		args := []string{"-D", tmp, "-U", "postgres", "-E", "UTF8", "--auth=trust"}
		args = append(args, locale...)
		if p.opts.Fast {
			args = append(args, "--no-sync")
		}
		ictx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		_, lastErr = runAs(ictx, p.as, p.bins.initdb, args...)
		cancel()
		if lastErr == nil || ctx.Err() != nil {
			break
		}
	}
	if lastErr != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("postgres: initdb failed: %w", lastErr)
	}
	conf := filepath.Join(tmp, "postgresql.conf")
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	_, err = f.WriteString("\n# Added by encore devstack: settings it rewrites on every start.\n" + includeLine + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	_ = os.Remove(p.dataDir) // an empty folder left by someone
	if err := os.Rename(tmp, p.dataDir); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	p.log.printf("postgres: cluster initialised in %s (PostgreSQL %s)", since(start), p.bins.version())
	return nil
}

const includeLine = "include_if_exists = 'encore.conf'"

// writeConf writes encore.conf, the settings of this start.
func (p *pgServer) writeConf() error {
	conf := filepath.Join(p.dataDir, "postgresql.conf")
	b, err := os.ReadFile(conf)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if !strings.Contains(string(b), includeLine) {
		f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		_, err = f.WriteString("\n# Added by encore devstack: settings it rewrites on every start.\n" + includeLine + "\n")
		f.Close()
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
	}
	onOff := func(on bool) string {
		if on {
			return "on"
		}
		return "off"
	}
	socketDir := p.dataDir
	if len(filepath.Join(socketDir, fmt.Sprintf(".s.PGSQL.%d", p.opts.PostgresPort))) > maxSocketPath {
		p.log.printf("postgres: %s is too long a path for a Unix socket; TCP only", display(socketDir))
		socketDir = ""
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	settings := []string{
		"# Written by encore devstack on every start: do not edit (edit postgresql.conf above the include line instead).",
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("port = %d", p.opts.PostgresPort),
		"unix_socket_directories = " + quote(socketDir),
		"max_connections = 300",
		"fsync = " + onOff(!p.opts.Fast),
		"synchronous_commit = " + onOff(!p.opts.Fast),
		"full_page_writes = " + onOff(!p.opts.Fast),
		// Streaming replicas (StartReplica): the PostgreSQL 10+ defaults,
		// stated so an edited postgresql.conf cannot turn them off.
		"wal_level = replica",
		"max_wal_senders = 10",
	}
	if !p.opts.Fast {
		// A sale's first minute fills tables that were empty: a statement
		// planned once for good on a connection (a prepared statement's
		// generic plan) while a table was empty may scan what the sale
		// added since, until an ANALYZE of the table replans every
		// connection's statements. Autovacuum visits each database every
		// naptime (default a minute); every 5 s, a growing table is
		// analysed within seconds. Test clusters keep the default: their
		// many short-lived databases would keep the workers busy.
		settings = append(settings, "autovacuum_naptime = '5s'")
	} else {
		// A test cluster's replicas have no slot (StartReplica): under a
		// full test run's writes (every package and the shared Temporal
		// server) a loaded machine's replica could fall behind past a
		// checkpoint and lose the WAL it needs, then never catch up.
		settings = append(settings, "wal_keep_size = '1GB'")
	}
	path := filepath.Join(p.dataDir, "encore.conf")
	if err := os.WriteFile(path, []byte(strings.Join(settings, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return p.as.chown(path)
}

// clearStalePid removes a postmaster.pid (and socket lock files) left by a
// server that is gone, so that a pid reused by another process cannot block
// the start.
func (p *pgServer) clearStalePid(ctx context.Context) error {
	pidFile := filepath.Join(p.dataDir, "postmaster.pid")
	pid, lines := readPidFile(pidFile)
	if lines == nil {
		return nil
	}
	if pid > 0 && isPostmasterOf(pid, p.dataDir) {
		// Maybe it is shutting down: give it a moment.
		alive, err := awaitExit(ctx, pid, 10*time.Second)
		if err != nil {
			return err
		}
		if alive {
			port := "?"
			if len(lines) > 3 {
				port = strings.TrimSpace(lines[3])
			}
			return fmt.Errorf("postgres: a server (pid %d) already runs on %s, listening on port %s, not %d: stop it with `pg_ctl stop -D %s` or use its port",
				pid, display(p.dataDir), port, p.opts.PostgresPort, p.dataDir)
		}
		if !exists(pidFile) {
			return nil
		}
	}
	p.log.printf("postgres: removing stale %s (server pid %d is gone)", display(pidFile), pid)
	if err := os.Remove(pidFile); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("postgres: %w", err)
	}
	locks, _ := filepath.Glob(filepath.Join(p.dataDir, ".s.PGSQL.*.lock"))
	for _, l := range locks {
		if lpid, _ := readPidFile(l); !isPostmasterOf(lpid, p.dataDir) {
			_ = os.Remove(l)
		}
	}
	return nil
}

// isPostmasterOf reports whether pid is a live PostgreSQL server, running
// on dataDir when that can be told.
func isPostmasterOf(pid int, dataDir string) bool {
	if !processAlive(pid) {
		return false
	}
	switch processComm(pid) {
	case "":
		return true // no /proc: assume it is
	case "postgres", "postmaster":
	default:
		return false
	}
	return worksIn(pid, dataDir)
}

func (p *pgServer) pgCtlStart(ctx context.Context) error {
	p.logFile = filepath.Join(p.dataDir, "postgres.log")
	secs := int(p.opts.StartTimeout / time.Second)
	start := time.Now()
	p.log.printf("postgres: starting PostgreSQL %s on 127.0.0.1:%d (data %s) ...", p.bins.version(), p.opts.PostgresPort, display(p.dataDir))
	for attempt := 0; ; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout+10*time.Second)
		_, err := runAs(sctx, p.as, p.bins.pgCtl, "start", "-D", p.dataDir, "-l", p.logFile, "-w", "-t", strconv.Itoa(secs), "-s")
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logTail := tail(p.logFile, 15)
		if strings.Contains(logTail, "pre-existing shared memory block") && attempt < 10 {
			// Processes of a crashed server are still exiting.
			if err := sleepCtx(ctx, time.Second); err != nil {
				return err
			}
			continue
		}
		return fmt.Errorf("postgres: could not start the server: %w\nlast lines of %s:\n%s", err, p.logFile, logTail)
	}
	deadline := time.Now().Add(p.opts.StartTimeout)
	for {
		err := pingPostgres(ctx, PostgresURL(p.opts.PostgresPort), 3*time.Second)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("postgres: started, but it does not answer on port %d: %w\nlast lines of %s:\n%s", p.opts.PostgresPort, err, p.logFile, tail(p.logFile, 15))
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	p.log.printf("postgres: started in %s", since(start))
	return nil
}

// stop stops the cluster with pg_ctl stop -m fast.
func (p *pgServer) stop(ctx context.Context) error {
	_, err := runAs(ctx, p.as, p.bins.pgCtl, "stop", "-D", p.dataDir, "-m", "fast", "-w", "-t", "60", "-s")
	if err == nil {
		return nil
	}
	if pid, _ := readPidFile(filepath.Join(p.dataDir, "postmaster.pid")); !isPostmasterOf(pid, p.dataDir) {
		return nil // not running (any more)
	}
	return fmt.Errorf("postgres: stop: %w", err)
}

// crash stops the cluster as a crash would (pg_ctl stop -m immediate: no
// checkpoint, every backend gone at once) and starts it again after down;
// it replays its write-ahead log on the way up.
func (p *pgServer) crash(ctx context.Context, down time.Duration) error {
	if _, err := runAs(ctx, p.as, p.bins.pgCtl, "stop", "-D", p.dataDir, "-m", "immediate", "-w", "-t", "60", "-s"); err != nil {
		return fmt.Errorf("postgres: immediate stop: %w", err)
	}
	if err := sleepCtx(ctx, down); err != nil {
		return err
	}
	err := p.pgCtlStart(ctx)
	// A crashed server must come back, as its supervisor would see to.
	for try := 0; err != nil && try < 10 && ctx.Err() == nil; try++ {
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
		err = p.pgCtlStart(ctx)
	}
	return err
}

// shutdownPostgres stops the cluster of opts.Dir, whoever started it.
func shutdownPostgres(ctx context.Context, opts Options, log logger) error {
	lockPath := filepath.Join(opts.Dir, "postgres.lock")
	if !exists(opts.Dir) {
		return nil
	}
	lk, err := lockFile(ctx, lockPath, syscall.LOCK_EX)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer lk.Close()
	var errs []error
	for _, dataDir := range []string{
		filepath.Join(opts.Dir, "postgres"),
		filepath.Join("/var/tmp", "encore-"+dirHash(opts.Dir), "postgres"),
	} {
		pid, _ := readPidFile(filepath.Join(dataDir, "postmaster.pid"))
		if !isPostmasterOf(pid, dataDir) {
			continue
		}
		start := time.Now()
		log.printf("postgres: stopping the server of %s (pid %d) ...", display(dataDir), pid)
		p := &pgServer{opts: opts, log: log, dataDir: dataDir}
		if v, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION")); err == nil {
			p.bins = findPostgres(opts.SearchPath, strings.TrimSpace(string(v)))
		}
		if isRoot() {
			p.as, _ = lookupSysUser("postgres")
		}
		if p.bins != nil && (p.as != nil || !isRoot()) {
			err = p.stop(ctx)
		} else {
			err = syscall.Kill(pid, syscall.SIGINT) // fast shutdown
			if err == nil && !waitExit(pid, time.Minute) {
				err = fmt.Errorf("postgres: server pid %d did not stop within a minute", pid)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		log.printf("postgres: stopped in %s", since(start))
	}
	return errors.Join(errs...)
}
