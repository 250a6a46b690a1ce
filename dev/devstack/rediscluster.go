package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/dev/freeport"
	"github.com/encore-tickets/encore/internal/redisslot"
)

// ClusterOptions shape a development Redis Cluster. Zero values take the
// defaults noted.
type ClusterOptions struct {
	Dir      string // a folder of its own for the nodes' files (required)
	BasePort int    // first node's port, the others following; 0: free ports
	Masters  int    // 3, the fewest a cluster accepts
	Replicas int    // replicas per master (1), so a master's loss fails over
	// NodeTimeout is how long a node may be unreachable before the others
	// count it failed and its replica takes over (1.5s: a test waits about
	// twice that for a failover).
	NodeTimeout time.Duration
	Log         func(format string, args ...any) // progress; nil is silent
}

// RedisCluster is a Redis Cluster of local redis-server processes, for tests
// and benchmarks only: no persistence, loopback only, every node a child of
// this process. Close stops it.
type RedisCluster struct {
	opts  ClusterOptions
	mu    sync.Mutex
	nodes []*clusterNode
}

type clusterNode struct {
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// StartRedisCluster starts Masters*(1+Replicas) redis-server processes in
// cluster mode and joins them with redis-cli --cluster create. It returns
// once every slot is served and every node agrees the cluster is ok.
func StartRedisCluster(ctx context.Context, opts ClusterOptions) (*RedisCluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("redis cluster: a folder is required")
	}
	opts.Masters = max(opts.Masters, 3)
	if opts.Replicas < 0 {
		opts.Replicas = 0
	} else if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.NodeTimeout <= 0 {
		opts.NodeTimeout = 1500 * time.Millisecond
	}
	server := findRedis(nil)
	cli := ""
	if d := findInDirs(redisCandidateDirs(nil), "redis-cli"); d != "" {
		cli = filepath.Join(d, "redis-cli")
	}
	if server == "" || cli == "" {
		return nil, &notFoundError{what: "redis-server and redis-cli", hint: "install them with " + installHint("redis-server", "redis")}
	}
	n := opts.Masters * (1 + opts.Replicas)
	ports, err := clusterPorts(opts.BasePort, n)
	if err != nil {
		return nil, err
	}
	c := &RedisCluster{opts: opts}
	for _, p := range ports {
		node, err := c.startNode(server, p)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, node)
	}
	for _, node := range c.nodes {
		if err := waitPing(ctx, node.addr(), 10*time.Second); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("redis cluster: node %s: %w\n%s", node.addr(), err, tail(c.logFile(node.port), 10))
		}
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(opts.Replicas), "--cluster-yes")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(cctx, cli, args...).CombinedOutput(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis cluster: redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := c.WaitHealthy(ctx, 30*time.Second); err != nil {
		_ = c.Close()
		return nil, err
	}
	c.logf("redis cluster: %d masters, %d replicas each, on %s", opts.Masters, opts.Replicas, strings.Join(c.Addrs(), " "))
	return c, nil
}

func (c *RedisCluster) logf(format string, args ...any) {
	if c.opts.Log != nil {
		c.opts.Log(format, args...)
	}
}

func (c *RedisCluster) logFile(port int) string {
	return filepath.Join(c.opts.Dir, strconv.Itoa(port), "redis.log")
}

func (c *RedisCluster) startNode(server string, port int) (*clusterNode, error) {
	dir := filepath.Join(c.opts.Dir, strconv.Itoa(port))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("redis cluster: %w", err)
	}
	cmd := exec.Command(server,
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--protected-mode", "yes",
		"--dir", dir,
		"--logfile", c.logFile(port),
		"--save", "",
		"--appendonly", "no",
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--cluster-node-timeout", strconv.FormatInt(c.opts.NodeTimeout.Milliseconds(), 10),
		// The other masters' slots stay served while one master's fail
		// over, as one event's keys never leave their slot.
		"--cluster-require-full-coverage", "no",
	)
	node, err := runNode(cmd, port)
	if err != nil {
		return nil, fmt.Errorf("redis cluster: start redis-server on %d: %w", port, err)
	}
	return node, nil
}

// runNode starts the redis-server of cmd, listening on port, and closes
// the node's done when it exits.
func runNode(cmd *exec.Cmd, port int) (*clusterNode, error) {
	cmd.Env = childEnv()
	// Its own process group: a Ctrl-C of the test reaches this process,
	// which kills the nodes; it never races them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	node := &clusterNode{port: port, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(node.done)
	}()
	return node, nil
}

func (n *clusterNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// clusterPorts picks n client ports whose cluster bus ports (+10000) are
// free too: from base on, or, when base is 0, free ones that freeport
// reserves for this process.
func clusterPorts(base, n int) ([]int, error) {
	free := func(p int) bool {
		for _, q := range []int{p, p + 10000} {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
			if err != nil {
				return false
			}
			l.Close()
		}
		return true
	}
	var ports []int
	if base > 0 {
		for p := base; p < base+n; p++ {
			if p+10000 > 65535 || !free(p) {
				return nil, fmt.Errorf("redis cluster: port %d or its bus port %d is taken", p, p+10000)
			}
			ports = append(ports, p)
		}
		return ports, nil
	}
	// Below the ephemeral range, bus ports too: the kernel hands ports of
	// that range to outgoing connections, and a node whose bus port one
	// took aborts ("address already in use", seen in CI).
	return freeport.TakeSpaced("127.0.0.1", n, 10000)
}

func waitPing(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	// The port first: a client dialling a server not yet listening logs
	// every refusal to the command's output.
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			break
		}
		if time.Now().After(deadline) {
			return err
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	c := redisClient(&redis.Options{Addr: addr}, time.Second)
	defer c.Close()
	for {
		err := c.Ping(ctx).Err()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// Addrs are every node's address, masters and replicas alike.
func (c *RedisCluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr()
	}
	return out
}

// URL is the cluster as ENCORE_REDIS_URL names it: every node a seed.
func (c *RedisCluster) URL() string {
	addrs := c.Addrs()
	u := "redis+cluster://" + addrs[0]
	for i, a := range addrs[1:] {
		if i == 0 {
			u += "?addr=" + a
		} else {
			u += "&addr=" + a
		}
	}
	return u
}

// MasterOf is the address of the master that serves key's slot now.
func (c *RedisCluster) MasterOf(ctx context.Context, key string) (string, error) {
	slot := redisslot.Slot(key)
	var last error
	for _, addr := range c.liveAddrs() {
		cl := redisClient(&redis.Options{Addr: addr}, time.Second)
		ranges, err := cl.ClusterSlots(ctx).Result()
		cl.Close()
		if err != nil {
			last = err
			continue
		}
		for _, r := range ranges {
			if slot >= int(r.Start) && slot <= int(r.End) && len(r.Nodes) > 0 {
				return r.Nodes[0].Addr, nil
			}
		}
		last = fmt.Errorf("no node serves slot %d", slot)
	}
	return "", fmt.Errorf("redis cluster: master of %q: %w", key, last)
}

// Kill ends the node at addr with SIGKILL: no shutdown, no handover, as a
// crashed machine would.
func (c *RedisCluster) Kill(addr string) error {
	c.mu.Lock()
	var node *clusterNode
	for _, n := range c.nodes {
		if n.addr() == addr {
			node = n
		}
	}
	c.mu.Unlock()
	if node == nil {
		return fmt.Errorf("redis cluster: no node at %s", addr)
	}
	if err := node.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-node.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("redis cluster: node %s outlived SIGKILL", addr)
	}
}

func (c *RedisCluster) liveAddrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.nodes {
		select {
		case <-n.done:
		default:
			out = append(out, n.addr())
		}
	}
	return out
}

// WaitHealthy waits until every live node reports cluster_state:ok and
// every slot has a live master: after a start, or after a failover.
func (c *RedisCluster) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = c.healthy(ctx); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis cluster: not healthy after %s: %w", timeout, last)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

func (c *RedisCluster) healthy(ctx context.Context) error {
	live := c.liveAddrs()
	alive := map[string]bool{}
	for _, a := range live {
		alive[a] = true
	}
	for _, addr := range live {
		cl := redisClient(&redis.Options{Addr: addr}, time.Second)
		info, err := cl.ClusterInfo(ctx).Result()
		var ranges []redis.ClusterSlot
		if err == nil {
			ranges, err = cl.ClusterSlots(ctx).Result()
		}
		cl.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster state not ok", addr)
		}
		covered := 0
		for _, r := range ranges {
			if len(r.Nodes) == 0 || !alive[r.Nodes[0].Addr] {
				return fmt.Errorf("%s: slots %d-%d have no live master", addr, r.Start, r.End)
			}
			covered += int(r.End-r.Start) + 1
		}
		if covered != redisslot.Slots {
			return fmt.Errorf("%s: %d of %d slots served", addr, covered, redisslot.Slots)
		}
	}
	return nil
}

// Close kills every node and deletes nothing: the folder is the caller's.
func (c *RedisCluster) Close() error {
	c.mu.Lock()
	nodes := c.nodes
	c.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		select {
		case <-n.done:
			continue
		default:
		}
		if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, err)
		}
		<-n.done
	}
	return errors.Join(errs...)
}
