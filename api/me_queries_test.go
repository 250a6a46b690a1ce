package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
)

// queryCounter is a pgx tracer that counts the queries a pool sends.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countedMeStack serves the fan's lists and bookings over a pool of its own
// whose queries are counted, and seeds one fan with one paid booking and
// another with fifty, each of two seats, two tickets and a payment.
type countedMeStack struct {
	url       string
	issuer    *session.Issuer
	queries   *queryCounter
	one, many string
}

func newCountedMeStack(t *testing.T) *countedMeStack {
	t.Helper()
	ctx := context.Background()
	pool := testenv.DB(t)
	eventID := "evt_" + testenv.RandomSuffix()
	section := eventID + "_a"
	require.NoError(t, demo.Create(ctx, pool, demo.Event{
		ID: eventID, Title: "Counted " + t.Name(), VenueID: "ven_test", VenueName: "Test Hall", City: "Testville",
		StartsAt: time.Now().Add(24 * time.Hour), OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Sections: []demo.Section{{ID: section, Name: "A", Rows: 1, PerRow: 102, BasePrice: 5000}},
	}))
	s := &countedMeStack{one: "fan_one_" + eventID, many: "fan_many_" + eventID, queries: &queryCounter{}}
	for _, u := range []string{s.one, s.many} {
		_, err := pool.Exec(ctx, `INSERT INTO users (id) VALUES ($1) ON CONFLICT DO NOTHING`, u)
		require.NoError(t, err)
	}
	st := store.New(pool, store.Options{})
	seat := 0
	book := func(user string, at time.Time) {
		id := uuid.New()
		_, err := pool.Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency, created_at)
			VALUES ($1, $2, $3, 'PAID', now(), now(), 10000, 'EUR', $4)`, id, user, eventID, at)
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO payments (reservation_id, intent_id, amount, currency, status)
			VALUES ($1, $2, 10000, 'EUR', 'CAPTURED')`, id, "pi_"+id.String())
		require.NoError(t, err)
		var rows []store.TicketRow
		for range 2 {
			seat++
			seatID := demo.SeatID(section, 0, seat)
			_, err = pool.Exec(ctx, `INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, base_price, surge_bps, discount, price_at_lock)
				VALUES ($1, $2, $3, $4, 5000, 10000, 0, 5000)`, id, eventID, section, seatID)
			require.NoError(t, err)
			_, err = pool.Exec(ctx, `UPDATE seats SET status = 'SOLD', reservation_id = $1 WHERE id = $2`, id, seatID)
			require.NoError(t, err)
			rows = append(rows, store.TicketRow{ID: tickets.NewTicketID(), ReservationID: id, EventID: eventID,
				SectionID: section, SeatID: seatID, Unit: 1, UserID: user, SecretSealed: []byte("sealed")})
		}
		require.NoError(t, st.Tickets.InsertTickets(ctx, rows))
	}
	start := time.Now().Add(-time.Hour)
	book(s.one, start)
	for i := range 50 {
		book(s.many, start.Add(time.Duration(i)*time.Second))
	}

	cfg, err := pgxpool.ParseConfig(testenv.DatabaseURL(t))
	require.NoError(t, err)
	cfg.MaxConns = 4
	cfg.ConnConfig.Tracer = s.queries
	counted, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(counted.Close)
	cst := store.New(counted, store.Options{})
	s.issuer = session.NewIssuer("counted-test-secret")
	srv := &api.Server{Sessions: s.issuer, Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError})),
		Tickets: &tickets.Wallet{Store: cst}, Bookings: &booking.Service{Store: cst}}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s
}

// get answers path for user and how many queries the server sent for it.
func (s *countedMeStack) get(t *testing.T, user, path string) (apitest.Response, int64) {
	t.Helper()
	s.queries.n.Store(0)
	r := apitest.Do(t, http.MethodGet, s.url+path, s.issuer.Issue(user, "phone", time.Now()), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	return r, s.queries.n.Load()
}

func TestMyBookingsAndMyTicketsCostTheSameQueriesForAPageOfOneAsForAPageOfFifty(t *testing.T) {
	t.Parallel()
	s := newCountedMeStack(t)

	one, oneQueries := s.get(t, s.one, "/v1/me/bookings?limit=50")
	many, manyQueries := s.get(t, s.many, "/v1/me/bookings?limit=50")
	require.Len(t, one.Body["bookings"], 1)
	require.Len(t, many.Body["bookings"], 50)
	require.Equal(t, oneQueries, manyQueries, "a page of 50 bookings sent %d queries, a page of one %d", manyQueries, oneQueries)
	require.LessOrEqual(t, manyQueries, int64(6))

	// Each booking of the list is the booking's own page.
	for _, b := range []struct {
		user    string
		booking any
	}{{s.many, many.Body["bookings"].([]any)[0]}, {s.many, many.Body["bookings"].([]any)[49]}, {s.one, one.Body["bookings"].([]any)[0]}} {
		m, user := b.booking.(map[string]any), b.user
		own, _ := s.get(t, user, fmt.Sprintf("/v1/bookings/%s", m["booking_id"]))
		require.Equal(t, own.Body, m)
		require.Len(t, m["tickets"], 2)
		require.Len(t, m["seat_ids"], 2)
		require.Equal(t, "PAID", m["status"])
		require.NotNil(t, m["payment"])
	}

	oneT, oneTQueries := s.get(t, s.one, "/v1/me/tickets?limit=100")
	manyT, manyTQueries := s.get(t, s.many, "/v1/me/tickets?limit=100")
	require.Len(t, oneT.Body["tickets"], 2)
	require.Len(t, manyT.Body["tickets"], 100)
	require.Equal(t, oneTQueries, manyTQueries, "a page of 100 tickets sent %d queries, a page of two %d", manyTQueries, oneTQueries)
}
