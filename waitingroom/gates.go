package waitingroom

import (
	"context"
	"errors"
	"time"

	"github.com/encore-tickets/encore/internal/lru"
	"github.com/encore-tickets/encore/store"
)

// gateCache holds the events' gates (are they metered, when do they open),
// read from the database and cached for a few seconds. When the database
// cannot answer, a cached answer up to a minute old is used; without one the
// room fails closed. Unknown and unmetered events are cached too (for
// gateFresh), so asking again for a made-up ID costs no read; the cache is
// bounded (Options.GateCacheSize) because the IDs come from clients.
type gateCache struct {
	inv    Inventory
	cache  *lru.Cache[string, gateEntry] // event ID -> gate
	limits *limits                       // lookupIP charges clients' reads
}

type gateEntry struct {
	gate store.Gate
	err  error
	at   time.Time
}

const (
	gateFresh = 5 * time.Second
	gateStale = time.Minute // a known gate's answer while the database is down
)

func newGateCache(inv Inventory, size int, l *limits) *gateCache {
	return &gateCache{inv: inv, cache: lru.New[string, gateEntry](size), limits: l}
}

// get returns the event's gate on the room's own behalf (no lookup limit).
func (c *gateCache) get(ctx context.Context, eventID string) (store.Gate, error) {
	return c.lookup(ctx, eventID, "")
}

// lookup is get on behalf of a client at ip: a lookup that must read the
// database is first charged to ip's lookup limit (none when ip is empty:
// the room's own loops).
func (c *gateCache) lookup(ctx context.Context, eventID, ip string) (store.Gate, error) {
	now := time.Now()
	e, ok := c.cache.Get(eventID, now)
	if ok && now.Sub(e.at) < gateFresh {
		return e.gate, e.err
	}
	if ip != "" {
		if err := c.limits.allow(ctx, c.limits.lookupIP, "lookup-ip", ip); err != nil {
			return store.Gate{}, err
		}
	}
	g, err := c.inv.EventGate(ctx, eventID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.cache.Add(eventID, gateEntry{err: ErrNoRoom, at: now}, now.Add(gateFresh))
		return store.Gate{}, ErrNoRoom
	case err != nil:
		if ok && e.err == nil {
			return e.gate, nil
		}
		return store.Gate{}, unavailable(err)
	}
	if !g.Metered {
		c.cache.Add(eventID, gateEntry{gate: g, err: ErrNoRoom, at: now}, now.Add(gateFresh))
		return g, ErrNoRoom
	}
	c.cache.Add(eventID, gateEntry{gate: g, at: now}, now.Add(gateStale))
	return g, nil
}

// size is how many events' gates are held in memory.
func (c *gateCache) size() int { return c.cache.Len() }
