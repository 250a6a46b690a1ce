package waitingroom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/store"
)

// Admitted is one fan let into checkout by a tick.
type Admitted struct {
	UserID   string
	JoinedAt time.Time
}

// TickResult is what one admission tick did.
type TickResult struct {
	Ran           bool  // this admitter ran the tick (it leads and the slot was new)
	Status        int64 // tickScript's status (1 ran, 0 not open, -1 not leader, -2 slot done, -3 inventory unknown, -4 sold out)
	Slot          int64 // the tick slot (Redis time / tick)
	At            time.Time
	SoldOut       bool
	StaleDropped  int64 // silent fans removed by the bounded cleanup
	StaleSkipped  int64 // silent fans popped at the head and not admitted
	ExpiredLeases int64
	Active        int64 // active leases after the tick
	Depth         int64 // fans in line after the tick
	Admitted      []Admitted
}

// NewOwner returns a unique admitter identity for this process.
func NewOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Admitter lets fans in from the head of every metered event's line, once
// per tick, wherever it runs: every process may run one, and per event only
// the elected one (a short Redis lease) admits. It holds what the loop
// needs between ticks (the metered events, the settlement cursor, the last
// sell-out notice) and asks Capacity how many may be inside checkout.
type Admitter struct {
	rdb      redis.UniversalClient
	keys     keyspace
	inv      Inventory
	gates    *gateCache
	capacity *Capacity
	notices  *notices
	m        *metrics
	log      *slog.Logger

	tick       time.Duration // admission tick
	lease      time.Duration // how long an elected admitter keeps an event without ticking
	batch      int           // most fans admitted per tick
	passTTL    time.Duration // admission window
	rechoose   time.Duration // how long a fan whose hold ended unpaid stays inside
	cleanupCap int           // most stale entries or expired leases removed per tick

	mu         sync.Mutex
	events     []store.Gate // the metered events, cached (meteredEvents)
	eventsAt   time.Time
	cursor     map[string]int64 // event -> settle's next offset into held
	lastNotify sync.Map         // event -> time of the last sold-out broadcast
}

func newAdmitter(rdb redis.UniversalClient, keys keyspace, inv Inventory, opts Options, gates *gateCache, capacity *Capacity,
	n *notices, m *metrics) *Admitter {
	return &Admitter{rdb: rdb, keys: keys, inv: inv, gates: gates, capacity: capacity, notices: n, m: m, log: opts.Log,
		tick: opts.Tick, lease: opts.AdmitterLease, batch: opts.Batch, passTTL: opts.PassTTL, rechoose: opts.Rechoose,
		cleanupCap: opts.CleanupCap,
		cursor:     map[string]int64{}}
}

// Tick runs one admission tick for the event as owner, if owner is (or
// becomes) the event's elected admitter. Free inventory is read first; if it
// cannot be read, the tick admits nobody (fail closed).
func (a *Admitter) Tick(ctx context.Context, eventID, owner string) (TickResult, error) {
	g, err := a.gates.get(ctx, eventID)
	if err != nil {
		return TickResult{}, err
	}
	k := a.keys.event(eventID)
	lead, err := leadScript.Run(ctx, a.rdb, []string{k.admitter}, owner, a.lease.Milliseconds()).Int64()
	if err != nil {
		a.m.tickError()
		return TickResult{}, unavailable(err)
	}
	a.m.leader(eventID, lead == 1)
	if lead != 1 {
		return TickResult{Status: -1}, nil
	}
	free := int64(-1)
	if time.Now().After(g.OnsaleAt.Add(-a.tick)) {
		if free, err = a.inv.FreeUnits(ctx, eventID); err != nil {
			a.log.Warn("waiting room: free inventory unknown, admitting nobody this tick", "event", eventID, "err", err)
			free = -1
		}
	}
	capacity := a.capacity.current(ctx, eventID)
	paused := a.capacity.paused(eventID)
	if paused {
		// The operator paused admission: the line keeps its order and its
		// heartbeats, and nobody new goes in until it is resumed.
		capacity = 0
	}
	raw, err := tickScript.Run(ctx, a.rdb, k.tick(), owner, a.lease.Milliseconds(), a.tick.Milliseconds(),
		g.OnsaleAt.UnixMilli(), capacity, a.batch, a.passTTL.Milliseconds(), a.cleanupCap, free,
		(3 * a.tick).Milliseconds()).Slice()
	if err != nil {
		a.m.tickError()
		return TickResult{}, unavailable(err)
	}
	res := TickResult{Status: toInt(raw[0]), Slot: toInt(raw[1]), At: time.UnixMilli(toInt(raw[2])),
		StaleDropped: toInt(raw[3]), StaleSkipped: toInt(raw[4]), Active: toInt(raw[5]), Depth: toInt(raw[6]),
		ExpiredLeases: toInt(raw[7])}
	res.Ran = res.Status >= 0 || res.Status <= -3
	res.SoldOut = res.Status == -4
	for i := 8; i+1 < len(raw); i += 2 {
		u, _ := raw[i].(string)
		res.Admitted = append(res.Admitted, Admitted{UserID: u, JoinedAt: time.UnixMilli(toInt(raw[i+1]))})
	}
	if res.Ran {
		a.m.tick(eventID, res, capacity)
		if !paused {
			a.capacity.observe(ctx, eventID, res, capacity)
		}
		a.notifyTick(ctx, eventID, res)
	}
	return res, nil
}

// notifyTick tells every process's sockets about admissions at once (and
// about a sold-out event, at most every few seconds). The periodic position
// refresh would find both anyway; this only makes them immediate.
func (a *Admitter) notifyTick(ctx context.Context, eventID string, res TickResult) {
	if len(res.Admitted) > 0 {
		users := make([]string, len(res.Admitted))
		for i, in := range res.Admitted {
			users[i] = in.UserID
		}
		a.notices.publish(ctx, eventID, "admitted", users)
	}
	if res.SoldOut {
		last, _ := a.lastNotify.Load(eventID)
		if t, ok := last.(time.Time); !ok || time.Since(t) > 5*time.Second {
			a.lastNotify.Store(eventID, time.Now())
			a.notices.publish(ctx, eventID, "soldout", nil)
		}
	} else {
		a.lastNotify.Delete(eventID)
	}
}

// settle ends the extension of leases whose holds have ended (paid,
// released or expired) and records strikes: holds that expired without any
// purchase. It reads up to 500 held fans per call, round robin.
func (a *Admitter) settle(ctx context.Context, eventID string) error {
	k := a.keys.event(eventID)
	a.mu.Lock()
	cursor := a.cursor[eventID]
	a.mu.Unlock()
	users, err := a.rdb.ZRange(ctx, k.held, cursor, cursor+499).Result()
	if err != nil {
		return unavailable(err)
	}
	next := cursor + int64(len(users))
	if len(users) < 500 {
		next = 0
	}
	a.mu.Lock()
	a.cursor[eventID] = next
	a.mu.Unlock()
	if len(users) == 0 {
		return nil
	}
	outcomes, err := a.inv.HoldOutcomes(ctx, eventID, users)
	if err != nil {
		return err
	}
	args := make([]any, 0, 1+3*len(users))
	args = append(args, a.rechoose.Milliseconds())
	for _, u := range users {
		o := outcomes[u]
		// "1": the hold ended unpaid (released, expired): the fan keeps a
		// moment (Options.Rechoose) of their admission window to choose
		// again, not all of it: most such fans have left, and a place
		// kept for each for minutes filled the room with nobody (15% of
		// fans walking away kept a room of 100 full). "2": the fan
		// paid: their place in checkout goes to the next fan at once, or a
		// sale's throughput would be capacity per admission window.
		ended := "0"
		switch {
		case !o.Holding && o.Paid:
			ended = "2"
		case !o.Holding:
			ended = "1"
		}
		strikes := o.Expired
		if o.Paid {
			strikes = 0
		}
		args = append(args, u, ended, strikes)
	}
	n, err := settleScript.Run(ctx, a.rdb, []string{k.lease, k.li, k.held, k.strikes}, args...).Int64()
	if err != nil {
		return unavailable(err)
	}
	a.m.settled(n)
	return nil
}

// Settle runs one settlement pass over the event's held fans (tests and
// operators; the admitter runs it every few ticks).
func (a *Admitter) Settle(ctx context.Context, eventID string) error { return a.settle(ctx, eventID) }

// meteredEvents lists the events that need an admitter, cached 10 seconds.
func (a *Admitter) meteredEvents(ctx context.Context) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Since(a.eventsAt) > 10*time.Second {
		evs, err := a.inv.MeteredEvents(ctx, 24*time.Hour)
		if err != nil {
			if a.events == nil {
				return nil, err
			}
			a.log.Warn("waiting room: list metered events, using the last list", "err", err)
		} else {
			a.events, a.eventsAt = evs, time.Now()
		}
	}
	ids := make([]string, len(a.events))
	for i, g := range a.events {
		ids[i] = g.EventID
	}
	return ids, nil
}

// Run runs admission ticks for every metered event until ctx ends. Every
// process may run it: per event, only the elected one admits. Ticks
// are aligned to the Redis-time slots the script fences on, a tenth of a
// tick into each slot, so clock skew between hosts does not skip slots.
func (a *Admitter) Run(ctx context.Context, owner string) {
	if owner == "" {
		owner = NewOwner()
	}
	tick := a.tick
	settleEvery := max(int64(2*time.Second/tick), 1)
	var n int64
	for {
		now := time.Now()
		next := now.Truncate(tick).Add(tick + tick/10)
		select {
		case <-ctx.Done():
			return
		case <-time.After(next.Sub(now)):
		}
		n++
		events, err := a.meteredEvents(ctx)
		if err != nil {
			a.log.Warn("waiting room: list metered events", "err", err)
			continue
		}
		for _, ev := range events {
			tctx, cancel := context.WithTimeout(ctx, tick)
			res, err := a.Tick(tctx, ev, owner)
			if err != nil {
				if ctx.Err() == nil {
					a.log.Warn("waiting room: tick", "event", ev, "err", err)
				}
				cancel()
				continue
			}
			if res.Ran && n%settleEvery == 0 {
				if err := a.settle(tctx, ev); err != nil && ctx.Err() == nil {
					a.log.Warn("waiting room: settle holds", "event", ev, "err", err)
				}
			}
			cancel()
		}
	}
}
