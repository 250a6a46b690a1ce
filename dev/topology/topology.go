// Package topology runs Encore as it is deployed, on one machine and without
// containers: one Temporal server process (encore temporal), the payment
// sandbox (encore psp), several encore api and encore worker processes, one
// PostgreSQL and one Redis of their own, and a small load balancer in front
// of the APIs. Each process is the real binary, started, killed with SIGKILL
// and restarted by its handle, so a test can prove what survives a crash.
//
// It is development machinery for tests and benchmarks, not part of the
// product; everything listens on loopback only.
package topology

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/dev/freeport"
)

// Options shape a topology.
type Options struct {
	// Binary is the encore binary to run (see Build).
	Binary string
	// Dir holds the servers' data, each process's data folder and its log.
	Dir string
	// APIs and Workers are how many encore api and encore worker processes
	// run (at least one each).
	APIs, Workers int
	// Durable runs PostgreSQL with fsync on, as encore dev does; off, it
	// trades durability for speed, as the test servers do.
	Durable bool
	// Replica, when set, puts the browse plane of every API on a streaming
	// read replica of the primary (ENCORE_READER_DATABASE_URL) that it
	// starts, returning its superuser URL and how to stop it.
	Replica func(ctx context.Context, primaryAdminURL, dir string) (url string, stop func(), err error)
	// Env is added to every Encore process's environment (after the
	// topology's own variables, so it wins).
	Env map[string]string
	// Log receives progress lines. Nil discards.
	Log io.Writer
	// BalancerAddr is where the balancer in front of the APIs listens: the
	// address fans use ("": a free loopback port).
	BalancerAddr string
	// FansThroughBalancer: fans reach the APIs through the balancer (encore
	// dev --split, a rehearsal), so the APIs trust its address and count
	// each fan's own from X-Forwarded-For. Off, fans call each API
	// directly (the tests) and their own addresses count.
	FansThroughBalancer bool
	// Sentinel runs Redis as a master, a replica and a sentinel watching
	// them, every process finding the master through the sentinel (a
	// redis+sentinel URL), so that Redis can fail over (FailRedisOver).
	// Off, one Redis server.
	Sentinel bool
}

// Cluster is a running topology.
type Cluster struct {
	opts Options
	// AdminURL connects to the private PostgreSQL as its superuser;
	// DatabaseURL to Encore's database in it; ReaderURL to the same
	// database on the replica ("" without one).
	AdminURL, DatabaseURL, ReaderURL string
	// RedisURL is the private Redis.
	RedisURL string
	// TemporalAddr is the frontend of the Temporal process; PSPURL the
	// sandbox's base URL; BalancerURL the load balancer in front of every API.
	TemporalAddr, PSPURL, BalancerURL string
	// TemporalUIURL is the Temporal Web UI the temporal process serves.
	TemporalUIURL string

	Temporal, PSP *Proc
	APIs, Workers []*Proc
	// Gate is the venue gate StartGate started (nil before).
	Gate *Proc
	// GateURL is where it serves the scanner app and POST /v1/scan.
	GateURL string

	balancer *Balancer
	closers  []func()
	// postgres is the primary (RestartPostgres crashes it); sentinel the
	// Redis pair and its sentinel, with Options.Sentinel.
	postgres *devstack.Service
	sentinel *devstack.RedisSentinel
	// temporalKey is the API key every process shares: the Temporal
	// process admits the others by it.
	temporalKey string
}

// Start brings the topology up: the servers, Encore's database migrated
// with encore migrate, then Temporal, the sandbox, the workers and the APIs,
// each waited for until ready.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Binary == "" || opts.Dir == "" {
		return nil, errors.New("topology: Binary and Dir are required")
	}
	opts.APIs, opts.Workers = max(opts.APIs, 1), max(opts.Workers, 1)
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	c := &Cluster{opts: opts, temporalKey: rand.Text()}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	dev := devstack.Options{Dir: filepath.Join(opts.Dir, "servers"), PostgresPort: ports[0], RedisPort: ports[1],
		AllowInstall: true, Fast: !opts.Durable, Log: opts.Log}
	pg, err := devstack.EnsurePostgres(ctx, dev, "")
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, func() {
		_ = pg.StopNow()
		// PostgreSQL may live outside Dir (root cannot run it in a private
		// folder): leave nothing of it behind.
		if pg.DataDir != "" {
			_ = os.RemoveAll(pg.DataDir)
			_ = os.Remove(filepath.Dir(pg.DataDir))
		}
	})
	c.postgres = pg
	if opts.Sentinel {
		dir := filepath.Join(opts.Dir, "redis-sentinel")
		// A sentinel rewrites its configuration: start from a clean folder.
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if c.sentinel, err = devstack.StartRedisSentinel(ctx, dir, time.Second); err != nil {
			return nil, err
		}
		c.closers = append(c.closers, func() { _ = c.sentinel.Close() })
		c.RedisURL = c.sentinel.URL()
	} else {
		rd, err := devstack.EnsureRedis(ctx, dev, "")
		if err != nil {
			return nil, err
		}
		c.closers = append(c.closers, func() { _ = rd.StopNow() })
		c.RedisURL = rd.URL
	}
	c.AdminURL = pg.URL
	if c.DatabaseURL, err = devstack.EnsureDatabase(ctx, pg.URL, "encore"); err != nil {
		return nil, err
	}
	if err := c.run(ctx, []string{"migrate"}, map[string]string{"ENCORE_DATABASE_URL": c.DatabaseURL}); err != nil {
		return nil, err
	}
	if opts.Replica != nil {
		url, stop, err := opts.Replica(ctx, c.AdminURL, filepath.Join(opts.Dir, "replica"))
		if err != nil {
			return nil, fmt.Errorf("topology: replica: %w", err)
		}
		c.closers = append(c.closers, stop)
		c.ReaderURL = url
		if c.ReaderURL, err = databaseOf(c.ReaderURL, "encore"); err != nil {
			return nil, err
		}
	}

	// The balancer listens before anything else: the sandbox posts its
	// webhooks to it.
	if c.balancer, err = NewBalancer(opts.BalancerAddr); err != nil {
		return nil, err
	}
	c.closers = append(c.closers, c.balancer.Close)
	c.BalancerURL = c.balancer.URL()

	addrs, err := FreePorts(2 + 2*opts.APIs + opts.Workers)
	if err != nil {
		return nil, err
	}
	at := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", addrs[i]) }
	c.TemporalAddr = at(0)
	uiAddr := at(1)
	c.TemporalUIURL = "http://" + uiAddr
	c.Temporal = c.proc("temporal", []string{"temporal"}, map[string]string{
		"ENCORE_DATABASE_URL": c.AdminURL, "ENCORE_TEMPORAL_LISTEN_ADDR": c.TemporalAddr,
		"ENCORE_TEMPORAL_UI_ADDR": uiAddr, "ENCORE_TEMPORAL_SHARDS": "4",
	}, func(ctx context.Context, p *Proc) error { return p.waitLog(ctx, "(namespace ") })
	pspPorts, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	pspAddr := fmt.Sprintf("127.0.0.1:%d", pspPorts[0])
	c.PSPURL = "http://" + pspAddr
	c.PSP = c.proc("psp", []string{"psp"}, map[string]string{"ENCORE_PSP_ADDR": pspAddr,
		"ENCORE_PSP_WEBHOOK_URL": c.BalancerURL + "/v1/webhooks/stripe"},
		func(ctx context.Context, _ *Proc) error { return waitDial(ctx, pspAddr) })
	for i := range opts.Workers {
		admin := at(2 + 2*opts.APIs + i)
		w := c.proc(fmt.Sprintf("worker%d", i+1), []string{"worker"}, map[string]string{"ENCORE_ADMIN_ADDR": admin},
			func(ctx context.Context, _ *Proc) error { return waitHTTP(ctx, "http://"+admin+"/healthz") })
		w.AdminURL = "http://" + admin
		c.Workers = append(c.Workers, w)
	}
	for i := range opts.APIs {
		httpAddr, admin := at(2+2*i), at(3+2*i)
		own := map[string]string{"ENCORE_HTTP_ADDR": httpAddr, "ENCORE_ADMIN_ADDR": admin, "ENCORE_PUBLIC_URL": c.BalancerURL}
		if opts.FansThroughBalancer {
			own["ENCORE_TRUSTED_PROXIES"] = "127.0.0.1" // the balancer's address: the fans' are in X-Forwarded-For
		}
		a := c.proc(fmt.Sprintf("api%d", i+1), []string{"api"}, own,
			func(ctx context.Context, _ *Proc) error { return waitHTTP(ctx, "http://"+httpAddr+"/readyz") })
		a.URL, a.AdminURL = "http://"+httpAddr, "http://"+admin
		c.APIs = append(c.APIs, a)
		c.balancer.Add(a.URL)
	}
	for _, p := range c.All() {
		if err := p.Start(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// All are every process, in start order.
func (c *Cluster) All() []*Proc {
	out := []*Proc{c.Temporal, c.PSP}
	out = append(out, c.Workers...)
	out = append(out, c.APIs...)
	if c.Gate != nil {
		out = append(out, c.Gate)
	}
	return out
}

// StartGate exports eventID's ticket manifest (encore manifest export) and
// starts encore gate on it: the venue's gate beside the sale, serving the
// scanner app. Scans need a paired device or a token, as at a real door.
func (c *Cluster) StartGate(ctx context.Context, eventID string) error {
	dir := filepath.Join(c.opts.Dir, "gate")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	manifest := filepath.Join(dir, eventID+".manifest")
	if err := c.run(ctx, []string{"manifest", "export", "--event", eventID, "--out", manifest}, nil); err != nil {
		return err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	c.Gate = c.proc("gate", []string{"gate", "--manifest", manifest, "--addr", addr}, nil,
		func(ctx context.Context, _ *Proc) error { return waitHTTP(ctx, "http://"+addr+"/healthz") })
	c.Gate.URL, c.GateURL = "http://"+addr, "http://"+addr
	return c.Gate.Start(ctx)
}

// RestartPostgres crashes the primary (an immediate stop: no checkpoint,
// every connection cut) and starts it again after down. Its replica, the
// Temporal server and every Encore process reconnect by themselves.
func (c *Cluster) RestartPostgres(ctx context.Context, down time.Duration) error {
	return c.postgres.Crash(ctx, down)
}

// FailRedisOver kills the Redis master with SIGKILL; the sentinel promotes
// the replica and every process follows it; after down the killed server
// comes back as the new master's replica. Only with Options.Sentinel.
func (c *Cluster) FailRedisOver(ctx context.Context, down time.Duration) error {
	if c.sentinel == nil {
		return errors.New("topology: Redis runs without a sentinel (Options.Sentinel): it cannot fail over")
	}
	_, err := c.sentinel.FailOver(ctx, down)
	return err
}

// Close kills every process and stops the servers.
func (c *Cluster) Close() {
	for _, p := range []*Proc{c.Temporal, c.PSP, c.Gate} {
		if p != nil {
			p.Stop()
		}
	}
	for _, p := range append(append([]*Proc{}, c.APIs...), c.Workers...) {
		p.Stop()
	}
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
}

// TemporalAPIKey is the API key the cluster's processes present to its
// Temporal server: a client of the test's own (a workflow described while
// the cluster runs) needs it too.
func (c *Cluster) TemporalAPIKey() string { return c.temporalKey }

// LogTails is the end of every process's log, for a failing test.
func (c *Cluster) LogTails(lines int) string {
	var b strings.Builder
	for _, p := range c.All() {
		if p == nil {
			continue
		}
		fmt.Fprintf(&b, "==== %s (%s)\n%s\n", p.Name, p.LogPath, tail(p.LogPath, lines))
	}
	return b.String()
}

// env is the environment every Encore process shares: the servers, a
// development configuration (the default secrets are accepted) with the
// demo login, and nothing of the caller's ENCORE_ variables.
func (c *Cluster) env(name string) map[string]string {
	env := map[string]string{
		"ENCORE_ENV":              "development",
		"ENCORE_DEMO_LOGIN":       "true",
		"ENCORE_LOG_LEVEL":        "warn",
		"ENCORE_DATA_DIR":         filepath.Join(c.opts.Dir, name),
		"ENCORE_DATABASE_URL":     c.DatabaseURL,
		"ENCORE_REDIS_URL":        c.RedisURL,
		"ENCORE_TEMPORAL_ADDRESS": c.TemporalAddr,
		"ENCORE_TEMPORAL_API_KEY": c.temporalKey,
		"ENCORE_STRIPE_API_URL":   c.PSPURL,
	}
	if c.ReaderURL != "" {
		env["ENCORE_READER_DATABASE_URL"] = c.ReaderURL
	}
	return env
}

func (c *Cluster) proc(name string, args []string, own map[string]string, ready func(context.Context, *Proc) error) *Proc {
	env := c.env(name)
	for k, v := range own {
		env[k] = v
	}
	for k, v := range c.opts.Env {
		env[k] = v
	}
	return &Proc{Name: name, binary: c.opts.Binary, args: args, env: env, ready: ready,
		LogPath: filepath.Join(c.opts.Dir, name+".log")}
}

// Seed seeds the demo events into the cluster's database (encore seed).
func (c *Cluster) Seed(ctx context.Context) error {
	return c.run(ctx, []string{"seed"}, map[string]string{"ENCORE_DATABASE_URL": c.DatabaseURL})
}

// run runs a one-shot command (encore migrate, encore manifest export ...)
// to its end; args[0] names it.
func (c *Cluster) run(ctx context.Context, args []string, own map[string]string) error {
	p := c.proc(args[0], args, own, nil)
	cmd := exec.CommandContext(ctx, p.binary, p.args...)
	cmd.Env = p.environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("topology: encore %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// databaseOf is u with its database path replaced by name.
func databaseOf(u, name string) (string, error) {
	i := strings.LastIndex(u, "/")
	if i < len("postgres://") {
		return "", fmt.Errorf("topology: %q is not a PostgreSQL URL", u)
	}
	rest := u[i+1:]
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		return u[:i+1] + name + rest[q:], nil
	}
	return u[:i+1] + name, nil
}

// FreePorts returns n loopback ports free at the moment of the call, from
// below the kernel's ephemeral range so no outgoing connection takes one
// before the process meant for it binds it.
func FreePorts(n int) ([]int, error) { return freeport.Take("127.0.0.1", n) }

// Build compiles the encore command of the repository at root into out.
func Build(ctx context.Context, root, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/encore")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("topology: go build: %w\n%s", err, b)
	}
	return nil
}

func waitDial(ctx context.Context, addr string) error {
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		if !pause(ctx, 50*time.Millisecond) {
			return fmt.Errorf("%s: %w", addr, ctx.Err())
		}
	}
}

var probe = &http.Client{Timeout: 2 * time.Second}

func waitHTTP(ctx context.Context, url string) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := probe.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !pause(ctx, 50*time.Millisecond) {
			return fmt.Errorf("%s: %w", url, ctx.Err())
		}
	}
}

func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// StreamingReplica starts a streaming read replica of the primary (an
// Options.Replica). PostgreSQL will not run as root, and its user cannot
// enter a private temporary folder, so the replica lives in a folder of its
// own open to all, directly in the temporary folder (TMPDIR), whatever dir
// says; stopping it removes it.
func StreamingReplica(ctx context.Context, primaryAdminURL, _ string) (string, func(), error) {
	ports, err := FreePorts(1)
	if err != nil {
		return "", nil, err
	}
	base, err := os.MkdirTemp("", "encore-replica-")
	if err != nil {
		return "", nil, err
	}
	if err := os.Chmod(base, 0o755); err != nil {
		return "", nil, err
	}
	r, err := devstack.StartReplica(ctx, primaryAdminURL, filepath.Join(base, "data"), ports[0])
	if err != nil {
		_ = os.RemoveAll(base)
		return "", nil, err
	}
	return r.URL(), func() { _ = r.Stop(); _ = os.RemoveAll(base) }, nil
}
