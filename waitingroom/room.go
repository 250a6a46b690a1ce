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
//     (Check); after a hold the lease lives as long as the hold (Extend).
//   - Redis unreachable means nobody gets in: every path answers a retryable
//     error (fail closed: docs/ARCHITECTURE.md rule 10).
package waitingroom

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/controls"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/internal/lru"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/session"
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

	PassTTL          time.Duration // pass lifetime and admission window (5m, at most pass.MaxTTL)
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

// Room is the waiting room of every metered event.
type Room struct {
	rdb      redis.UniversalClient
	inv      Inventory
	opts     Options
	signer   *pass.Signer
	verifier *pass.Verifier
	powKey   []byte
	m        *metrics
	hub      *hub
	gates    *lru.Cache[string, gateEntry] // event ID -> gate, bounded: IDs come from clients
	regular  *regularity

	joinAccount, joinIP, statusAccount  *ratelimit.Limiter
	holdIP, checkoutAccount, checkoutIP *ratelimit.Limiter
	lookupIP                            *ratelimit.Limiter
	controllerMu                        sync.Mutex
	controller                          *Controller
	controllers                         map[string]*capacityState
	dials                               *controls.Watcher
	signals                             SignalSource
	closeOnce                           sync.Once
	closeHub                            context.CancelFunc
	hubCtx                              context.Context
	lastNotify                          sync.Map // event -> time of the last sold-out broadcast
	admitterMu                          sync.Mutex
	admitterEvents                      []store.Gate
	admitterEventsAt                    time.Time
	reconcileCursor                     map[string]int64
}

// New builds a room. key signs passes (see pass.KeyFromSeed); rdb, one
// server, a cluster or a Sentinel master, is the coordination store and inv
// the read-only view of inventory.
func New(rdb redis.UniversalClient, inv Inventory, key []byte, opts Options) *Room {
	opts.defaults()
	priv := pass.KeyFromSeed(string(key))
	r := &Room{rdb: rdb, inv: inv, opts: opts,
		signer:          pass.NewSigner(priv, opts.PassTTL),
		powKey:          powKeyFrom(key),
		regular:         newRegularity(200_000),
		controllers:     map[string]*capacityState{},
		reconcileCursor: map[string]int64{},
		gates:           lru.New[string, gateEntry](opts.GateCacheSize),
	}
	r.verifier = r.signer.Verifier()
	per := func(n int) ratelimit.Limit { return ratelimit.Limit{Count: n, Per: time.Minute, Burst: max(n/6, 1)} }
	rl := func(name string, n int) *ratelimit.Limiter {
		return ratelimit.New(rdb, opts.Prefix+"rl:wr:"+name+":", per(n))
	}
	r.joinAccount, r.joinIP = rl("join-acct", opts.JoinPerAccount), rl("join-ip", opts.JoinPerIP)
	r.statusAccount = rl("status-acct", opts.StatusPerAccount)
	r.holdIP = rl("hold-ip", opts.HoldPerIP)
	r.checkoutAccount, r.checkoutIP = rl("checkout-acct", opts.CheckoutPerAccount), rl("checkout-ip", opts.CheckoutPerIP)
	r.lookupIP = rl("lookup-ip", opts.LookupPerIP)
	r.hubCtx, r.closeHub = context.WithCancel(context.Background())
	r.hub = newHub(r)
	if opts.Adaptive {
		r.SetAdaptive(nil, nil)
	}
	return r
}

// PublicKey verifies passes; hand it to anything that checks them.
func (r *Room) PublicKey() []byte { return r.signer.PublicKey() }

// Verifier checks passes with the public key.
func (r *Room) Verifier() *pass.Verifier { return r.verifier }

// Options returns the options in force (defaults filled in).
func (r *Room) Options() Options { return r.opts }

// Close stops the room's sockets and notification subscription.
func (r *Room) Close() {
	r.closeOnce.Do(func() {
		r.closeHub()
		r.hub.closeAll()
	})
}

func unavailable(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// gate returns the event's gate, cached for a few seconds. When the database
// cannot answer, a cached answer up to a minute old is used; without one the
// room fails closed. Unknown and unmetered events are cached too (for
// gateFresh), so asking again for a made-up ID costs no read; the cache is
// bounded (Options.GateCacheSize).
type gateEntry struct {
	gate store.Gate
	err  error
	at   time.Time
}

const (
	gateFresh = 5 * time.Second
	gateStale = time.Minute // a known gate's answer while the database is down
)

func (r *Room) gate(ctx context.Context, eventID string) (store.Gate, error) {
	return r.lookupGate(ctx, eventID, "")
}

// lookupGate is gate on behalf of a client at ip: a lookup that must read
// the database is first charged to ip's lookup limit (none when ip is
// empty: the room's own loops).
func (r *Room) lookupGate(ctx context.Context, eventID, ip string) (store.Gate, error) {
	now := time.Now()
	e, ok := r.gates.Get(eventID, now)
	if ok && now.Sub(e.at) < gateFresh {
		return e.gate, e.err
	}
	if ip != "" {
		if err := r.allow(ctx, r.lookupIP, "lookup-ip", ip); err != nil {
			return store.Gate{}, err
		}
	}
	g, err := r.inv.EventGate(ctx, eventID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		r.gates.Add(eventID, gateEntry{err: ErrNoRoom, at: now}, now.Add(gateFresh))
		return store.Gate{}, ErrNoRoom
	case err != nil:
		if ok && e.err == nil {
			return e.gate, nil
		}
		return store.Gate{}, unavailable(err)
	}
	if !g.Metered {
		r.gates.Add(eventID, gateEntry{gate: g, err: ErrNoRoom, at: now}, now.Add(gateFresh))
		return g, ErrNoRoom
	}
	r.gates.Add(eventID, gateEntry{gate: g, at: now}, now.Add(gateStale))
	return g, nil
}

// CachedGates is how many events' gates the room holds in memory.
func (r *Room) CachedGates() int { return r.gates.Len() }

// State is what a fan sees: waiting with a position, admitted with a pass,
// or sold out. It marshals to exactly the contract's objects.
type State struct {
	Status               string // "waiting", "admitted" or "sold_out"
	Position             int64
	EstimatedWaitSeconds int64
	Pass                 string
	PassExpiresAt        time.Time
	OpensAt              time.Time // before opening: places are drawn at opening
	HeartbeatSeconds     int
	Waitlisted           bool
}

// Statuses.
const (
	StatusWaiting  = "waiting"
	StatusAdmitted = "admitted"
	StatusSoldOut  = "sold_out"
	// StatusOffered is an admission from the waitlist: seats came back and
	// this fan may hold them until pass_expires_at.
	StatusOffered = "offered"
)

// MarshalJSON writes the contract's shape for each status.
func (s State) MarshalJSON() ([]byte, error) {
	switch s.Status {
	case StatusAdmitted, StatusOffered:
		return json.Marshal(struct {
			Status        string    `json:"status"`
			Pass          string    `json:"pass"`
			PassExpiresAt time.Time `json:"pass_expires_at"`
		}{s.Status, s.Pass, s.PassExpiresAt.UTC()})
	case StatusSoldOut:
		return json.Marshal(struct {
			Status     string `json:"status"`
			Waitlisted bool   `json:"waitlisted"`
		}{s.Status, s.Waitlisted})
	default:
		var opens *time.Time
		if !s.OpensAt.IsZero() {
			u := s.OpensAt.UTC()
			opens = &u
		}
		return json.Marshal(struct {
			Status               string     `json:"status"`
			Position             int64      `json:"position"`
			EstimatedWaitSeconds int64      `json:"estimated_wait_seconds"`
			OpensAt              *time.Time `json:"opens_at,omitempty"`
			HeartbeatSeconds     int        `json:"heartbeat_seconds"`
		}{s.Status, s.Position, s.EstimatedWaitSeconds, opens, s.HeartbeatSeconds})
	}
}

// UnmarshalJSON reads any of the three shapes (for clients and tests).
func (s *State) UnmarshalJSON(b []byte) error {
	var v struct {
		Status               string     `json:"status"`
		Position             int64      `json:"position"`
		EstimatedWaitSeconds int64      `json:"estimated_wait_seconds"`
		Pass                 string     `json:"pass"`
		PassExpiresAt        time.Time  `json:"pass_expires_at"`
		OpensAt              *time.Time `json:"opens_at"`
		HeartbeatSeconds     int        `json:"heartbeat_seconds"`
		Waitlisted           bool       `json:"waitlisted"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = State{Status: v.Status, Position: v.Position, EstimatedWaitSeconds: v.EstimatedWaitSeconds, Pass: v.Pass,
		PassExpiresAt: v.PassExpiresAt, HeartbeatSeconds: v.HeartbeatSeconds, Waitlisted: v.Waitlisted}
	if v.OpensAt != nil {
		s.OpensAt = *v.OpensAt
	}
	return nil
}

// JoinRequest carries what the edge knows about a join besides the identity.
type JoinRequest struct {
	IP    string
	Proof Proof // a solved challenge, when one was asked for
}

// randomScore is uniform in [0, 1) with 53 bits, from crypto/rand: Redis's
// Lua PRNG is seeded deterministically and must not decide places.
func randomScore() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	f := float64(binary.BigEndian.Uint64(b[:])>>11) / (1 << 53)
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Join puts who in the event's line (keeping an existing place) and returns
// their state. Rate limits and the risk check are the edge's (see http.go);
// Join itself is the atomic script.
func (r *Room) Join(ctx context.Context, who session.Identity, eventID string, extraPlaces int64) (State, error) {
	g, err := r.gate(ctx, eventID)
	if err != nil {
		return State{}, err
	}
	k := r.keys(eventID)
	res, err := joinScript.Run(ctx, r.rdb, k.join(), who.UserID, who.DeviceID, randomScore(), g.OnsaleAt.UnixMilli(),
		r.opts.HeartbeatTimeout.Milliseconds(), r.opts.PenaltyPlaces, extraPlaces).Int64Slice()
	if err != nil {
		r.m.joins("error")
		return State{}, unavailable(err)
	}
	code, pos, depth, now, fresh, rate, capacity := res[0], res[1], res[2], res[3], res[4], res[5], res[6]
	if fresh == 1 {
		r.m.joins("joined")
	} else {
		r.m.joins("rejoined")
	}
	r.m.depth(eventID, depth)
	switch code {
	case 2:
		return r.admittedState(ctx, who, eventID)
	case 3:
		return State{Status: StatusSoldOut, Waitlisted: true}, nil
	}
	return r.waiting(g, pos, time.UnixMilli(now), rate, capacity), nil
}

// waiting builds a waiting state with an honest estimate: the position over
// the measured admission rate (or, before any was measured, capacity over the
// assumed time in checkout: Little's law), plus the time until opening.
func (r *Room) waiting(g store.Gate, pos int64, now time.Time, rateMilli, capacity int64) State {
	s := State{Status: StatusWaiting, Position: pos, HeartbeatSeconds: int(r.opts.Heartbeat / time.Second)}
	if s.HeartbeatSeconds == 0 {
		s.HeartbeatSeconds = 1
	}
	perSec := float64(rateMilli) / 1000
	if perSec < 0.01 {
		if capacity <= 0 {
			capacity = int64(r.opts.Capacity)
		}
		perSec = float64(capacity) / r.opts.AssumedCheckout.Seconds()
	}
	wait := float64(pos) / perSec
	if now.Before(g.OnsaleAt) {
		s.OpensAt = g.OnsaleAt
		wait += g.OnsaleAt.Sub(now).Seconds()
	}
	s.EstimatedWaitSeconds = int64(min(wait, 7*24*3600) + 0.999)
	return s
}

// Status refreshes who's heartbeat and returns their state (the polling
// fallback of the socket).
func (r *Room) Status(ctx context.Context, who session.Identity, eventID string) (State, error) {
	g, err := r.gate(ctx, eventID)
	if err != nil {
		return State{}, err
	}
	sts, err := r.statuses(ctx, g, []statusReq{{who: who, alive: true}})
	if err != nil {
		return State{}, err
	}
	return sts[0].state, sts[0].err
}

type statusReq struct {
	who   session.Identity
	alive bool
}

type statusRes struct {
	state State
	err   error
}

// statuses reads many fans' states in one script call per 500 fans,
// refreshing the heartbeats of those alive, and mints passes for the
// admitted.
func (r *Room) statuses(ctx context.Context, g store.Gate, reqs []statusReq) ([]statusRes, error) {
	out := make([]statusRes, 0, len(reqs))
	k := r.keys(g.EventID)
	for start := 0; start < len(reqs); start += 500 {
		chunk := reqs[start:min(start+500, len(reqs))]
		args := make([]any, 0, 1+2*len(chunk))
		args = append(args, r.opts.HeartbeatTimeout.Milliseconds())
		for _, q := range chunk {
			alive := "0"
			if q.alive {
				alive = "1"
			}
			args = append(args, q.who.UserID, alive)
		}
		raw, err := statusScript.Run(ctx, r.rdb, k.status(), args...).Slice()
		if err != nil {
			return nil, unavailable(err)
		}
		now := time.UnixMilli(toInt(raw[0]))
		depth, rate, capacity := toInt(raw[2]), toInt(raw[3]), toInt(raw[4])
		r.m.depth(g.EventID, depth)
		for i, q := range chunk {
			base := 5 + 4*i
			code, pos, leaseExp := toInt(raw[base]), toInt(raw[base+1]), toInt(raw[base+2])
			info, _ := raw[base+3].(string)
			var res statusRes
			switch code {
			case 0:
				res.err = ErrNotInLine
			case 1:
				res.state = r.waiting(g, pos, now, rate, capacity)
			case 2:
				res.state, res.err = r.mint(q.who, g.EventID, info, time.UnixMilli(leaseExp))
			case 3:
				res.state = State{Status: StatusSoldOut, Waitlisted: true}
			}
			out = append(out, res)
		}
	}
	return out, nil
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

// leaseInfo is the li hash value: "<id>|<device>|<window end ms>|<join ms>",
// with "|offer" after it for an admission from the waitlist.
type leaseInfo struct {
	id, device     string
	window, joined int64
	offer          bool
}

func parseLeaseInfo(s string) (leaseInfo, bool) {
	parts := strings.Split(s, "|")
	if len(parts) < 4 || len(parts) > 5 || parts[0] == "" {
		return leaseInfo{}, false
	}
	w, _ := strconv.ParseInt(parts[2], 10, 64)
	j, _ := strconv.ParseInt(parts[3], 10, 64)
	return leaseInfo{id: parts[0], device: parts[1], window: w, joined: j, offer: len(parts) == 5 && parts[4] == "offer"}, true
}

// mint signs a pass for an admitted fan: bound to the device that was in
// line, naming the lease, expiring with the lease or after the pass TTL,
// whichever is first.
func (r *Room) mint(who session.Identity, eventID, info string, leaseExp time.Time) (State, error) {
	li, ok := parseLeaseInfo(info)
	if !ok {
		return State{}, unavailable(errors.New("lease without details"))
	}
	if li.device != who.DeviceID {
		return State{}, ErrAdmittedElsewhere
	}
	tok, exp, err := r.signer.Sign(pass.Claims{UserID: who.UserID, DeviceID: who.DeviceID, EventID: eventID,
		LeaseID: li.id, IssuedAt: time.Now(), ExpiresAt: leaseExp})
	if err != nil {
		return State{}, unavailable(err)
	}
	status := StatusAdmitted
	if li.offer {
		status = StatusOffered
	}
	return State{Status: status, Pass: tok, PassExpiresAt: exp}, nil
}

// Offer admits a fan from the event's waitlist until until (at most the
// pass lifetime from now): a lease of its own, bound to the device the fan
// joined the waitlist from, which their pass names like any admission. It
// is idempotent for the same offer (a retried round re-uses the lease) and
// tells the fan's open queue sockets at once. It returns the offer as the
// fan sees it.
func (r *Room) Offer(ctx context.Context, who session.Identity, eventID string, offerID int64, until time.Time) (State, error) {
	k := r.keys(eventID)
	until = time.UnixMilli(min(until.UnixMilli(), time.Now().Add(pass.MaxTTL).UnixMilli()))
	info := fmt.Sprintf("w%d|%s|%d|%d|offer", offerID, who.DeviceID, until.UnixMilli(), time.Now().UnixMilli())
	if err := offerScript.Run(ctx, r.rdb, []string{k.lease, k.li}, who.UserID, until.UnixMilli(), info).Err(); err != nil {
		return State{}, unavailable(err)
	}
	r.publish(ctx, eventID, "admitted", []string{who.UserID})
	return r.mint(who, eventID, info, until)
}

func (r *Room) admittedState(ctx context.Context, who session.Identity, eventID string) (State, error) {
	g, err := r.gate(ctx, eventID)
	if err != nil {
		return State{}, err
	}
	sts, err := r.statuses(ctx, g, []statusReq{{who: who, alive: true}})
	if err != nil {
		return State{}, err
	}
	return sts[0].state, sts[0].err
}

// Check implements holds.Admission: the pass must verify with the public
// key, be bound to this user, device and event, and name the fan's active
// lease. Refusals wrap holds.ErrQueueRequired; Redis failures wrap
// ErrUnavailable (the API answers 503, nobody gets in).
func (r *Room) Check(ctx context.Context, who session.Identity, eventID, token string) error {
	if token == "" {
		return fmt.Errorf("%w (send X-Admission-Pass)", holds.ErrQueueRequired)
	}
	c, err := r.verifier.Verify(token, time.Now())
	if err != nil {
		return fmt.Errorf("%w: %v", holds.ErrQueueRequired, err)
	}
	if err := c.Bound(who.UserID, who.DeviceID, eventID); err != nil {
		return fmt.Errorf("%w: %v", holds.ErrQueueRequired, err)
	}
	k := r.keys(eventID)
	n, err := checkScript.Run(ctx, r.rdb, []string{k.lease, k.li}, who.UserID, c.LeaseID).Int64()
	if err != nil {
		return unavailable(err)
	}
	switch n {
	case 1:
		return nil
	case -1:
		return fmt.Errorf("%w: the pass names an older admission", holds.ErrQueueRequired)
	default:
		return fmt.Errorf("%w: the admission has ended or was revoked", holds.ErrQueueRequired)
	}
}

// Extend implements holds.Admission: after a hold commits, the fan's lease
// lives until the hold expires, so they keep their checkout slot while they
// pay. When the hold ends the admitter shortens it again (settle).
func (r *Room) Extend(ctx context.Context, who session.Identity, eventID string, until time.Time) error {
	k := r.keys(eventID)
	_, err := extendScript.Run(ctx, r.rdb, []string{k.lease, k.li, k.held}, who.UserID, until.UnixMilli()).Int64()
	return unavailable(err)
}

// Revoke ends a fan's admission at once: every pass minted for it is refused
// from now on. It reports whether the fan had an admission to end.
func (r *Room) Revoke(ctx context.Context, eventID, userID string) (bool, error) {
	k := r.keys(eventID)
	n, err := revokeScript.Run(ctx, r.rdb, []string{k.lease, k.li, k.held}, userID).Int64()
	return n > 0, unavailable(err)
}

// CapacityInForce is the admission capacity the event's admitter last
// used (0 while admission is paused), or what this process would use when
// no admitter has ticked yet.
func (r *Room) CapacityInForce(ctx context.Context, eventID string) (int, error) {
	v, err := r.rdb.HGet(ctx, r.keys(eventID).state, "cap").Int()
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, redis.Nil) {
		return 0, unavailable(err)
	}
	if r.dials.For(eventID).AdmissionPaused {
		return 0, nil
	}
	return r.capacity(ctx, eventID), nil
}

// Waitlist lists the fans who were told the event is sold out, oldest first.
func (r *Room) Waitlist(ctx context.Context, eventID string) ([]string, error) {
	v, err := r.rdb.ZRange(ctx, r.keys(eventID).waitlst, 0, -1).Result()
	return v, unavailable(err)
}

var _ holds.Admission = (*Room)(nil)
