package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Replica is a streaming read replica (a hot standby) of a running
// PostgreSQL cluster, started from the local server programs for
// development and tests: loopback only, on its own port, in its own data
// folder. Production replicas are the operator's; Encore only reads from one
// (ENCORE_READER_DATABASE_URL).
type Replica struct {
	primaryURL string
	url        string
	dir        string
	port       int
	logFile    string
	bins       *pgBins
	as         *sysUser

	// CopyTime is how long pg_basebackup took to copy the primary cluster;
	// StartTime how long the standby then took to accept connections.
	CopyTime, StartTime time.Duration

	mu      sync.Mutex
	stopped bool
}

// replicaSettings are the primary's settings a hot standby must not set
// lower than the primary does (it refuses to start otherwise).
var replicaSettings = []string{"max_connections", "max_worker_processes", "max_wal_senders",
	"max_prepared_transactions", "max_locks_per_transaction"}

// StartReplica copies the cluster of primaryURL with pg_basebackup (the whole
// cluster: every database) into dir and starts it as a hot standby that
// streams the primary's WAL, listening on 127.0.0.1:port. The primary must
// be on the loopback interface and allow replication connections for the
// URL's user (a cluster started by EnsurePostgres does: wal_level replica,
// max_wal_senders and a trust replication line in pg_hba.conf for
// 127.0.0.1). dir must be absent or empty, or hold an earlier replica that no
// longer runs (it is copied afresh). No replication slot is made, so nothing
// is left on the primary once the replica stops: a replica that falls so far
// behind that the primary recycled the WAL it needs stops replaying (it is
// a development tool). Stop it with Stop.
func StartReplica(ctx context.Context, primaryURL string, dir string, port int) (*Replica, error) {
	pcfg, err := pgx.ParseConfig(primaryURL)
	if err != nil {
		return nil, fmt.Errorf("replica: primary URL: %w", err)
	}
	if !isLoopback(pcfg.Host) {
		return nil, fmt.Errorf("replica: the primary %s is not on the loopback interface: StartReplica copies local clusters only", redact(primaryURL))
	}
	if port <= 0 || port > 65535 || port == int(pcfg.Port) {
		return nil, fmt.Errorf("replica: port %d: choose a free port other than the primary's", port)
	}
	if portOpen(port) {
		return nil, fmt.Errorf("replica: port %d is in use", port)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}

	// What the primary runs: version (the programs must match) and the
	// settings the standby copies.
	conn, err := pgx.ConnectConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("replica: connect to the primary: %w", err)
	}
	var versionNum int
	err = conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&versionNum)
	settings := map[string]string{}
	for _, name := range append(replicaSettings, "fsync") {
		if err != nil {
			break
		}
		var v string
		err = conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v)
		settings[name] = v
	}
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("replica: read the primary's settings: %w", err)
	}
	major := strconv.Itoa(versionNum / 10000)
	if versionNum < 100000 {
		major = fmt.Sprintf("%d.%d", versionNum/10000, versionNum/100%100)
	}
	bins := findPostgres(nil, major)
	if bins == nil || bins.version() != major {
		return nil, fmt.Errorf("replica: the primary runs PostgreSQL %s, but its server programs are not installed here (%w)", major, ErrNotInstalled)
	}
	basebackup := findBasebackup(bins)
	if basebackup == "" {
		return nil, fmt.Errorf("replica: pg_basebackup not found beside %s (%w)", bins.pgCtl, ErrNotInstalled)
	}

	r := &Replica{primaryURL: primaryURL, dir: dir, port: port, bins: bins, logFile: filepath.Join(dir, "replica.log")}
	if r.url, err = r.URLFor(primaryURL); err != nil {
		return nil, err
	}
	if isRoot() {
		if r.as, err = lookupSysUser("postgres"); err != nil {
			return nil, fmt.Errorf("replica: PostgreSQL refuses to run as root and there is no `postgres` user to run it as: %w", err)
		}
	}
	if err := r.prepareDir(ctx); err != nil {
		return nil, err
	}

	// The copy: WAL streamed alongside (-X stream), so the copy is
	// consistent on its own; an immediate checkpoint rather than waiting for
	// a spread one; no fsync of the copy (a disposable replica); -R writes
	// standby.signal and primary_conninfo.
	conninfo := []string{"host=" + pcfg.Host, "port=" + strconv.Itoa(int(pcfg.Port)), "user=" + pcfg.User,
		"application_name=encore_replica_" + strconv.Itoa(port)}
	if pcfg.Password != "" {
		conninfo = append(conninfo, "password="+quoteConnValue(pcfg.Password))
	}
	start := time.Now()
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	_, err = runAs(bctx, r.as, basebackup, "-D", dir, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync", "-w",
		"-d", strings.Join(conninfo, " "))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("replica: copy the primary: %w", err)
	}
	r.CopyTime = time.Since(start)
	// The primary's own log was copied with the cluster: not ours.
	_ = os.Remove(filepath.Join(dir, "postgres.log"))
	if err := r.writeConf(settings); err != nil {
		return nil, err
	}

	start = time.Now()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	// The port and address on the command line too: they win over a
	// postgresql.auto.conf copied from the primary.
	_, err = runAs(sctx, r.as, bins.pgCtl, "start", "-D", dir, "-l", r.logFile, "-w", "-t", "90", "-s",
		"-o", fmt.Sprintf("-p %d -h 127.0.0.1", port))
	cancel()
	if err != nil {
		r.stopQuietly()
		return nil, fmt.Errorf("replica: could not start the standby: %w\nlast lines of %s:\n%s", err, r.logFile, tail(r.logFile, 15))
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := pingPostgres(ctx, r.url, 3*time.Second)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.stopQuietly()
			return nil, fmt.Errorf("replica: started, but it does not answer on port %d: %w\nlast lines of %s:\n%s", port, err, r.logFile, tail(r.logFile, 15))
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			r.stopQuietly()
			return nil, err
		}
	}
	r.StartTime = time.Since(start)
	return r, nil
}

// prepareDir makes dir an empty folder the server's user owns.
func (r *Replica) prepareDir(ctx context.Context) error {
	entries, err := os.ReadDir(r.dir)
	if err == nil && len(entries) > 0 {
		pid, _ := readPidFile(filepath.Join(r.dir, "postmaster.pid"))
		if !exists(filepath.Join(r.dir, "standby.signal")) || isPostmasterOf(pid, r.dir) {
			return fmt.Errorf("replica: %s is not empty (and holds no stopped replica): choose an empty folder", display(r.dir))
		}
		if err := os.RemoveAll(r.dir); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(r.dir), 0o755); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	if err := os.Mkdir(r.dir, 0o700); err != nil && !os.IsExist(err) {
		return fmt.Errorf("replica: %w", err)
	}
	if err := os.Chmod(r.dir, 0o700); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	if err := r.as.chown(r.dir); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	if r.as != nil && !r.as.canReach(ctx, r.dir) {
		return fmt.Errorf("replica: the postgres user cannot reach %s (a parent folder is private), and PostgreSQL refuses to run as root: choose a folder it can reach", display(r.dir))
	}
	return nil
}

// writeConf replaces the primary's encore.conf copied with the cluster by
// the standby's own: its port, loopback only, TCP only, hot standby, and
// the primary's values of the settings a standby must match.
func (r *Replica) writeConf(primary map[string]string) error {
	conf := filepath.Join(r.dir, "postgresql.conf")
	b, err := os.ReadFile(conf)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("replica: %w", err)
	}
	if !strings.Contains(string(b), includeLine) {
		// A primary whose configuration lives outside its data folder
		// (Debian's /etc/postgresql): the copy has none, or one without
		// our include.
		b = append(b, []byte("\n# Added by encore devstack (replica).\n"+includeLine+"\n")...)
		if err := os.WriteFile(conf, b, 0o600); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
		if err := r.as.chown(conf); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
	}
	settings := []string{
		"# Written by encore devstack for a streaming replica: do not edit.",
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("port = %d", r.port),
		"unix_socket_directories = ''",
		"hot_standby = on",
		// The standby tells the primary which rows its queries still see,
		// so vacuum on the primary does not cancel browse reads.
		"hot_standby_feedback = on",
		"logging_collector = off",
		"fsync = " + primary["fsync"],
	}
	for _, name := range replicaSettings {
		settings = append(settings, fmt.Sprintf("%s = %s", name, primary[name]))
	}
	path := filepath.Join(r.dir, "encore.conf")
	if err := os.WriteFile(path, []byte(strings.Join(settings, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	return r.as.chown(path)
}

// URL connects to the replica as the primary URL does (same user, password,
// database and parameters), on the replica's port.
func (r *Replica) URL() string { return r.url }

// URLFor rewrites a URL of the primary (another database or login of the
// same cluster, say) to reach the replica instead.
func (r *Replica) URLFor(primaryURL string) (string, error) {
	u, err := url.Parse(primaryURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("replica: %s is not a postgres:// URL", redact(primaryURL))
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))
	q := u.Query()
	q.Del("host")
	q.Del("port")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Port is the replica's loopback port; Dir its data folder; LogFile its log.
func (r *Replica) Port() int { return r.port }

// Dir is the replica's data folder.
func (r *Replica) Dir() string { return r.dir }

// LogFile is the replica's server log.
func (r *Replica) LogFile() string { return r.logFile }

// afterPrimary reads the primary's WAL insert position (what Lag and
// CatchUp measure the replica's replay against), then connects to the
// replica. The caller closes the connection.
func (r *Replica) afterPrimary(ctx context.Context) (lsn string, conn *pgx.Conn, err error) {
	lsn, err = PrimaryLSN(ctx, r.primaryURL)
	if err != nil {
		return "", nil, err
	}
	conn, err = pgx.Connect(ctx, r.url)
	if err != nil {
		return "", nil, fmt.Errorf("replica: %w", err)
	}
	return lsn, conn, nil
}

// Lag is how far the replica's replay trails the primary: the WAL bytes
// between the primary's insert position (every commit made so far, flushed
// or not) and the last record the replica has replayed.
func (r *Replica) Lag(ctx context.Context) (int64, error) {
	lsn, conn, err := r.afterPrimary(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var lag *float64
	if err := conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())", lsn).Scan(&lag); err != nil {
		return 0, fmt.Errorf("replica: %w", err)
	}
	if lag == nil {
		return 0, errors.New("replica: the server is not in recovery (promoted?)")
	}
	return max(int64(*lag), 0), nil
}

// CatchUp waits until the replica has replayed everything the primary had
// inserted when CatchUp was called, and returns how long that took.
func (r *Replica) CatchUp(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	lsn, conn, err := r.afterPrimary(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for {
		var done *bool
		if err := conn.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&done); err != nil {
			return 0, fmt.Errorf("replica: %w", err)
		}
		if done == nil {
			return 0, errors.New("replica: the server is not in recovery (promoted?)")
		}
		if *done {
			return time.Since(start), nil
		}
		if err := sleepCtx(ctx, time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// PrimaryLSN is the WAL insert position of the server at url
// (pg_current_wal_insert_lsn), as text ("0/16B3740").
func PrimaryLSN(ctx context.Context, url string) (string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", fmt.Errorf("replica: primary: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var lsn string
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		return "", fmt.Errorf("replica: primary: %w", err)
	}
	return lsn, nil
}

// Stop stops the replica (fast shutdown) and leaves its data folder; a
// second call does nothing.
func (r *Replica) Stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, err := runAs(ctx, r.as, r.bins.pgCtl, "stop", "-D", r.dir, "-m", "fast", "-w", "-t", "60", "-s")
	if err != nil {
		if pid, _ := readPidFile(filepath.Join(r.dir, "postmaster.pid")); isPostmasterOf(pid, r.dir) {
			return fmt.Errorf("replica: stop: %w", err)
		}
	}
	r.stopped = true
	return nil
}

func (r *Replica) stopQuietly() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = runAs(ctx, r.as, r.bins.pgCtl, "stop", "-D", r.dir, "-m", "immediate", "-w", "-t", "30", "-s")
}

// findBasebackup looks for pg_basebackup beside the server programs, or
// beside what they link to (/usr/local/bin/pg_ctl ->
// /usr/lib/postgresql/15/bin/pg_ctl).
func findBasebackup(b *pgBins) string {
	dirs := []string{b.dir}
	for _, p := range []string{b.pgCtl, b.postgres} {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "pg_basebackup"); isExecutable(p) {
			return p
		}
	}
	return ""
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// quoteConnValue quotes a libpq keyword/value connection string value.
func quoteConnValue(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
