package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisSentinel is a master, one replica and one sentinel watching them
// under the name "encore", local redis-server processes for tests only:
// no persistence, loopback only. Close stops them.
type RedisSentinel struct {
	dir                       string
	server                    string // the redis-server binary
	mu                        sync.Mutex
	master, replica, sentinel *clusterNode
}

// SentinelMaster is the master's name the sentinel knows.
const SentinelMaster = "encore"

// StartRedisSentinel starts the three processes on free ports under dir and
// returns once the sentinel sees the master and its replica. The sentinel
// counts a master down after downAfter without an answer (1s when 0).
func StartRedisSentinel(ctx context.Context, dir string, downAfter time.Duration) (*RedisSentinel, error) {
	if downAfter <= 0 {
		downAfter = time.Second
	}
	server := findRedis(nil)
	if server == "" {
		return nil, &notFoundError{what: "redis-server", hint: "install it with " + installHint("redis-server", "redis")}
	}
	ports, err := clusterPorts(0, 3)
	if err != nil {
		return nil, err
	}
	s := &RedisSentinel{dir: dir, server: server}
	start := func(port int, args ...string) (*clusterNode, error) { return s.start(ctx, port, args...) }
	if s.master, err = start(ports[0], dataNode...); err != nil {
		_ = s.Close()
		return nil, err
	}
	if s.replica, err = start(ports[1], append(dataNode, "--replicaof", "127.0.0.1", strconv.Itoa(ports[0]))...); err != nil {
		_ = s.Close()
		return nil, err
	}
	// A sentinel rewrites its configuration file: it must be a file.
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 10000\n",
		SentinelMaster, ports[0], SentinelMaster, downAfter.Milliseconds(), SentinelMaster)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		_ = s.Close()
		return nil, err
	}
	if s.sentinel, err = start(ports[2], conf, "--sentinel"); err != nil {
		_ = s.Close()
		return nil, err
	}
	c := redis.NewSentinelClient(&redis.Options{Addr: s.sentinel.addr()})
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); ; {
		replicas, err := c.Replicas(ctx, SentinelMaster).Result()
		if err == nil && len(replicas) == 1 {
			return s, nil
		}
		if time.Now().After(deadline) {
			_ = s.Close()
			return nil, fmt.Errorf("redis sentinel: the sentinel does not see the replica: %v", err)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
}

// dataNode are the arguments of a master or replica: no persistence.
var dataNode = []string{"--save", "", "--appendonly", "no"}

// start runs one redis-server on port with its own folder and log.
func (s *RedisSentinel) start(ctx context.Context, port int, args ...string) (*clusterNode, error) {
	d := filepath.Join(s.dir, strconv.Itoa(port))
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(s.server, append(args, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", d,
		"--logfile", filepath.Join(d, "redis.log"))...)
	n, err := runNode(cmd, port)
	if err != nil {
		return nil, fmt.Errorf("redis sentinel: start on %d: %w", port, err)
	}
	return n, waitPing(ctx, n.addr(), 10*time.Second)
}

// URL is the master as ENCORE_REDIS_URL names it through the sentinel.
func (s *RedisSentinel) URL() string {
	return "redis+sentinel://" + s.sentinel.addr() + "?master_name=" + SentinelMaster
}

// Master is the address of the master the sentinel reports now.
func (s *RedisSentinel) Master(ctx context.Context) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.sentinel.addr()})
	defer c.Close()
	hp, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", errors.New("redis sentinel: no master")
	}
	return hp[0] + ":" + hp[1], nil
}

// FailOver crashes whichever data node is the master now (SIGKILL), waits
// for the sentinel to promote the other, and after down starts the killed
// one again as a replica of the new master: the pair is whole again for
// the next failover. It returns the new master's address. Writes the
// replica had not received are lost, as in a real failover: Redis is the
// bouncer, never the authority.
func (s *RedisSentinel) FailOver(ctx context.Context, down time.Duration) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.Master(ctx)
	if err != nil {
		return "", err
	}
	dead, alive := s.master, s.replica
	if s.replica.addr() == old {
		dead, alive = s.replica, s.master
	}
	// A failover needs a replica to promote: one that did not come back
	// from the last is started first.
	if exited(alive) {
		if alive, err = s.restartReplica(ctx, alive, dead); err != nil {
			return "", err
		}
		s.master, s.replica = dead, alive
	}
	if err := dead.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return "", err
	}
	<-dead.done
	var now string
	for deadline := time.Now().Add(30 * time.Second); ; {
		if now, err = s.Master(ctx); err == nil && now == alive.addr() {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("redis sentinel: no failover from %s within 30s (master %q, %v)", old, now, err)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return "", err
		}
	}
	if err := sleepCtx(ctx, down); err != nil {
		return "", err
	}
	s.master, s.replica = alive, dead
	back, err := s.restartReplica(ctx, dead, alive)
	if err != nil {
		return now, err
	}
	s.replica = back
	return now, nil
}

// exited says whether a node's process has ended.
func exited(n *clusterNode) bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

// restartReplica starts the dead node again as master's replica, trying
// for a while (as a supervisor would), and waits until the sentinel
// counts it.
func (s *RedisSentinel) restartReplica(ctx context.Context, dead, master *clusterNode) (*clusterNode, error) {
	var n *clusterNode
	var err error
	for try := 0; try < 10; try++ {
		if n, err = s.start(ctx, dead.port, append(dataNode, "--replicaof", "127.0.0.1", strconv.Itoa(master.port))...); err == nil {
			break
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return dead, err
		}
	}
	if err != nil {
		return dead, err
	}
	c := redis.NewSentinelClient(&redis.Options{Addr: s.sentinel.addr()})
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		if rs, err := c.Replicas(ctx, SentinelMaster).Result(); err == nil {
			for _, r := range rs {
				if r["ip"]+":"+r["port"] == n.addr() && !strings.Contains(r["flags"], "down") {
					return n, nil
				}
			}
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return n, err
		}
	}
	return n, fmt.Errorf("redis sentinel: the sentinel does not see %s as a replica of %s", n.addr(), master.addr())
}

// KillMaster ends the first master with SIGKILL.
func (s *RedisSentinel) KillMaster() error {
	if err := s.master.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-s.master.done
	return nil
}

// Close kills every process; the folder is the caller's.
func (s *RedisSentinel) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range []*clusterNode{s.sentinel, s.replica, s.master} {
		if n == nil {
			continue
		}
		select {
		case <-n.done:
		default:
			_ = n.cmd.Process.Signal(syscall.SIGKILL)
			<-n.done
		}
	}
	return nil
}
