package system

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/internal/bulkhead"
	"github.com/encore-tickets/encore/outbox"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
)

// BrowsePlane is search, the seat-map cache and the live hub over their own
// read-only pool. API is what the edge serves; run Hub.Run beside it.
type BrowsePlane struct {
	Reader *pgxpool.Pool
	// Fresh loads seat-map snapshots when Reader is its own server
	// (ENCORE_READER_DATABASE_URL, perhaps a replica); nil otherwise.
	Fresh *FreshLoader
	Cache *seatmap.Cache
	Hub   *seatmap.Hub
	API   *api.Browse
}

// NewBrowsePlane opens the read-only pool: ENCORE_READER_DATABASE_URL as
// given, or else the main database URL with every session switched to the
// encore_reader role. With a URL of its own, seat-map fills go through a
// FreshLoader (a small read-only pool on the primary besides).
func NewBrowsePlane(ctx context.Context, cfg config.Config, dbURL string, rdb redis.UniversalClient, reg prometheus.Registerer,
	log *slog.Logger) (*BrowsePlane, error) {
	url, role := cfg.ReaderDatabaseURL.Reveal(), ""
	if url == "" {
		url, role = dbURL, store.ReaderRole
	}
	pool, err := store.OpenReader(ctx, url, role, store.PoolOptions{MaxConns: cfg.ReaderMaxConns,
		StatementTimeout: cfg.DBStatementTimeout, LockTimeout: cfg.LockTimeout})
	if err != nil {
		return nil, err
	}
	reader := store.NewReader(pool)
	load, fresh := seatmap.Loader(reader.SectionSeats), (*FreshLoader)(nil)
	if role == "" {
		// Perhaps a replica: seat-map fills wait for it to replay the
		// primary's position (replica.go, "Reading from a replica" in
		// docs/ARCHITECTURE.md).
		if fresh, err = openFreshLoader(ctx, dbURL, pool, store.PoolOptions{StatementTimeout: cfg.DBStatementTimeout,
			LockTimeout: cfg.LockTimeout}); err != nil {
			pool.Close()
			return nil, err
		}
		fresh.Register(reg)
		load = fresh.Load
	}
	cache := seatmap.NewCache(rdb, "", load, seatmap.CacheOptions{TTL: cfg.SeatMapCacheTTL})
	hub := seatmap.NewHub(rdb, "", seatmap.HubOptions{Log: log.With("component", "seatmap")})
	if cfg.SeatMapLocalTTL > 0 {
		cache.UseLocal(hub, cfg.SeatMapLocalTTL)
	}
	cache.Register(reg)
	hub.Register(reg)
	// Each class of read gets its share of the pool, so a flood of one
	// (suggestions, say) cannot starve event pages.
	cat := catalog.New(reader).Guard(bulkhead.Options{Slots: cfg.ReadSlots, Queue: cfg.ReadQueue, Wait: cfg.ReadWait})
	cat.SuggestTTL = cfg.SuggestCacheTTL
	return &BrowsePlane{Reader: pool, Fresh: fresh, Cache: cache, Hub: hub,
		API: &api.Browse{Catalog: cat, Cache: cache, Hub: hub, Hotels: hotels.NewSearch(reader, 0)}}, nil
}

// Close closes the read-only pools.
func (b *BrowsePlane) Close() {
	b.Reader.Close()
	if b.Fresh != nil {
		b.Fresh.Primary.Close()
	}
}

// NewRelay builds the outbox relay with the browse plane's handler
// (inventory.changed: delete the snapshot, then publish the invalidation).
// Other planes add theirs with Handle before Run.
func NewRelay(cfg config.Config, st *store.Store, cache *seatmap.Cache, reg prometheus.Registerer, log *slog.Logger) *outbox.Relay {
	r := outbox.New(st, outbox.Options{Interval: cfg.RelayInterval, Log: log.With("component", "outbox")})
	r.HandleEffects(store.TopicInventoryChanged, outbox.InventoryChanged(cache.Invalidate))
	r.Register(reg)
	return r
}
