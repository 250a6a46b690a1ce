package redisslot

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Recorder watches every script (EVAL, EVALSHA) and transaction
// (MULTI ... EXEC) a client sends and notes each one whose keys span more
// than one Redis Cluster hash slot, which a cluster would refuse with
// CROSSSLOT. A single server accepts them, so only this can tell.
type Recorder struct {
	keysOf  func(ctx context.Context, args []any) ([]string, error)
	mu      sync.Mutex
	scripts map[string]int // SHA1 -> calls
	txs     int
	crossed []string
}

// Record returns a client to rdb's server that reports to the returned
// recorder (for tests: a cluster refuses what it notes, one server does
// not). Close the client when done.
func Record(rdb *redis.Client) (*redis.Client, *Recorder) {
	rec := &Recorder{scripts: map[string]int{}}
	// COMMAND GETKEYS answers which arguments of a command are keys, so a
	// transaction of any commands is read as Redis itself reads it.
	rec.keysOf = func(ctx context.Context, args []any) ([]string, error) {
		return rdb.Do(ctx, append([]any{"COMMAND", "GETKEYS"}, args...)...).StringSlice()
	}
	// A new client of the same server, not a clone of rdb's options: go-redis
	// writes to those while its connections start, so copying them races.
	o := rdb.Options()
	c := redis.NewClient(&redis.Options{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, Protocol: o.Protocol, TLSConfig: o.TLSConfig})
	c.AddHook(rec)
	return c, rec
}

// DialHook implements redis.Hook.
func (r *Recorder) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

// ProcessHook implements redis.Hook: it records scripts.
func (r *Recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.script(cmd.Args())
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook: it records transactions (and
// scripts sent in a pipeline).
func (r *Recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var keys []string
		tx := len(cmds) > 0 && cmds[0].Name() == "multi"
		for _, c := range cmds {
			r.script(c.Args())
			if !tx || c.Name() == "multi" || c.Name() == "exec" {
				continue
			}
			k, err := r.keysOf(ctx, c.Args())
			if err != nil {
				r.note(fmt.Sprintf("COMMAND GETKEYS %v: %v", c.Args(), err))
				continue
			}
			keys = append(keys, k...)
		}
		if tx {
			r.mu.Lock()
			r.txs++
			r.mu.Unlock()
		}
		if tx && !Same(keys...) {
			r.note(fmt.Sprintf("a transaction spans slots: %v", keys))
		}
		return next(ctx, cmds)
	}
}

func (r *Recorder) script(args []any) {
	if len(args) < 3 {
		return
	}
	name, _ := args[0].(string)
	name = strings.ToLower(name)
	if name != "eval" && name != "evalsha" && name != "eval_ro" && name != "evalsha_ro" {
		return
	}
	body := fmt.Sprint(args[1])
	sha := body
	if strings.HasPrefix(name, "eval") && !strings.HasPrefix(name, "evalsha") {
		sum := sha1.Sum([]byte(body))
		sha = hex.EncodeToString(sum[:])
	}
	n, _ := strconv.Atoi(fmt.Sprint(args[2]))
	keys := make([]string, 0, n)
	for _, a := range args[3:min(3+n, len(args))] {
		keys = append(keys, fmt.Sprint(a))
	}
	r.mu.Lock()
	r.scripts[sha]++
	r.mu.Unlock()
	if !Same(keys...) {
		r.note(fmt.Sprintf("script %s spans slots: %v", sha[:8], keys))
	}
}

func (r *Recorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.crossed = append(r.crossed, s)
}

// Crossed lists every script call or transaction whose keys spanned slots.
func (r *Recorder) Crossed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.crossed...)
}

// Ran reports whether a script with this SHA1 (redis.Script.Hash) was sent.
func (r *Recorder) Ran(sha string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.scripts[sha] > 0
}

// Transactions is how many MULTI ... EXEC transactions were sent.
func (r *Recorder) Transactions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.txs
}
