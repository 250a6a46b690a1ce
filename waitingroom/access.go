package waitingroom

import (
	"context"
	"errors"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

// The admit plane's services, as the HTTP edge calls them: join (with the
// rate limits, the risk score and, when it is high, the proof of work), the
// polling heartbeat, the queue socket, and the per-IP limits of the buy
// plane's hot paths. The edge decodes and encodes; the rules live here.

// RateLimitedError asks the caller to come back after Wait; Limit names the
// limit that refused (for metrics and logs).
type RateLimitedError struct {
	Limit string
	Wait  time.Duration
}

func (e *RateLimitedError) Error() string { return "waitingroom: rate limited (" + e.Limit + ")" }

// ChallengeRequiredError asks the caller to solve Challenge and join again.
type ChallengeRequiredError struct {
	Detail    string
	Challenge Challenge
}

func (e *ChallengeRequiredError) Error() string { return "waitingroom: " + e.Detail }

// limits are the admit plane's rate limits in Redis (GCRA, package
// ratelimit), per account or per IP address and per path, each refusal
// counted by the limit's name.
type limits struct {
	joinAccount, joinIP, statusAccount  *ratelimit.Limiter
	holdIP, checkoutAccount, checkoutIP *ratelimit.Limiter
	lookupIP                            *ratelimit.Limiter
	m                                   *metrics
}

// newLimits builds the limits of opts: per minute, in bursts of a sixth
// (at least 1).
func newLimits(rdb redis.UniversalClient, opts Options, m *metrics) *limits {
	per := func(n int) ratelimit.Limit { return ratelimit.Limit{Count: n, Per: time.Minute, Burst: max(n/6, 1)} }
	rl := func(name string, n int) *ratelimit.Limiter {
		return ratelimit.New(rdb, opts.Prefix+"rl:wr:"+name+":", per(n))
	}
	return &limits{
		joinAccount:     rl("join-acct", opts.JoinPerAccount),
		joinIP:          rl("join-ip", opts.JoinPerIP),
		statusAccount:   rl("status-acct", opts.StatusPerAccount),
		holdIP:          rl("hold-ip", opts.HoldPerIP),
		checkoutAccount: rl("checkout-acct", opts.CheckoutPerAccount),
		checkoutIP:      rl("checkout-ip", opts.CheckoutPerIP),
		lookupIP:        rl("lookup-ip", opts.LookupPerIP),
		m:               m,
	}
}

func (l *limits) allow(ctx context.Context, lim *ratelimit.Limiter, name, key string) error {
	if ok, wait := lim.Allow(ctx, key); !ok {
		l.m.limit(name)
		return &RateLimitedError{Limit: name, Wait: wait}
	}
	return nil
}

// Admit runs the checks of a join (rate limits per account and IP, the risk
// score and, when it is high, the proof of work) and then joins. ip is the
// caller's address as the edge determined it.
func (r *Room) Admit(ctx context.Context, who session.Identity, eventID, ip string, proof Proof) (State, error) {
	// The per-IP limits come before the event lookup: a flood of joins, or
	// of made-up event IDs, is refused before it can reach the database.
	if err := r.limits.allow(ctx, r.limits.joinIP, "join-ip", eventID+"|"+ip); err != nil {
		return State{}, err
	}
	if _, err := r.gates.lookup(ctx, eventID, ip); err != nil {
		return State{}, err
	}
	if err := r.limits.allow(ctx, r.limits.joinAccount, "join-account", eventID+"|"+who.UserID); err != nil {
		return State{}, err
	}
	risk, err := r.friction.score(ctx, who, eventID, ip)
	if err != nil {
		return State{}, err
	}
	if risk >= r.friction.risk.Threshold {
		if proof.Challenge == "" {
			r.m.challenge("issued")
			return State{}, &ChallengeRequiredError{Detail: "solve the proof-of-work challenge and join again",
				Challenge: r.friction.newChallenge(who.UserID, eventID)}
		}
		if err := r.friction.verifyProof(ctx, proof, who.UserID, eventID); err != nil {
			if errors.Is(err, ErrUnavailable) {
				return State{}, err
			}
			r.m.challenge("failed")
			return State{}, &ChallengeRequiredError{Detail: "the proof of work was not valid; solve this challenge",
				Challenge: r.friction.newChallenge(who.UserID, eventID)}
		}
		r.m.challenge("solved")
	}
	return r.line.Join(ctx, who, eventID, 0)
}

// Poll is the polling fallback's heartbeat: it keeps who's place and answers
// the state. Polling at a machine's regular beat flags the account. ip is
// the caller's address: a poll for an event the room has not cached is
// charged to its lookup limit before the database is read.
func (r *Room) Poll(ctx context.Context, who session.Identity, eventID, ip string) (State, error) {
	if err := r.limits.allow(ctx, r.limits.statusAccount, "status-account", eventID+"|"+who.UserID); err != nil {
		return State{}, err
	}
	if _, err := r.gates.lookup(ctx, eventID, ip); err != nil {
		return State{}, err
	}
	r.friction.beat(ctx, eventID, who.UserID, time.Now())
	return r.line.Status(ctx, who, eventID)
}

// Socket is an admitted queue socket, ready to be served once the edge has
// upgraded the connection.
type Socket struct {
	who   session.Identity
	gate  store.Gate
	first State
}

// OpenSocket joins (or keeps the place of) who with the same checks as
// Admit. Refusals come before the upgrade, as plain errors for the edge to
// answer over HTTP.
func (r *Room) OpenSocket(ctx context.Context, who session.Identity, eventID, ip string, proof Proof) (*Socket, error) {
	st, err := r.Admit(ctx, who, eventID, ip, proof)
	if err != nil {
		return nil, err
	}
	g, err := r.gates.get(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return &Socket{who: who, gate: g, first: st}, nil
}

// OriginPatterns are the browser origins allowed to open the queue socket.
func (r *Room) OriginPatterns() []string { return r.opts.OriginPatterns }

// ServeSocket pushes states on an upgraded connection until it ends.
func (r *Room) ServeSocket(conn *websocket.Conn, s *Socket) {
	r.hub.serve(conn, s.who, s.gate, s.first)
}

// LimitHold limits hold attempts per client address, before the request
// reaches the hold service (which limits per account itself).
func (r *Room) LimitHold(ctx context.Context, ip string) error {
	return r.limits.allow(ctx, r.limits.holdIP, "hold-ip", ip)
}

// LimitCheckout limits checkouts per client address and, when the caller is
// known, per account.
func (r *Room) LimitCheckout(ctx context.Context, ip, userID string) error {
	if err := r.limits.allow(ctx, r.limits.checkoutIP, "checkout-ip", ip); err != nil {
		return err
	}
	if userID == "" {
		return nil
	}
	return r.limits.allow(ctx, r.limits.checkoutAccount, "checkout-account", userID)
}
