package apitest

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/store"
)

// Holds is the hold service the fan API's tests serve: a store on pool whose
// lock and statement timeouts fail a stuck test in seconds, seat hints in
// Redis under prefix, a per-account rate limit no test reaches, and metrics
// on a registry of its own, so that parallel stacks do not collide. A test
// sets what it needs besides (the waiting room's admission, say) before it
// serves.
func Holds(pool *pgxpool.Pool, rdb *redis.Client, prefix string, log *slog.Logger) *holds.Service {
	svc := &holds.Service{
		Store:   store.New(pool, store.Options{LockTimeout: 2 * time.Second, StatementTimeout: 5 * time.Second}),
		Hints:   seathint.New(rdb, prefix),
		Limiter: ratelimit.New(rdb, prefix+"rl:", ratelimit.Limit{Count: 1000, Per: time.Minute, Burst: 1000}),
		Log:     log,
	}
	svc.Register(prometheus.NewRegistry())
	return svc
}
