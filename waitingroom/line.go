package waitingroom

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

// Line is the queue itself: every metered event's fans in order, their
// heartbeats and the states they are told (a place and an honest wait, an
// admission with its pass, or sold out). It is what the edge's join, poll
// and queue sockets read and write; admitting from its head is the
// Admitter's, and checking an admission the Passes'.
type Line struct {
	rdb    redis.UniversalClient
	keys   keyspace
	gates  *gateCache
	passes *Passes // mints the pass of a fan found admitted
	m      *metrics

	heartbeat        time.Duration // the clients' heartbeat interval they are told
	heartbeatTimeout time.Duration // silent this long, a fan leaves the line
	penaltyPlaces    int           // places lost per expired hold beyond the first
	capacity         int           // the wait estimate's capacity until one is in force
	assumedCheckout  time.Duration // the wait estimate's time in checkout until measured
}

func newLine(rdb redis.UniversalClient, keys keyspace, opts Options, gates *gateCache, passes *Passes, m *metrics) *Line {
	return &Line{rdb: rdb, keys: keys, gates: gates, passes: passes, m: m,
		heartbeat: opts.Heartbeat, heartbeatTimeout: opts.HeartbeatTimeout, penaltyPlaces: opts.PenaltyPlaces,
		capacity: opts.Capacity, assumedCheckout: opts.AssumedCheckout}
}

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
// their state. Rate limits and the risk check are the edge's (Room.Admit);
// Join itself is the atomic script.
func (l *Line) Join(ctx context.Context, who session.Identity, eventID string, extraPlaces int64) (State, error) {
	g, err := l.gates.get(ctx, eventID)
	if err != nil {
		return State{}, err
	}
	k := l.keys.event(eventID)
	res, err := joinScript.Run(ctx, l.rdb, k.join(), who.UserID, who.DeviceID, randomScore(), g.OnsaleAt.UnixMilli(),
		l.heartbeatTimeout.Milliseconds(), l.penaltyPlaces, extraPlaces).Int64Slice()
	if err != nil {
		l.m.joins("error")
		return State{}, unavailable(err)
	}
	code, pos, depth, now, fresh, rate, capacity := res[0], res[1], res[2], res[3], res[4], res[5], res[6]
	if fresh == 1 {
		l.m.joins("joined")
	} else {
		l.m.joins("rejoined")
	}
	l.m.depth(eventID, depth)
	switch code {
	case 2:
		// Already admitted: the pass, as a status poll answers it.
		return l.Status(ctx, who, eventID)
	case 3:
		return State{Status: StatusSoldOut, Waitlisted: true}, nil
	}
	return l.waiting(g, pos, time.UnixMilli(now), rate, capacity), nil
}

// waiting builds a waiting state with an honest estimate: the position over
// the measured admission rate (or, before any was measured, capacity over the
// assumed time in checkout: Little's law), plus the time until opening.
func (l *Line) waiting(g store.Gate, pos int64, now time.Time, rateMilli, capacity int64) State {
	s := State{Status: StatusWaiting, Position: pos, HeartbeatSeconds: int(l.heartbeat / time.Second)}
	if s.HeartbeatSeconds == 0 {
		s.HeartbeatSeconds = 1
	}
	perSec := float64(rateMilli) / 1000
	if perSec < 0.01 {
		if capacity <= 0 {
			capacity = int64(l.capacity)
		}
		perSec = float64(capacity) / l.assumedCheckout.Seconds()
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
func (l *Line) Status(ctx context.Context, who session.Identity, eventID string) (State, error) {
	g, err := l.gates.get(ctx, eventID)
	if err != nil {
		return State{}, err
	}
	sts, err := l.statuses(ctx, g, []statusReq{{who: who, alive: true}})
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
func (l *Line) statuses(ctx context.Context, g store.Gate, reqs []statusReq) ([]statusRes, error) {
	out := make([]statusRes, 0, len(reqs))
	k := l.keys.event(g.EventID)
	for start := 0; start < len(reqs); start += 500 {
		chunk := reqs[start:min(start+500, len(reqs))]
		args := make([]any, 0, 1+2*len(chunk))
		args = append(args, l.heartbeatTimeout.Milliseconds())
		for _, q := range chunk {
			alive := "0"
			if q.alive {
				alive = "1"
			}
			args = append(args, q.who.UserID, alive)
		}
		raw, err := statusScript.Run(ctx, l.rdb, k.status(), args...).Slice()
		if err != nil {
			return nil, unavailable(err)
		}
		now := time.UnixMilli(toInt(raw[0]))
		depth, rate, capacity := toInt(raw[2]), toInt(raw[3]), toInt(raw[4])
		l.m.depth(g.EventID, depth)
		for i, q := range chunk {
			base := 5 + 4*i
			code, pos, leaseExp := toInt(raw[base]), toInt(raw[base+1]), toInt(raw[base+2])
			info, _ := raw[base+3].(string)
			var res statusRes
			switch code {
			case 0:
				res.err = ErrNotInLine
			case 1:
				res.state = l.waiting(g, pos, now, rate, capacity)
			case 2:
				res.state, res.err = l.passes.mint(q.who, g.EventID, info, time.UnixMilli(leaseExp))
			case 3:
				res.state = State{Status: StatusSoldOut, Waitlisted: true}
			}
			out = append(out, res)
		}
	}
	return out, nil
}

// Waitlist lists the fans who were told the event is sold out, oldest first.
func (l *Line) Waitlist(ctx context.Context, eventID string) ([]string, error) {
	v, err := l.rdb.ZRange(ctx, l.keys.event(eventID).waitlst, 0, -1).Result()
	return v, unavailable(err)
}
