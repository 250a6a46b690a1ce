// Package ratelimit limits how often one key (an account, an IP) may act,
// with GCRA in Redis so every API process shares one budget. When Redis does
// not answer, the limit still holds: each process falls back to its own GCRA
// with the same rate, so an outage makes limits stricter per fleet, never
// absent (fail closed: docs/ARCHITECTURE.md rule 10).
package ratelimit

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/internal/redisslot"
)

// gcraLua defines gcra(key, emission_ms, tolerance_ms): 0 when key may act
// now (its turn is then taken), else how many milliseconds until it may. It
// uses Redis's own clock so every process agrees on time.
const gcraLua = `
local function gcra(key, emission, tolerance)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  local allow_at = tat - tolerance
  if now < allow_at then
    return allow_at - now
  end
  local new_tat = tat + emission
  redis.call('SET', key, new_tat, 'PX', math.ceil(new_tat - now + 1000))
  return 0
end
`

// gcra: KEYS[1] the key; ARGV emission interval ms, burst tolerance ms.
var gcra = redis.NewScript(gcraLua + `return gcra(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))`)

// Guarded is a Lua script whose body runs only when a key is within its
// limit, so the check and the act cost one round trip; a refused call runs no
// body and leaves the limit as it was.
//
// One round trip needs the limit's key in the body's keys' hash slot: a
// script touches one slot on a Redis Cluster. When it is not (an account's
// limit before an event's seats), the check runs first and the body alone
// after it, in two round trips. The order keeps the rule: a refused call
// runs no body. On one server the split costs the same extra round trip;
// it is kept there too so every deployment runs the same commands.
type Guarded struct{ script, body *redis.Script }

// NewGuarded wraps body, a Lua chunk that returns a list of integers. The
// body finds its own keys in the local keys and its own arguments in the
// local argv; KEYS and ARGV begin with the limit's.
func NewGuarded(body string) *Guarded {
	return &Guarded{script: redis.NewScript(gcraLua + `
local wait = gcra(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
if wait > 0 then return {wait} end
local keys, argv = {unpack(KEYS, 2)}, {unpack(ARGV, 3)}
local out = (function()
` + body + `
end)()
table.insert(out, 1, 0)
return out`), body: redis.NewScript(`
local keys, argv = KEYS, ARGV
local out = (function()
` + body + `
end)()
table.insert(out, 1, 0)
return out`)}
}

// errNoRedis: a limiter without Redis runs no script.
var errNoRedis = errors.New("ratelimit: no Redis")

// Limit is a rate: Count actions per Per, with bursts of up to Burst.
type Limit struct {
	Count int
	Per   time.Duration
	Burst int
}

func (l Limit) emission() time.Duration { return l.Per / time.Duration(max(l.Count, 1)) }

func (l Limit) tolerance() time.Duration {
	return l.emission() * time.Duration(max(l.Burst, 1)-1)
}

// Limiter checks keys against one Limit.
type Limiter struct {
	rdb    redis.UniversalClient
	prefix string
	limit  Limit

	mu    sync.Mutex
	local map[string]time.Time // fallback theoretical arrival times
}

// New returns a limiter for keys under prefix (for example "rl:hold:").
func New(rdb redis.UniversalClient, prefix string, limit Limit) *Limiter {
	return &Limiter{rdb: rdb, prefix: prefix, limit: limit, local: map[string]time.Time{}}
}

// Allow reports whether key may act now, and if not, how long to wait.
func (l *Limiter) Allow(ctx context.Context, key string) (bool, time.Duration) {
	if l.rdb != nil {
		ms, err := gcra.Run(ctx, l.rdb, []string{l.prefix + key},
			l.limit.emission().Milliseconds(), l.limit.tolerance().Milliseconds()).Int64()
		if err == nil {
			return ms == 0, time.Duration(ms) * time.Millisecond
		}
	}
	return l.allowLocal(key, time.Now())
}

// Guard is Allow with g's body run in the same round trip when key may act
// now: ok and wait are Allow's answer, result the body's. When Redis does not
// answer, the process's own limit answers, the body has not run and err says
// why.
func (l *Limiter) Guard(ctx context.Context, g *Guarded, key string, keys []string, args ...any) (ok bool, wait time.Duration, result []int64, err error) {
	if l.rdb == nil {
		ok, wait = l.allowLocal(key, time.Now())
		return ok, wait, nil, errNoRedis
	}
	var out []int64
	if limitKey := l.prefix + key; redisslot.Same(append([]string{limitKey}, keys...)...) {
		out, err = g.script.Run(ctx, l.rdb, append([]string{limitKey}, keys...),
			append([]any{l.limit.emission().Milliseconds(), l.limit.tolerance().Milliseconds()}, args...)...).Int64Slice()
	} else {
		out, err = l.guardApart(ctx, g, limitKey, keys, args)
	}
	if err == nil && len(out) == 0 {
		err = errors.New("ratelimit: empty answer from a guarded script")
	}
	if err != nil {
		ok, wait = l.allowLocal(key, time.Now())
		return ok, wait, nil, err
	}
	if out[0] > 0 {
		return false, time.Duration(out[0]) * time.Millisecond, nil, nil
	}
	return true, 0, out[1:], nil
}

// guardApart is Guard in two round trips, for keys in another slot than the
// limit's: the limit first, then the body only if it allowed. A Redis error
// after the limit allowed leaves that turn taken, as a failed act does.
func (l *Limiter) guardApart(ctx context.Context, g *Guarded, limitKey string, keys []string, args []any) ([]int64, error) {
	ms, err := gcra.Run(ctx, l.rdb, []string{limitKey},
		l.limit.emission().Milliseconds(), l.limit.tolerance().Milliseconds()).Int64()
	if err != nil || ms > 0 {
		return []int64{ms}, err
	}
	return g.body.Run(ctx, l.rdb, keys, args...).Int64Slice()
}

func (l *Limiter) allowLocal(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.local) > 100_000 { // bound memory during a long outage
		for k, t := range l.local {
			if t.Before(now) {
				delete(l.local, k)
			}
		}
		if len(l.local) > 100_000 {
			clear(l.local) // a flood of distinct keys: forget rather than grow
		}
	}
	tat := l.local[key]
	if tat.Before(now) {
		tat = now
	}
	if allowAt := tat.Add(-l.limit.tolerance()); now.Before(allowAt) {
		return false, allowAt.Sub(now)
	}
	l.local[key] = tat.Add(l.limit.emission())
	return true, 0
}

// RetryAfterSeconds rounds a wait up to whole seconds for a Retry-After header.
func RetryAfterSeconds(d time.Duration) int {
	return int(math.Max(1, math.Ceil(d.Seconds())))
}

// Hashes are the SHA1s of the scripts a Guard with g may send (the limit
// alone, the limit with the body, the body alone), for tests that watch
// which ran.
func (g *Guarded) Hashes() (limit, guarded, body string) {
	return gcra.Hash(), g.script.Hash(), g.body.Hash()
}
