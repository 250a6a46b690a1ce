// Package ratelimit limits how often one key (an account, an IP) may act,
// with GCRA in Redis so every API process shares one budget. When Redis does
// not answer, the limit still holds: each process falls back to its own GCRA
// with the same rate, so an outage makes limits stricter per fleet, never
// absent (fail closed: docs/ARCHITECTURE.md rule 10).
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// gcra: KEYS[1] the key; ARGV emission interval ms, burst tolerance ms.
// Uses Redis's own clock so every process agrees on time.
var gcra = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local emission = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local allow_at = tat - tolerance
if now < allow_at then
  return allow_at - now
end
local new_tat = tat + emission
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil(new_tat - now + 1000))
return 0`)

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
	rdb    redis.Scripter
	prefix string
	limit  Limit

	mu    sync.Mutex
	local map[string]time.Time // fallback theoretical arrival times
}

// New returns a limiter for keys under prefix (for example "rl:hold:").
func New(rdb redis.Scripter, prefix string, limit Limit) *Limiter {
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

func (l *Limiter) allowLocal(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.local) > 100_000 { // bound memory during a long outage
		for k, t := range l.local {
			if t.Before(now) {
				delete(l.local, k)
			}
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
