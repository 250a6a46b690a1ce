// Package seathint is the bouncer in front of the seat rows: one Redis key per
// held seat, written for a whole cart by one atomic script or not at all. A
// hint only turns obvious contention into a cheap refusal before a database
// lock is taken. It never grants anything: PostgreSQL decides, so a lost,
// stale or deleted hint makes Encore slower, never wrong.
package seathint

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/ratelimit"
)

// holdBody checks every seat of the cart before writing any hint, so a cart
// is hinted whole or not at all: keys are the seats' hints, which share the
// event's hash slot; argv the reservation and the TTL in milliseconds. It
// returns the 1-based positions of contended seats, or an empty list once
// every hint is written.
const holdBody = `
local taken = {}
for i, key in ipairs(keys) do
  local owner = redis.call('GET', key)
  if owner and owner ~= argv[1] then taken[#taken + 1] = i end
end
if #taken > 0 then return taken end
for _, key in ipairs(keys) do
  redis.call('SET', key, argv[1], 'PX', argv[2])
end
return taken`

var (
	holdScript = redis.NewScript("local keys, argv = KEYS, ARGV\n" + holdBody)
	// limitedHold runs holdBody only for an account within its rate limit.
	limitedHold = ratelimit.NewGuarded(holdBody)
)

// releaseScript deletes only hints that still name this reservation: a late
// release must never delete the hint of the next buyer of the same seat.
var releaseScript = redis.NewScript(`
local n = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('DEL', key)
    n = n + 1
  end
end
return n`)

// ContendedError names the seats another reservation has hinted.
type ContendedError struct{ SeatIDs []string }

func (e *ContendedError) Error() string {
	return "seathint: seats hinted by another reservation: " + strings.Join(e.SeatIDs, ",")
}

// Hints writes and clears seat hints under a key prefix.
type Hints struct {
	rdb    redis.UniversalClient
	prefix string
}

// New returns hints stored under prefix (empty in production; tests isolate
// themselves with their own).
func New(rdb redis.UniversalClient, prefix string) *Hints { return &Hints{rdb: rdb, prefix: prefix} }

// Key is the hint key of one seat. The {event} hash tag keeps one event's
// hints in one Redis Cluster slot, which the multi-key script needs.
func (h *Hints) Key(eventID, seatID string) string {
	return h.prefix + "hold:{" + eventID + "}:" + seatID
}

func (h *Hints) keys(eventID string, seatIDs []string) []string {
	keys := make([]string, len(seatIDs))
	for i, s := range seatIDs {
		keys[i] = h.Key(eventID, s)
	}
	return keys
}

// Hold hints the whole cart for reservation, or returns *ContendedError. A
// Redis error is returned as is: callers proceed to the database, which
// decides.
func (h *Hints) Hold(ctx context.Context, eventID string, seatIDs []string, reservation string, ttl time.Duration) error {
	if len(seatIDs) == 0 {
		return nil
	}
	taken, err := holdScript.Run(ctx, h.rdb, h.keys(eventID, seatIDs), reservation, ttl.Milliseconds()).Int64Slice()
	if err != nil {
		return err
	}
	return contended(seatIDs, taken)
}

// HoldWithin is Hold behind limiter: when key may act now (ok), the cart is
// hinted or *ContendedError returned; when not, nothing is hinted and wait
// says for how long. A Redis error comes back with the limiter's own answer
// (see ratelimit.Limiter.Guard) and no hint written.
//
// An account's limit is not in the event's hash slot, so the limit and the
// hints take two round trips (ratelimit.Guarded), which a Redis Cluster
// accepts; a limiter keyed inside the event's slot would take one.
func (h *Hints) HoldWithin(ctx context.Context, limiter *ratelimit.Limiter, key, eventID string, seatIDs []string,
	reservation string, ttl time.Duration) (ok bool, wait time.Duration, err error) {
	if len(seatIDs) == 0 {
		ok, wait = limiter.Allow(ctx, key)
		return ok, wait, nil
	}
	ok, wait, taken, err := limiter.Guard(ctx, limitedHold, key, h.keys(eventID, seatIDs), reservation, ttl.Milliseconds())
	if err != nil || !ok {
		return ok, wait, err
	}
	return true, 0, contended(seatIDs, taken)
}

// contended turns the script's positions into *ContendedError, or nil.
func contended(seatIDs []string, taken []int64) error {
	if len(taken) == 0 {
		return nil
	}
	ce := &ContendedError{}
	for _, i := range taken {
		if i >= 1 && int(i) <= len(seatIDs) {
			ce.SeatIDs = append(ce.SeatIDs, seatIDs[i-1])
		}
	}
	return ce
}

// Release deletes the cart's hints that still name reservation.
func (h *Hints) Release(ctx context.Context, eventID string, seatIDs []string, reservation string) error {
	if len(seatIDs) == 0 {
		return nil
	}
	return releaseScript.Run(ctx, h.rdb, h.keys(eventID, seatIDs), reservation).Err()
}
