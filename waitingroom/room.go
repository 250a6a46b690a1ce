// Package waitingroom is the admit plane: the virtual waiting room in front of
// metered sales. It is a concurrency limiter for the database, not a UX
// feature: at most Capacity fans are inside checkout at once, and everyone
// else waits in a Redis sorted set, holding only a cheap WebSocket.
//
// The rules, each in one place:
//   - Every change to a room is one atomic Lua script on keys sharing one
//     {event} hash slot, reading Redis's clock (scripts.go).
//   - Fans who join before the sale opens get a uniformly random place at
//     opening; later fans are strictly first in, first out. Joining again
//     keeps the place (joinScript).
//   - Fans heartbeat every 5 seconds; silent for 120 seconds, they leave the
//     line. Cleanup is bounded per tick and every fan's heartbeat is checked
//     again as they reach the head, so an abandoned entry is never admitted
//     (tickScript).
//   - One elected admitter per event (a short Redis lease) runs each tick; a
//     tick slot runs at most once, whoever runs it (tickScript, admitter.go).
//   - Admission yields a lease in Redis and an Ed25519 pass (package pass)
//     bound to user, device and event. A hold on a metered event needs both
//     (Passes.Check); after a hold the lease lives as long as the hold
//     (Passes.Extend).
//   - Redis unreachable means nobody gets in: every path answers a retryable
//     error (fail closed: docs/ARCHITECTURE.md rule 10).
package waitingroom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitingroom/pass"
)

// Inventory is what the room reads from the buy plane's database: read-only
// counts and event settings (*store.Store implements it).
type Inventory interface {
	EventGate(ctx context.Context, eventID string) (store.Gate, error)
	MeteredEvents(ctx context.Context, horizon time.Duration) ([]store.Gate, error)
	FreeUnits(ctx context.Context, eventID string) (int64, error)
	HoldOutcomes(ctx context.Context, eventID string, userIDs []string) (map[string]store.HoldOutcome, error)
}

// Options configure a room. Zero values take the defaults noted.
type Options struct {
	Prefix string // prepended to every key (tests use testenv's prefix)

	Capacity    int           // fans inside checkout at once (100); the adaptive mode's starting point
	MinCapacity int           // adaptive floor (Capacity/10, at least 1)
	MaxCapacity int           // adaptive ceiling (Capacity*4)
	Adaptive    bool          // adjust capacity from measured signals (see Controller)
	Batch       int           // most fans admitted per tick (10)
	Tick        time.Duration // admission tick (1s)
	// AdmitterLease is how long an elected admitter keeps an event without
	// ticking (3 ticks): a dead admitter is replaced that fast.
	AdmitterLease time.Duration

	PassTTL time.Duration // pass lifetime and admission window (5m, at most pass.MaxTTL)
	// Rechoose is how long a fan whose hold ended unpaid (released,
	// expired, declined out) stays inside checkout to choose again, within
	// the admission window (1m).
	Rechoose         time.Duration
	Heartbeat        time.Duration // client heartbeat interval (5s)
	HeartbeatTimeout time.Duration // silent this long, a fan leaves the line (120s)
	CleanupCap       int           // most stale entries or expired leases removed per tick (1000)
	PenaltyPlaces    int           // places a fan loses per expired hold beyond the first (1000)

	Risk Risk // bot friction thresholds (see Risk)

	// Rate limits (per minute, bursts of a sixth, at least 1).
	JoinPerAccount     int // joins and socket connects per account (30)
	JoinPerIP          int // joins and socket connects per IP address (120)
	StatusPerAccount   int // status polls per account (40: one each 5s plus slack)
	HoldPerIP          int // POST /v1/holds per IP address (120)
	CheckoutPerAccount int // checkouts per account (20)
	CheckoutPerIP      int // checkouts per IP address (120)
	// LookupPerIP bounds the event lookups (database reads) one IP address
	// may cause per minute: a join, socket or poll for an event the room has
	// not cached costs one (120). Runs before the read, so a scan of made-up
	// event IDs is refused 429 without touching the database.
	LookupPerIP int

	// GateCacheSize is the most events whose gate (or whose absence) the
	// room keeps in memory (10,000), least recently used evicted first.
	GateCacheSize int

	// AssumedCheckout is the mean time a fan spends in checkout, used for the
	// wait estimate until admissions have been measured (90s).
	AssumedCheckout time.Duration

	// OriginPatterns are the browser origins allowed to open the socket
	// besides the API's own host (see websocket.AcceptOptions).
	OriginPatterns []string

	Log *slog.Logger
}

func (o *Options) defaults() {
	setDef := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	setDef(&o.Capacity, 100)
	setDef(&o.MinCapacity, max(o.Capacity/10, 1))
	setDef(&o.MaxCapacity, o.Capacity*4)
	setDef(&o.Batch, 10)
	setDur(&o.Tick, time.Second)
	setDur(&o.AdmitterLease, 3*o.Tick)
	setDur(&o.PassTTL, pass.MaxTTL)
	o.PassTTL = min(o.PassTTL, pass.MaxTTL)
	setDur(&o.Rechoose, time.Minute)
	setDur(&o.Heartbeat, 5*time.Second)
	setDur(&o.HeartbeatTimeout, 120*time.Second)
	setDef(&o.CleanupCap, 1000)
	setDef(&o.PenaltyPlaces, 1000)
	setDef(&o.JoinPerAccount, 30)
	setDef(&o.JoinPerIP, 120)
	setDef(&o.StatusPerAccount, 40)
	setDef(&o.HoldPerIP, 120)
	setDef(&o.CheckoutPerAccount, 20)
	setDef(&o.CheckoutPerIP, 120)
	setDef(&o.LookupPerIP, 120)
	setDef(&o.GateCacheSize, 10_000)
	setDur(&o.AssumedCheckout, 90*time.Second)
	o.Risk.defaults()
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

// Errors the room returns besides holds.ErrQueueRequired.
var (
	// ErrUnavailable wraps every Redis failure: answer 503 and retry.
	ErrUnavailable = errors.New("waitingroom: unavailable, retry shortly")
	// ErrNoRoom is an unknown or unmetered event.
	ErrNoRoom = errors.New("waitingroom: this event has no waiting room")
	// ErrNotInLine is a status request from a fan who is not in line.
	ErrNotInLine = errors.New("waitingroom: not in line; join first")
	// ErrAdmittedElsewhere is a pass request from another device than the
	// one that was admitted.
	ErrAdmittedElsewhere = errors.New("waitingroom: admitted on another device")
)

// Room is the waiting room of every metered event: the admit plane as one
// value, built once per process (New). It holds the parts, each with its own
// state, and serves what the HTTP edge calls (access.go: joins, polls,
// sockets, the per-IP limits of the buy plane). The rest is reached through
// the parts: the queue itself (Line), the admissions holds check (Passes),
// the elected admission loop (Admitter) and the capacity it admits to
// (Capacity).
type Room struct {
	opts     Options
	m        *metrics // filled in by Register; until then it records nothing
	limits   *limits
	gates    *gateCache
	friction *friction
	line     *Line
	passes   *Passes
	capacity *Capacity
	admitter *Admitter
	hub      *hub
}

// New builds a room. key signs passes (see pass.KeyFromSeed); rdb, one
// server, a cluster or a Sentinel master, is the coordination store and inv
// the read-only view of inventory.
func New(rdb redis.UniversalClient, inv Inventory, key []byte, opts Options) *Room {
	opts.defaults()
	keys := keyspace(opts.Prefix)
	m := &metrics{}
	n := &notices{rdb: rdb, channel: keys.notify(), log: opts.Log}
	r := &Room{opts: opts, m: m, limits: newLimits(rdb, opts, m)}
	r.gates = newGateCache(inv, opts.GateCacheSize, r.limits)
	r.friction = newFriction(rdb, keys, opts.Risk, key, opts.Log)
	r.passes = newPasses(rdb, keys, key, opts.PassTTL, n)
	r.line = newLine(rdb, keys, opts, r.gates, r.passes, m)
	r.capacity = newCapacity(rdb, keys, opts)
	r.admitter = newAdmitter(rdb, keys, inv, opts, r.gates, r.capacity, n, m)
	r.hub = newHub(r.line, r.gates, r.friction, n, m, opts)
	if opts.Adaptive {
		r.capacity.SetAdaptive(nil, nil)
	}
	return r
}

// Line is the queue of every metered event: joins, states, the waitlist.
func (r *Room) Line() *Line { return r.line }

// Passes are the admissions holds check (holds.Admission), revoke and the
// waitlist offers.
func (r *Room) Passes() *Passes { return r.passes }

// Admitter is this process's admission loop (Run in dev and worker).
func (r *Room) Admitter() *Admitter { return r.admitter }

// Capacity is the admission capacity: the operator's dials and the
// adaptive mode.
func (r *Room) Capacity() *Capacity { return r.capacity }

// Options returns the options in force (defaults filled in; Adaptive once
// Capacity.SetAdaptive turned the adaptive mode on).
func (r *Room) Options() Options {
	o := r.opts
	o.Adaptive = r.capacity.isAdaptive()
	return o
}

// Close stops the room's sockets and notification subscription.
func (r *Room) Close() { r.hub.close() }

// CachedGates is how many events' gates the room holds in memory.
func (r *Room) CachedGates() int { return r.gates.size() }

// SocketCount is the number of queue sockets this process holds.
func (r *Room) SocketCount() int64 { return r.hub.count.Load() }

// MarkSuspicious flags an account for the event (as machine-regular timing
// does), so its next join must solve a challenge.
func (r *Room) MarkSuspicious(ctx context.Context, eventID, userID string) error {
	return r.friction.mark(ctx, eventID, userID)
}

// CapacityInForce is Capacity.InForce, for the operator's view of an
// event (the operator's API reaches the waiting room through the Room).
func (r *Room) CapacityInForce(ctx context.Context, eventID string) (int, error) {
	return r.capacity.InForce(ctx, eventID)
}

// Revoke is Passes.Revoke, for the operator's revocation of an admission
// (the operator's API reaches the waiting room through the Room).
func (r *Room) Revoke(ctx context.Context, eventID, userID string) (bool, error) {
	return r.passes.Revoke(ctx, eventID, userID)
}

func unavailable(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	}
	return 0
}
