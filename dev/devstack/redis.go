package devstack

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/internal/redisurl"
)

// RedisURL is the URL of the local server on port.
func RedisURL(port int) string {
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port)
}

// EnsureRedis returns a Redis server to use: preferredURL if it answers
// PING, else the server answering on opts.RedisPort, else one started with
// its data in opts.Dir/redis (installed with apt-get if allowed). See the
// package documentation.
func EnsureRedis(ctx context.Context, opts Options, preferredURL string) (*Service, error) {
	return redisKind.ensure(ctx, opts, preferredURL)
}

var redisKind = serverKind{
	name:   "redis",
	port:   func(o Options) int { return o.RedisPort },
	url:    RedisURL,
	ping:   pingRedis,
	redact: redactRedis,
	// LOADING: the server is reading its data into memory.
	starting: func(err error) bool { return strings.HasPrefix(err.Error(), "LOADING") },
	foreign: func(port int, _ string, err error) error {
		return fmt.Errorf("redis: port %d is in use, but not by a Redis server that answers PING without a password (%v): stop that program or choose another port", port, err)
	},
	start: func(ctx context.Context, opts Options, log logger, svc *Service) error {
		r := &redisServer{opts: opts, log: log}
		if err := r.start(ctx); err != nil {
			return err
		}
		svc.DataDir, svc.LogFile, svc.stop = r.dir, r.logFile, r.stop
		return nil
	},
}

func redisClient(o *redis.Options, timeout time.Duration) *redis.Client {
	o.DialTimeout = timeout
	o.ReadTimeout = timeout
	o.WriteTimeout = timeout
	o.MaxRetries = -1
	o.PoolSize = 1
	o.Protocol = 2
	o.DisableIdentity = true
	o.DialerRetries = 1
	return redis.NewClient(o)
}

func pingRedis(ctx context.Context, connURL string, timeout time.Duration) error {
	if t, err := redisurl.Parse(connURL); err == nil && t.Kind != redisurl.Single {
		return pingDeployment(ctx, connURL, timeout)
	}
	o, err := redis.ParseURL(connURL)
	if err != nil {
		return err
	}
	if o.Network == "tcp" || o.Network == "" {
		// Dial first: go-redis logs failed dials to stderr.
		d := net.Dialer{Timeout: timeout}
		conn, err := d.DialContext(ctx, "tcp", o.Addr)
		if err != nil {
			return err
		}
		conn.Close()
	}
	c := redisClient(o, timeout)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.Ping(ctx).Err()
}

// pingDeployment pings a Redis Cluster or a Sentinel master (package
// redisurl's forms): there is no single server to dial first.
func pingDeployment(ctx context.Context, connURL string, timeout time.Duration) error {
	c, err := redisurl.Open(connURL, redisurl.Timeouts{Dial: timeout, Read: timeout, Write: timeout})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.Ping(ctx).Err()
}

// redactRedis is redact with the sentinels' password of a Sentinel URL's
// query hidden too.
func redactRedis(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return redact(s)
	}
	if q := u.Query(); q.Has("sentinel_password") {
		q.Set("sentinel_password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return redact(u.String())
}

// redisCandidateDirs lists where to look for redis-server.
func redisCandidateDirs(searchPath []string) []string {
	if searchPath != nil {
		return searchPath
	}
	return append(pathDirs(), "/usr/bin", "/usr/sbin", "/usr/local/bin", "/opt/homebrew/bin")
}

func findRedis(searchPath []string) string {
	if d := findInDirs(redisCandidateDirs(searchPath), "redis-server"); d != "" {
		return filepath.Join(d, "redis-server")
	}
	return ""
}

// redisServer starts and stops the Redis of Options.Dir.
type redisServer struct {
	opts    Options
	log     logger
	bin     string
	dir     string
	pidFile string
	logFile string
	pid     int
}

func (r *redisServer) start(ctx context.Context) error {
	if err := r.findOrInstall(ctx); err != nil {
		return err
	}
	r.dir = filepath.Join(r.opts.Dir, "redis")
	r.pidFile = filepath.Join(r.dir, "redis.pid")
	r.logFile = filepath.Join(r.dir, "redis.log")
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if err := r.clearStalePid(ctx); err != nil {
		return err
	}
	persistence := "yes"
	if r.opts.Fast {
		persistence = "no"
	}
	start := time.Now()
	r.log.printf("redis: starting redis-server on 127.0.0.1:%d (data %s) ...", r.opts.RedisPort, display(r.dir))
	sctx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
	defer cancel()
	_, err := runAs(sctx, nil, r.bin,
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(r.opts.RedisPort),
		"--protected-mode", "yes",
		"--daemonize", "yes",
		"--dir", r.dir,
		"--pidfile", r.pidFile,
		"--logfile", r.logFile,
		"--save", "",
		"--appendonly", persistence,
	)
	if err != nil {
		return fmt.Errorf("redis: could not start the server: %w\nlast lines of %s:\n%s", err, r.logFile, tail(r.logFile, 15))
	}
	url := RedisURL(r.opts.RedisPort)
	for {
		err := pingRedis(ctx, url, 2*time.Second)
		if err == nil {
			break
		}
		if sctx.Err() != nil {
			return fmt.Errorf("redis: started, but it does not answer on port %d: %w\nlast lines of %s:\n%s", r.opts.RedisPort, err, r.logFile, tail(r.logFile, 15))
		}
		if err := sleepCtx(sctx, 50*time.Millisecond); err != nil {
			continue // reported above on the next round
		}
	}
	r.pid, _ = readPidFile(r.pidFile)
	r.log.printf("redis: started in %s", since(start))
	return nil
}

func (r *redisServer) findOrInstall(ctx context.Context) error {
	return serverPackage{
		name:      "redis",
		programs:  "redis-server",
		debPkg:    "redis-server",
		stillGone: "installed, but redis-server is still not in the searched folders",
		what:      "Redis server",
		hint:      "install it with " + installHint("redis-server", "redis") + " or set ENCORE_REDIS_URL",
	}.findOrInstall(ctx, r.opts, r.log, func() bool {
		r.bin = findRedis(r.opts.SearchPath)
		return r.bin != ""
	})
}

// isRedisOf reports whether pid is a live redis-server working in dir.
func isRedisOf(pid int, dir string) bool {
	if !processAlive(pid) {
		return false
	}
	comm := processComm(pid)
	if comm == "" {
		return true // no /proc: assume it is
	}
	if !strings.HasPrefix(comm, "redis-server") {
		return false
	}
	return worksIn(pid, dir)
}

func (r *redisServer) clearStalePid(ctx context.Context) error {
	pid, lines := readPidFile(r.pidFile)
	if lines == nil {
		return nil
	}
	if isRedisOf(pid, r.dir) {
		alive, err := awaitExit(ctx, pid, 10*time.Second)
		if err != nil {
			return err
		}
		if alive {
			return fmt.Errorf("redis: a server (pid %d) already runs on %s but does not answer on port %d: stop it (kill %d) or use its port", pid, display(r.dir), r.opts.RedisPort, pid)
		}
	}
	if err := os.Remove(r.pidFile); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// stop sends SHUTDOWN NOSAVE (the append-only file, if any, is kept), then
// falls back to SIGTERM and SIGKILL through the pid.
func (r *redisServer) stop(ctx context.Context) error {
	c := redisClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(r.opts.RedisPort)}, 5*time.Second)
	_ = c.ShutdownNoSave(ctx).Err() // the connection closes: an error is normal
	c.Close()
	if r.pid <= 0 {
		deadline := time.Now().Add(30 * time.Second)
		for portOpen(r.opts.RedisPort) {
			if time.Now().After(deadline) {
				return fmt.Errorf("redis: the server on port %d did not stop", r.opts.RedisPort)
			}
			if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
				return err
			}
		}
		return nil
	}
	return stopPid(r.pid, r.dir, 30*time.Second)
}

// stopPid waits for a redis-server to exit, sending SIGTERM and at last
// SIGKILL if it does not.
func stopPid(pid int, dir string, grace time.Duration) error {
	if waitExit(pid, grace/3) {
		return nil
	}
	if !isRedisOf(pid, dir) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if waitExit(pid, grace) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if waitExit(pid, 5*time.Second) {
		return nil
	}
	return fmt.Errorf("redis: server pid %d did not stop", pid)
}

// shutdownRedis stops the Redis of opts.Dir, whoever started it.
func shutdownRedis(ctx context.Context, opts Options, log logger) error {
	if !exists(opts.Dir) {
		return nil
	}
	lk, err := lockFile(ctx, filepath.Join(opts.Dir, "redis.lock"), syscall.LOCK_EX)
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer lk.Close()
	dir := filepath.Join(opts.Dir, "redis")
	pid, _ := readPidFile(filepath.Join(dir, "redis.pid"))
	if !isRedisOf(pid, dir) {
		return nil
	}
	start := time.Now()
	log.printf("redis: stopping the server of %s (pid %d) ...", display(dir), pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if err := stopPid(pid, dir, 30*time.Second); err != nil {
		return err
	}
	log.printf("redis: stopped in %s", since(start))
	return nil
}
