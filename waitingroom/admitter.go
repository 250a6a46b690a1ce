package waitingroom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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

func (r *Room) admitterTTL() time.Duration { return r.opts.AdmitterLease }

// Tick runs one admission tick for the event as owner, if owner is (or
// becomes) the event's elected admitter. Free inventory is read first; if it
// cannot be read, the tick admits nobody (fail closed).
func (r *Room) Tick(ctx context.Context, eventID, owner string) (TickResult, error) {
	g, err := r.gate(ctx, eventID)
	if err != nil {
		return TickResult{}, err
	}
	k := r.keys(eventID)
	lead, err := leadScript.Run(ctx, r.rdb, []string{k.admitter}, owner, r.admitterTTL().Milliseconds()).Int64()
	if err != nil {
		r.m.tickError()
		return TickResult{}, unavailable(err)
	}
	r.m.leader(eventID, lead == 1)
	if lead != 1 {
		return TickResult{Status: -1}, nil
	}
	free := int64(-1)
	if time.Now().After(g.OnsaleAt.Add(-r.opts.Tick)) {
		if free, err = r.inv.FreeUnits(ctx, eventID); err != nil {
			r.opts.Log.Warn("waiting room: free inventory unknown, admitting nobody this tick", "event", eventID, "err", err)
			free = -1
		}
	}
	capacity := r.capacity(ctx, eventID)
	paused := r.dials.For(eventID).AdmissionPaused
	if paused {
		// The operator paused admission: the line keeps its order and its
		// heartbeats, and nobody new goes in until it is resumed.
		capacity = 0
	}
	raw, err := tickScript.Run(ctx, r.rdb, k.tick(), owner, r.admitterTTL().Milliseconds(), r.opts.Tick.Milliseconds(),
		g.OnsaleAt.UnixMilli(), capacity, r.opts.Batch, r.opts.PassTTL.Milliseconds(), r.opts.CleanupCap, free,
		(3 * r.opts.Tick).Milliseconds()).Slice()
	if err != nil {
		r.m.tickError()
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
		r.m.tick(eventID, res, capacity)
		if !paused {
			r.observe(ctx, eventID, res, capacity)
		}
		r.notifyTick(ctx, eventID, res)
	}
	return res, nil
}

// notifyTick tells every process's sockets about admissions at once (and
// about a sold-out event, at most every few seconds). The periodic position
// refresh would find both anyway; this only makes them immediate.
func (r *Room) notifyTick(ctx context.Context, eventID string, res TickResult) {
	if len(res.Admitted) > 0 {
		users := make([]string, len(res.Admitted))
		for i, a := range res.Admitted {
			users[i] = a.UserID
		}
		r.publish(ctx, eventID, "admitted", users)
	}
	if res.SoldOut {
		last, _ := r.lastNotify.Load(eventID)
		if t, ok := last.(time.Time); !ok || time.Since(t) > 5*time.Second {
			r.lastNotify.Store(eventID, time.Now())
			r.publish(ctx, eventID, "soldout", nil)
		}
	} else {
		r.lastNotify.Delete(eventID)
	}
}

func (r *Room) publish(ctx context.Context, eventID, kind string, users []string) {
	msg := eventID + "\n" + kind
	if len(users) > 0 {
		msg += "\n" + strings.Join(users, "\n")
	}
	if err := r.rdb.Publish(ctx, r.notifyChannel(), msg).Err(); err != nil {
		r.opts.Log.Debug("waiting room: publish", "err", err)
	}
}

// notifyChannel is one channel for every event: classic Pub/Sub, which a
// Redis Cluster forwards to every node, so each process's one subscription
// hears every event's admissions whichever node it sits on.
func (r *Room) notifyChannel() string { return r.opts.Prefix + "wr:notify" }

// settle ends the extension of leases whose holds have ended (paid,
// released or expired) and records strikes: holds that expired without any
// purchase. It reads up to 500 held fans per call, round robin.
func (r *Room) settle(ctx context.Context, eventID string) error {
	k := r.keys(eventID)
	r.admitterMu.Lock()
	cursor := r.reconcileCursor[eventID]
	r.admitterMu.Unlock()
	users, err := r.rdb.ZRange(ctx, k.held, cursor, cursor+499).Result()
	if err != nil {
		return unavailable(err)
	}
	next := cursor + int64(len(users))
	if len(users) < 500 {
		next = 0
	}
	r.admitterMu.Lock()
	r.reconcileCursor[eventID] = next
	r.admitterMu.Unlock()
	if len(users) == 0 {
		return nil
	}
	outcomes, err := r.inv.HoldOutcomes(ctx, eventID, users)
	if err != nil {
		return err
	}
	args := make([]any, 0, 3*len(users))
	for _, u := range users {
		o := outcomes[u]
		// "1": the hold ended unpaid (released, expired): the fan keeps
		// the rest of their admission window to choose again. "2": the fan
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
	n, err := settleScript.Run(ctx, r.rdb, []string{k.lease, k.li, k.held, k.strikes}, args...).Int64()
	if err != nil {
		return unavailable(err)
	}
	r.m.settled(n)
	return nil
}

// Settle runs one settlement pass over the event's held fans (tests and
// operators; the admitter runs it every few ticks).
func (r *Room) Settle(ctx context.Context, eventID string) error { return r.settle(ctx, eventID) }

// meteredEvents lists the events that need an admitter, cached 10 seconds.
func (r *Room) meteredEvents(ctx context.Context) ([]string, error) {
	r.admitterMu.Lock()
	defer r.admitterMu.Unlock()
	if time.Since(r.admitterEventsAt) > 10*time.Second {
		evs, err := r.inv.MeteredEvents(ctx, 24*time.Hour)
		if err != nil {
			if r.admitterEvents == nil {
				return nil, err
			}
			r.opts.Log.Warn("waiting room: list metered events, using the last list", "err", err)
		} else {
			r.admitterEvents, r.admitterEventsAt = evs, time.Now()
		}
	}
	ids := make([]string, len(r.admitterEvents))
	for i, g := range r.admitterEvents {
		ids[i] = g.EventID
	}
	return ids, nil
}

// RunAdmitter runs admission ticks for every metered event until ctx ends.
// Every process may run it: per event, only the elected one admits. Ticks
// are aligned to the Redis-time slots the script fences on, a tenth of a
// tick into each slot, so clock skew between hosts does not skip slots.
func (r *Room) RunAdmitter(ctx context.Context, owner string) {
	if owner == "" {
		owner = NewOwner()
	}
	tick := r.opts.Tick
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
		events, err := r.meteredEvents(ctx)
		if err != nil {
			r.opts.Log.Warn("waiting room: list metered events", "err", err)
			continue
		}
		for _, ev := range events {
			tctx, cancel := context.WithTimeout(ctx, tick)
			res, err := r.Tick(tctx, ev, owner)
			if err != nil {
				if ctx.Err() == nil {
					r.opts.Log.Warn("waiting room: tick", "event", ev, "err", err)
				}
				cancel()
				continue
			}
			if res.Ran && n%settleEvery == 0 {
				if err := r.settle(tctx, ev); err != nil && ctx.Err() == nil {
					r.opts.Log.Warn("waiting room: settle holds", "event", ev, "err", err)
				}
			}
			cancel()
		}
	}
}

// LeaseCount is the number of active leases of an event (tests, operators).
func (r *Room) LeaseCount(ctx context.Context, eventID string) (int64, error) {
	n, err := r.rdb.ZCount(ctx, r.keys(eventID).lease, "("+strconv.FormatInt(time.Now().UnixMilli(), 10), "+inf").Result()
	return n, unavailable(err)
}
