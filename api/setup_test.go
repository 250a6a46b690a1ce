package api_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/session"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// stack is the fan API over a real PostgreSQL and Redis, with one fresh event.
type stack struct {
	t       testing.TB
	url     string
	pool    *pgxpool.Pool
	rdb     *redis.Client
	prefix  string
	hints   *seathint.Hints
	holds   *holds.Service
	eventID string
	issuer  *session.Issuer
}

type stackOption func(*demo.Event, *holds.Service)

// newStack starts the API on a new event with two seated sections of
// 10 rows x 20 seats and a general-admission section of 50.
func newStack(t testing.TB, opts ...stackOption) *stack {
	t.Helper()
	pool := testenv.DB(t)
	rdb, prefix := testenv.Redis(t)
	eventID := "evt_" + testenv.RandomSuffix()
	ev := demo.Event{
		ID: eventID, Title: "Test " + t.Name(), Artist: "Testers", Genre: "test",
		VenueID: "ven_test", VenueName: "Test Hall", City: "Testville",
		StartsAt: time.Now().Add(30 * 24 * time.Hour), OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Sections: []demo.Section{
			{ID: eventID + "_a", Name: "A", Rows: 10, PerRow: 20, BasePrice: 5000},
			{ID: eventID + "_b", Name: "B", Rows: 10, PerRow: 20, BasePrice: 3000},
			{ID: eventID + "_ga", Name: "Floor", General: true, Capacity: 50, BasePrice: 2000},
		},
	}
	log := quiet(t)
	svc := apitest.Holds(pool, rdb, prefix, log)
	hints := svc.Hints
	for _, o := range opts {
		o(&ev, svc)
	}
	require.NoError(t, demo.Create(context.Background(), pool, ev))
	issuer := session.NewIssuer("test-secret")
	srv := &api.Server{Holds: svc, Sessions: issuer, Log: log}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &stack{t: t, url: ts.URL, pool: pool, rdb: rdb, prefix: prefix, hints: hints, holds: svc,
		eventID: eventID, issuer: issuer}
}

// rowEvent creates an event on sale of one section, a row of seats seats,
// titled title and the test's name, and returns its ID and the section's.
func rowEvent(t testing.TB, title string, seats int) (eventID, section string) {
	t.Helper()
	eventID = "evt_" + testenv.RandomSuffix()
	section = eventID + "_a"
	require.NoError(t, demo.Create(context.Background(), testenv.DB(t), demo.Event{
		ID: eventID, Title: title + " " + t.Name(), VenueID: "ven_test", VenueName: "Test Hall", City: "Testville",
		StartsAt: time.Now().Add(24 * time.Hour), OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Sections: []demo.Section{{ID: section, Name: "A", Rows: 1, PerRow: seats, BasePrice: 5000}},
	}))
	return eventID, section
}

func (s *stack) seat(section string, row, n int) string {
	return demo.SeatID(s.eventID+"_"+section, row, n)
}

// fan is a distinct account with its own token.
func (s *stack) fan(name string) string {
	return s.issuer.Issue(name+"_"+s.eventID, "dev-"+name, time.Now())
}

func (s *stack) do(method, path, token string, body any, headers ...string) apitest.Response {
	s.t.Helper()
	return apitest.Do(s.t, method, s.url+path, token, body, headers...)
}

func (s *stack) hold(token string, body map[string]any, headers ...string) apitest.Response {
	s.t.Helper()
	if _, ok := body["event_id"]; !ok {
		body["event_id"] = s.eventID
	}
	return s.do(http.MethodPost, "/v1/holds", token, body, headers...)
}

// holdKeyed holds body for fan under the Idempotency-Key key and requires
// the answer 201, which a hold made and a hold replayed both get.
func (s *stack) holdKeyed(t testing.TB, fan, key string, body map[string]any) apitest.Response {
	t.Helper()
	r := s.hold(fan, body, "Idempotency-Key", key)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	return r
}

// keyedCart holds seats for a new fan, name, under the Idempotency-Key key
// and returns the fan's token, the request's body and its answer, for a test
// of what sending it again gets.
func (s *stack) keyedCart(t testing.TB, name, key string, seats ...string) (string, map[string]any, apitest.Response) {
	t.Helper()
	fan, body := s.fan(name), map[string]any{"seat_ids": seats}
	return fan, body, s.holdKeyed(t, fan, key, body)
}

// requireReplayed sends a hold again under key and requires the first
// answer, replayed rather than executed again.
func (s *stack) requireReplayed(t testing.TB, fan, key string, body map[string]any) apitest.Response {
	t.Helper()
	again := s.holdKeyed(t, fan, key, body)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	return again
}

// promotion creates the code name_<event> of this event, discountBps off,
// for at most maxUses holds, and returns it.
func (s *stack) promotion(name string, discountBps, maxUses int) string {
	s.t.Helper()
	code := name + "_" + s.eventID
	_, err := s.pool.Exec(context.Background(), `INSERT INTO promotions (code, event_id, discount_bps, max_uses) VALUES ($1, $2, $3, $4)`,
		code, s.eventID, discountBps, maxUses)
	require.NoError(s.t, err)
	return code
}

func (s *stack) seatStatus(id string) string {
	s.t.Helper()
	var status string
	require.NoError(s.t, s.pool.QueryRow(context.Background(), `SELECT status FROM seats WHERE id = $1`, id).Scan(&status))
	return status
}

func (s *stack) count(sql string, args ...any) int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// requireAuditClean runs the invariant audit on this event.
func (s *stack) requireAuditClean() {
	s.t.Helper()
	rep, err := s.holds.Store.Holds.Audit(context.Background(), s.eventID, 30*time.Second)
	require.NoError(s.t, err)
	require.Zero(s.t, rep.Violations(), rep.String())
}

func problemType(r apitest.Response) string {
	v, _ := r.Body["type"].(string)
	return v
}

func problemName(name string) string { return fmt.Sprintf("/problems/%s", name) }

// testWriter sends the server's error logs to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}

// quiet is a server's log that passes only errors on, to the test's log.
func quiet(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
}

// newStackB is newStack on a 50,000-seat event (see benchEvent).
func newStackB(b *testing.B, eventID string) *stack {
	s := newStack(b)
	benchEvent(b, eventID)
	s.eventID = eventID
	return s
}

// race sends n holds at once, the i-th built by req (token, body, extra
// headers), released together, and returns the answers in order. A hold told
// "busy, retry" (503 with Retry-After: a lock wait past the hold's lock
// timeout on a loaded machine) is sent again after Retry-After, as the app
// does, under the same Idempotency-Key (one is made when req gives none, so
// a retry of a hold that committed as its deadline passed is answered with
// that hold, not a second one), up to five times; the answer returned is
// the last.
func (s *stack) race(n int, req func(i int) (token string, body map[string]any, headers []string)) []apitest.Response {
	results := make([]apitest.Response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	round := raceRounds.Add(1)
	for i := range n {
		token, body, headers := req(i)
		if !slices.Contains(headers, "Idempotency-Key") {
			headers = append(headers, "Idempotency-Key", fmt.Sprintf("race-%d-%d", round, i))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = retryBusy(func() apitest.Response { return s.hold(token, body, headers...) })
		}()
	}
	close(start)
	wg.Wait()
	return results
}

// retryBusy sends a request as the app does: one answered "busy, retry"
// (503 with Retry-After: a lock or connection wait past its deadline on a
// loaded machine) is sent again after Retry-After, up to five times; the
// answer returned is the last. send must reuse its Idempotency-Key, so a
// retry of what committed as its deadline passed is answered with it.
func retryBusy(send func() apitest.Response) apitest.Response {
	r := send()
	for try := 0; r.Status == http.StatusServiceUnavailable && try < 5; try++ {
		wait, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil {
			break // not "busy, retry": the caller sees it
		}
		time.Sleep(time.Duration(wait) * time.Second)
		r = send()
	}
	return r
}

// raceRounds numbers the races of the process, so the keys race makes are
// never reused.
var raceRounds atomic.Int64
