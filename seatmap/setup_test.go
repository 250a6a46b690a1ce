package seatmap_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is a package database, Redis, a read-only pool and one event.
type env struct {
	t       testing.TB
	pool    *pgxpool.Pool
	reader  *store.Reader
	queries *testenv.QueryCounter
	rdb     *redis.Client
	prefix  string
	eventID string
}

// newEnv creates an event with one seated section of rows x perRow seats
// (section ID <event>_a) and one general section (<event>_ga).
func newEnv(t testing.TB, rows, perRow int) *env {
	t.Helper()
	ctx := context.Background()
	pool := testenv.DB(t)
	rdb, prefix := testenv.Redis(t)
	// The reader pool's seat-map queries.
	qc := &testenv.QueryCounter{Match: func(sql string) bool { return strings.Contains(sql, "LEFT JOIN seats") }}
	rpool, err := store.OpenReader(ctx, testenv.DatabaseURL(t), store.ReaderRole, store.PoolOptions{MaxConns: 4, Tracer: qc,
		// The tests count queries, not time: a loaded machine must not
		// time a snapshot's read out under them.
		StatementTimeout: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(rpool.Close)
	id := "evt_" + testenv.RandomSuffix()
	require.NoError(t, demo.Create(ctx, pool, demo.Event{
		ID: id, Title: "Seat map " + id, Artist: "Mappers", Genre: "test", VenueID: "ven_map", VenueName: "Map Hall",
		City: "Testville", StartsAt: time.Now().Add(30 * 24 * time.Hour), OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Sections: []demo.Section{
			{ID: id + "_a", Name: "A", Rows: rows, PerRow: perRow, BasePrice: 5000},
			{ID: id + "_ga", Name: "Floor", General: true, Capacity: 10, BasePrice: 2000},
		},
	}))
	return &env{t: t, pool: pool, reader: store.NewReader(rpool), queries: qc, rdb: rdb, prefix: prefix + id + ":", eventID: id}
}

func (e *env) section() string { return e.eventID + "_a" }

func (e *env) cache(opts seatmap.CacheOptions) *seatmap.Cache {
	return seatmap.NewCache(e.rdb, e.prefix, e.reader.SectionSeats, opts)
}

// hold commits a one-seat hold through the buy plane's transaction.
func (e *env) hold(seatID string) store.Hold {
	e.t.Helper()
	st := store.New(e.pool, store.Options{})
	h, _, err := st.Holds.CreateHold(context.Background(), store.HoldRequest{
		ReservationID: uuid.New(), UserID: "fan_" + testenv.RandomSuffix(), EventID: e.eventID, SeatIDs: []string{seatID},
	})
	require.NoError(e.t, err)
	return h
}

// liveServer serves the hub's WebSocket endpoint for the env's event.
func (e *env) liveServer(h *seatmap.Hub) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeLive(w, r, e.eventID, seatmap.LiveOptions{})
	}))
	e.t.Cleanup(srv.Close)
	return srv
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
