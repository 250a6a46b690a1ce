package seatmap

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/encore-tickets/encore/internal/defaults"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// Format is a snapshot representation.
type Format string

// The two representations of a section's snapshot.
const (
	FormatJSON   Format = "json"
	FormatBitmap Format = "bin"
)

// ErrUnavailable says the snapshot could not be produced in time (another
// request holds the fill lease, or Redis or the database failed): a
// retryable 503.
var ErrUnavailable = errors.New("seatmap: snapshot unavailable, retry")

// Entry is one cached representation.
type Entry struct {
	ETag      string // quoted strong validator
	SeatCount int
	Body      []byte
}

// SeatJSON is one seat of the JSON snapshot.
type SeatJSON struct {
	ID     string      `json:"id"`
	Row    string      `json:"row"`
	Number int         `json:"number"`
	Status string      `json:"status"`
	Price  money.Money `json:"price"`
	// Where the seat is on the venue's plan, so a client draws the real
	// shape, and the price category it belongs to.
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
	Category string  `json:"category"`
}

// SnapshotJSON is the JSON snapshot of a section.
type SnapshotJSON struct {
	EventID   string     `json:"event_id"`
	SectionID string     `json:"section_id"`
	Kind      string     `json:"kind"`
	Seats     []SeatJSON `json:"seats"`
}

// Loader reads a section's seats from the database (store.Reader.SectionSeats).
type Loader func(ctx context.Context, eventID, sectionID string) (store.SectionSeats, error)

// CacheOptions tune the cache; zero values take the defaults.
type CacheOptions struct {
	TTL time.Duration // how long a snapshot lives in Redis (2s)
	// TTLFor, when set, overrides TTL per event (the operator's
	// seatmap_cache_ttl_ms dial); it is given TTL as the default.
	TTLFor   func(eventID string, def time.Duration) time.Duration
	LeaseTTL time.Duration // how long a fill lease lives if its owner dies (5s)
	Wait     time.Duration // how long a request waits for another's fill before a 503 (1s)
	Poll     time.Duration // how often a waiting request looks (15ms)
}

// Cache serves snapshots from Redis and fills misses behind a lease: per key
// one filler at a time across all processes (SET NX with a random token),
// while the others wait briefly for its result or get ErrUnavailable. Within
// a process, concurrent misses of one key also share one attempt.
//
// A fill is written only if no invalidation happened while it read the
// database (a per-section generation counter), so a slow fill can never put
// back a snapshot that an invalidation has just declared stale.
type Cache struct {
	rdb    redis.UniversalClient
	prefix string
	load   Loader
	opts   CacheOptions
	group  singleflight.Group

	// The process-local layer (UseLocal): entries by channel and format,
	// and a generation per channel that every heard change bumps.
	hub      *Hub
	localTTL time.Duration
	lmu      sync.Mutex
	local    map[string]localEntry
	lgen     map[string]uint64

	hits, misses, fills, waits, unavailable, invalidations, localHits prometheus.Counter
}

type localEntry struct {
	e       Entry
	expires time.Time
}

// NewCache builds a cache; every key and channel starts with prefix.
func NewCache(rdb redis.UniversalClient, prefix string, load Loader, opts CacheOptions) *Cache {
	defaults.Fill(&opts.TTL, 2*time.Second)
	defaults.Fill(&opts.LeaseTTL, 5*time.Second)
	defaults.Fill(&opts.Wait, time.Second)
	defaults.Fill(&opts.Poll, 15*time.Millisecond)
	c := &Cache{rdb: rdb, prefix: prefix, load: load, opts: opts}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	c.hits = counter("encore_seatmap_cache_hits_total", "Seat-map snapshot requests answered from Redis.")
	c.misses = counter("encore_seatmap_cache_misses_total", "Seat-map snapshot requests that found no cached snapshot.")
	c.fills = counter("encore_seatmap_cache_fills_total", "Snapshots read from the database under a fill lease.")
	c.waits = counter("encore_seatmap_cache_lease_waits_total", "Misses that waited for another request's fill.")
	c.unavailable = counter("encore_seatmap_cache_unavailable_total", "Snapshot requests answered 503 (no fill in time).")
	c.invalidations = counter("encore_seatmap_invalidations_published_total", "Section invalidations published.")
	c.localHits = counter("encore_seatmap_local_hits_total", "Seat-map snapshot requests answered from this process's memory.")
	return c
}

// UseLocal adds a process-local layer in front of Redis for hot sections:
// a snapshot is kept in memory for at most ttl, and only while the hub
// watches its section, so the invalidation that reaches viewers also drops
// the local copy (before any viewer hears it, and never coalesced). A
// section is watched for ten seconds after its last local miss. Call before
// the hub's Run; without a running hub the layer stays unused.
func (c *Cache) UseLocal(h *Hub, ttl time.Duration) {
	c.hub, c.localTTL = h, ttl
	c.local, c.lgen = map[string]localEntry{}, map[string]uint64{}
	h.OnChange(c.dropLocal)
}

// maxLocal bounds the process-local snapshots (two formats of each watched
// section, at most HubOptions.MaxWatched of them).
const maxLocal = 20_000

func (c *Cache) dropLocal(channel string) {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	c.lgen[channel]++
	delete(c.local, channel+":"+string(FormatJSON))
	delete(c.local, channel+":"+string(FormatBitmap))
	if len(c.lgen) > 100000 {
		clear(c.lgen) // bounded; a cleared generation only refuses stores in flight
		clear(c.local)
	}
}

// Register adds the cache's metrics to reg.
func (c *Cache) Register(reg prometheus.Registerer) {
	reg.MustRegister(c.hits, c.misses, c.fills, c.waits, c.unavailable, c.invalidations, c.localHits)
}

func (c *Cache) base(eventID, sectionID string) string {
	// The event in a hash tag keeps a section's keys in one Redis Cluster slot.
	return c.prefix + "seatmap:{" + eventID + "}:" + sectionID
}

func (c *Cache) key(eventID, sectionID string, f Format) string {
	return c.base(eventID, sectionID) + ":" + string(f)
}

// Channel is the Pub/Sub channel of a section's invalidations.
func (c *Cache) Channel(eventID, sectionID string) string {
	return channelName(c.prefix, eventID, sectionID)
}

func channelName(prefix, eventID, sectionID string) string {
	return prefix + "seatmap:inv:{" + eventID + "}:" + sectionID
}

// notFound marks a cached "no such section" so unknown sections are not a
// way around the lease.
const notFound = "-"

// encodeEntry is the Redis value: "<etag> <seat count>\n<body>".
func encodeEntry(e Entry) []byte {
	head := e.ETag + " " + strconv.Itoa(e.SeatCount) + "\n"
	out := make([]byte, 0, len(head)+len(e.Body))
	return append(append(out, head...), e.Body...)
}

func decodeEntry(v []byte) (Entry, error) {
	if string(v) == notFound {
		return Entry{}, store.ErrNotFound
	}
	head, body, ok := bytes.Cut(v, []byte("\n"))
	if !ok {
		return Entry{}, fmt.Errorf("seatmap: malformed cache entry")
	}
	etag, count, ok := bytes.Cut(head, []byte(" "))
	n, err := strconv.Atoi(string(count))
	if !ok || err != nil {
		return Entry{}, fmt.Errorf("seatmap: malformed cache entry header")
	}
	return Entry{ETag: string(etag), SeatCount: n, Body: body}, nil
}

func etag(f Format, body []byte) string {
	h := fnv.New128a()
	h.Write(body)
	return `"` + string(f) + "-" + hex.EncodeToString(h.Sum(nil)) + `"`
}

// Build renders both representations of a section's seats.
func Build(s store.SectionSeats) (jsonEntry, binEntry Entry, err error) {
	snap := SnapshotJSON{EventID: s.EventID, SectionID: s.SectionID, Kind: string(s.Kind), Seats: make([]SeatJSON, len(s.Seats))}
	statuses := make([]vocab.SeatStatus, len(s.Seats))
	for i, seat := range s.Seats {
		snap.Seats[i] = SeatJSON{ID: seat.ID, Row: seat.Row, Number: seat.Number, Status: string(seat.Status),
			Price: money.Money{Amount: seat.Price, Currency: s.Currency}, X: seat.X, Y: seat.Y, Category: seat.Category}
		statuses[i] = seat.Status
	}
	body, err := json.Marshal(snap)
	if err != nil {
		return Entry{}, Entry{}, err
	}
	bits, err := EncodeBitmap(statuses)
	if err != nil {
		return Entry{}, Entry{}, err
	}
	return Entry{ETag: etag(FormatJSON, body), SeatCount: len(s.Seats), Body: body},
		Entry{ETag: etag(FormatBitmap, bits), SeatCount: len(s.Seats), Body: bits}, nil
}

// Get returns a section's snapshot in format f: store.ErrNotFound for a
// section that is not the event's, ErrUnavailable when no fill finished in
// time.
func (c *Cache) Get(ctx context.Context, eventID, sectionID string, f Format) (Entry, error) {
	if c.hub == nil {
		return c.get(ctx, eventID, sectionID, f)
	}
	ch := c.Channel(eventID, sectionID)
	lkey := ch + ":" + string(f)
	now := time.Now()
	c.lmu.Lock()
	le, ok := c.local[lkey]
	gen := c.lgen[ch]
	c.lmu.Unlock()
	if ok && now.Before(le.expires) {
		c.localHits.Inc()
		return le.e, nil
	}
	// Watch first: once it is confirmed, any change after our read of Redis
	// bumps the generation and the copy is not kept.
	watched := c.hub.Watch(ctx, eventID, sectionID, now.Add(10*time.Second)) == nil
	e, err := c.get(ctx, eventID, sectionID, f)
	if err == nil && watched {
		c.lmu.Lock()
		if c.lgen[ch] == gen {
			if len(c.local) >= maxLocal {
				clear(c.local) // bounded; the next read refills from Redis
			}
			c.local[lkey] = localEntry{e: e, expires: now.Add(c.localTTL)}
		}
		c.lmu.Unlock()
	}
	return e, err
}

func (c *Cache) get(ctx context.Context, eventID, sectionID string, f Format) (Entry, error) {
	key := c.key(eventID, sectionID, f)
	v, err := c.rdb.Get(ctx, key).Bytes()
	if err == nil {
		c.hits.Inc()
		return decodeEntry(v)
	}
	if !errors.Is(err, redis.Nil) {
		return Entry{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	c.misses.Inc()
	// One attempt per key per process; its context outlives any one caller.
	ch := c.group.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Wait+c.opts.LeaseTTL)
		defer cancel()
		return c.fill(fctx, eventID, sectionID, f)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return Entry{}, r.Err
		}
		return r.Val.(Entry), nil
	case <-ctx.Done():
		return Entry{}, ctx.Err()
	}
}

// releaseScript deletes the lease only if it is still the caller's.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// storeScript writes both representations only if the section's generation
// is still the one read before the database, then releases the caller's
// lease. KEYS: gen, json, bin, lease. ARGV: gen, json, bin, ttl ms, token.
var storeScript = redis.NewScript(`
local gen = redis.call('GET', KEYS[1]) or '0'
local stored = 0
if gen == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])
  redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[4])
  stored = 1
end
if redis.call('GET', KEYS[4]) == ARGV[5] then redis.call('DEL', KEYS[4]) end
return stored`)

func (c *Cache) fill(ctx context.Context, eventID, sectionID string, f Format) (Entry, error) {
	base := c.base(eventID, sectionID)
	key, lease := c.key(eventID, sectionID, f), base+":lease"
	tokenBytes := make([]byte, 16)
	_, _ = crand.Read(tokenBytes)
	token := hex.EncodeToString(tokenBytes)
	deadline := time.Now().Add(c.opts.Wait)
	waited := false
	for {
		ok, err := c.rdb.SetNX(ctx, lease, token, c.opts.LeaseTTL).Result()
		if err != nil {
			return Entry{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if ok {
			// Double check: a fill may have finished between our miss and
			// the lease.
			if v, err := c.rdb.Get(ctx, key).Bytes(); err == nil {
				_ = releaseScript.Run(ctx, c.rdb, []string{lease}, token).Err()
				return decodeEntry(v)
			}
			return c.fillLeased(ctx, eventID, sectionID, f, token)
		}
		if !waited {
			waited = true
			c.waits.Inc()
		}
		// Another request fills: look for its result until the deadline,
		// and take the lease ourselves if it gives up.
		for {
			if time.Now().After(deadline) {
				c.unavailable.Inc()
				return Entry{}, ErrUnavailable
			}
			jitter := time.Duration(rand.Int64N(int64(c.opts.Poll)))
			select {
			case <-time.After(c.opts.Poll/2 + jitter):
			case <-ctx.Done():
				return Entry{}, ctx.Err()
			}
			v, err := c.rdb.Get(ctx, key).Bytes()
			if err == nil {
				return decodeEntry(v)
			}
			if !errors.Is(err, redis.Nil) {
				return Entry{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
			}
			if n, err := c.rdb.Exists(ctx, lease).Result(); err == nil && n == 0 {
				break // the filler finished without storing, or died: try the lease
			}
		}
	}
}

func (c *Cache) fillLeased(ctx context.Context, eventID, sectionID string, f Format, token string) (Entry, error) {
	base := c.base(eventID, sectionID)
	lease := base + ":lease"
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = releaseScript.Run(rctx, c.rdb, []string{lease}, token).Err()
	}
	gen, err := c.rdb.Get(ctx, base+":gen").Result()
	if errors.Is(err, redis.Nil) {
		gen, err = "0", nil
	}
	if err != nil {
		release()
		return Entry{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	c.fills.Inc()
	seats, err := c.load(ctx, eventID, sectionID)
	if errors.Is(err, store.ErrNotFound) {
		// Remember the miss briefly, generation permitting, like a snapshot.
		_ = storeScript.Run(ctx, c.rdb, []string{base + ":gen", c.key(eventID, sectionID, FormatJSON),
			c.key(eventID, sectionID, FormatBitmap), lease}, gen, notFound, notFound, c.ttl(eventID).Milliseconds(), token).Err()
		return Entry{}, store.ErrNotFound
	}
	if err != nil {
		release()
		return Entry{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	js, bin, err := Build(seats)
	if err != nil {
		release()
		return Entry{}, err
	}
	if err := storeScript.Run(ctx, c.rdb, []string{base + ":gen", c.key(eventID, sectionID, FormatJSON),
		c.key(eventID, sectionID, FormatBitmap), lease},
		gen, encodeEntry(js), encodeEntry(bin), c.ttl(eventID).Milliseconds(), token).Err(); err != nil {
		release()
		// The snapshot itself is good; only caching it failed.
	}
	if f == FormatBitmap {
		return bin, nil
	}
	return js, nil
}

// Invalidate declares a section's cached snapshot stale: it bumps the
// section's generation and deletes the snapshot, then publishes the
// invalidation on the section's channel. The order matters: a viewer that
// refetches the instant it hears can never read the entry just declared
// stale, and a fill that read the database before the change cannot store it.
func (c *Cache) Invalidate(ctx context.Context, eventID, sectionID string) error {
	base := c.base(eventID, sectionID)
	if _, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, base+":gen")
		p.Expire(ctx, base+":gen", time.Hour)
		p.Del(ctx, c.key(eventID, sectionID, FormatJSON), c.key(eventID, sectionID, FormatBitmap))
		return nil
	}); err != nil {
		return err
	}
	msg, _ := json.Marshal(Message{Type: "invalidate", EventID: eventID, SectionID: sectionID})
	// Classic PUBLISH, not sharded SPUBLISH: a Redis Cluster forwards it to
	// every node, so the hub's one connection, subscribed to sections of
	// many events (many slots), hears them all from any node. Sharded
	// Pub/Sub would need a connection per shard in every process.
	if err := c.rdb.Publish(ctx, c.Channel(eventID, sectionID), msg).Err(); err != nil {
		return err
	}
	c.invalidations.Inc()
	return nil
}

// SetTTLFor makes the cache ask f for each event's TTL (the operator's
// dial), with the configured TTL as the default. Call it before serving.
func (c *Cache) SetTTLFor(f func(eventID string, def time.Duration) time.Duration) { c.opts.TTLFor = f }

// ttl is how long the event's snapshots live in Redis. A TTL of zero
// (the operator turned caching off) keeps them 1 ms: every read fills.
func (c *Cache) ttl(eventID string) time.Duration {
	t := c.opts.TTL
	if c.opts.TTLFor != nil {
		t = c.opts.TTLFor(eventID, t)
	}
	return max(t, time.Millisecond)
}

// Message is what the live stream sends a viewer.
type Message struct {
	Type      string `json:"type"` // reset, invalidate, error or push_off
	EventID   string `json:"event_id,omitempty"`
	SectionID string `json:"section_id,omitempty"`
	Detail    string `json:"detail,omitempty"`
	PollMS    int64  `json:"poll_ms,omitempty"` // push_off: refresh by polling this often
}
