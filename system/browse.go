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
	"github.com/encore-tickets/encore/outbox"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
)

// BrowsePlane is search, the seat-map cache and the live hub over their own
// read-only pool. API is what the edge serves; run Hub.Run beside it.
type BrowsePlane struct {
	Reader *pgxpool.Pool
	Cache  *seatmap.Cache
	Hub    *seatmap.Hub
	API    *api.Browse
}

// NewBrowsePlane opens the read-only pool: ENCORE_READER_DATABASE_URL as
// given, or else the main database URL with every session switched to the
// encore_reader role.
func NewBrowsePlane(ctx context.Context, cfg config.Config, dbURL string, rdb *redis.Client, reg prometheus.Registerer,
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
	cache := seatmap.NewCache(rdb, "", reader.SectionSeats, seatmap.CacheOptions{TTL: cfg.SeatMapCacheTTL})
	hub := seatmap.NewHub(rdb, "", seatmap.HubOptions{Log: log.With("component", "seatmap")})
	if cfg.SeatMapLocalTTL > 0 {
		cache.UseLocal(hub, cfg.SeatMapLocalTTL)
	}
	cache.Register(reg)
	hub.Register(reg)
	return &BrowsePlane{Reader: pool, Cache: cache, Hub: hub,
		API: &api.Browse{Catalog: catalog.New(reader), Cache: cache, Hub: hub, Hotels: hotels.NewSearch(reader, 0)}}, nil
}

// Close closes the read-only pool.
func (b *BrowsePlane) Close() { b.Reader.Close() }

// NewRelay builds the outbox relay with the browse plane's handler
// (inventory.changed: delete the snapshot, then publish the invalidation).
// Other planes add theirs with Handle before Run.
func NewRelay(cfg config.Config, st *store.Store, cache *seatmap.Cache, reg prometheus.Registerer, log *slog.Logger) *outbox.Relay {
	r := outbox.New(st, outbox.Options{Interval: cfg.RelayInterval, Log: log.With("component", "outbox")})
	r.Handle(store.TopicInventoryChanged, outbox.InventoryChanged(cache.Invalidate))
	r.Register(reg)
	return r
}
