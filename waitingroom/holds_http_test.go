package waitingroom_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/backpressure"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitingroom"
)

// buyStack is the fan API with the hold service (as api/setup_test.go builds
// it) over a real PostgreSQL, with the room as its admission.
type buyStack struct {
	t       *testing.T
	url     string
	issuer  *session.Issuer
	room    *waitingroom.Room
	st      *store.Store
	eventID string
	srv     *api.Server
}

func newBuyStack(t *testing.T, sections []demo.Section, opts ...waitingroom.Options) *buyStack {
	pool := testenv.DB(t)
	rdb, prefix := testenv.Redis(t)
	prefix += testenv.RandomSuffix() + ":"
	eventID := "evt_" + testenv.RandomSuffix()
	for i := range sections {
		sections[i].ID = eventID + "_" + sections[i].ID
	}
	require.NoError(t, demo.Create(context.Background(), pool, demo.Event{
		ID: eventID, Title: "Flash " + t.Name(), Artist: "Testers", Genre: "test",
		VenueID: "ven_wr_test", VenueName: "Test Hall", City: "Testville",
		StartsAt: time.Now().Add(30 * 24 * time.Hour), OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Metered: true, Sections: sections,
	}))
	st := store.New(pool, store.Options{LockTimeout: 2 * time.Second, StatementTimeout: 5 * time.Second})
	var o waitingroom.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	room := newRoomOn(t, rdb, prefix, st.Holds, o)
	log := quietLog()
	svc := &holds.Service{
		Store:     st,
		Hints:     seathint.New(rdb, prefix),
		Limiter:   ratelimit.New(rdb, prefix+"rl:", ratelimit.Limit{Count: 1000, Per: time.Minute, Burst: 1000}),
		Admission: room.Passes(),
		Log:       log,
	}
	svc.Register(prometheus.NewRegistry())
	issuer := session.NewIssuer("buy-test-secret")
	srv := &api.Server{Holds: svc, Room: room, Sessions: issuer, Log: log}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &buyStack{t: t, url: ts.URL, issuer: issuer, room: room, st: st, eventID: eventID, srv: srv}
}

// behindProxy serves the same stack trusting the given proxies, as a
// deployment behind a load balancer would, and returns its URL.
func (s *buyStack) behindProxy(trusted string) string {
	s.t.Helper()
	prefixes, err := api.ParseTrustedProxies(trusted)
	require.NoError(s.t, err)
	srv := *s.srv
	srv.TrustedProxies = prefixes
	ts := httptest.NewServer(srv.Handler())
	s.t.Cleanup(ts.Close)
	return ts.URL
}

func (s *buyStack) do(method, path string, who session.Identity, body any, headers ...string) apitest.Response {
	s.t.Helper()
	token := s.issuer.Issue(who.UserID, who.DeviceID, time.Now())
	return apitest.Do(s.t, method, s.url+path, token, body, headers...)
}

// admit joins through HTTP, ticks and returns the pass the room hands out.
func (s *buyStack) admit(who session.Identity) string {
	s.t.Helper()
	path := "/v1/events/" + s.eventID + "/queue"
	rep := s.do("POST", path, who, nil)
	require.Equal(s.t, http.StatusOK, rep.Status, string(rep.Raw))
	for i := 0; i < 50; i++ {
		rep = s.do("GET", path, who, nil)
		require.Equal(s.t, http.StatusOK, rep.Status, string(rep.Raw))
		if rep.Body["status"] == "admitted" {
			return rep.Body["pass"].(string)
		}
		tick(s.t, s.room, s.eventID, "a")
	}
	s.t.Fatal("not admitted")
	return ""
}

func TestMeteredHoldNeedsAPassFromTheRoom(t *testing.T) {
	s := newBuyStack(t, []demo.Section{{ID: "a", Name: "A", Rows: 2, PerRow: 10, BasePrice: 5000}})
	seat := func(n int) string { return demo.SeatID(s.eventID+"_a", 0, n) }
	asha, bo := fan(1), fan(2)
	hold := func(who session.Identity, seats []string, headers ...string) apitest.Response {
		return s.do("POST", "/v1/holds", who, map[string]any{"event_id": s.eventID, "seat_ids": seats}, headers...)
	}

	rep := hold(asha, []string{seat(1)})
	require.Equal(t, http.StatusTooManyRequests, rep.Status, string(rep.Raw))
	require.Equal(t, "/problems/queue-required", rep.Body["type"])
	rep = hold(asha, []string{seat(1)}, "X-Admission-Pass", "forged")
	require.Equal(t, "/problems/queue-required", rep.Body["type"])

	pass := s.admit(asha)
	rep = hold(bo, []string{seat(1)}, "X-Admission-Pass", pass)
	require.Equal(t, "/problems/queue-required", rep.Body["type"], "a pass is bound to its fan")

	rep = hold(asha, []string{seat(1), seat(2)}, "X-Admission-Pass", pass, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusCreated, rep.Status, string(rep.Raw))
	holdID := rep.Body["hold_id"].(string)
	expires, err := time.Parse(time.RFC3339Nano, rep.Body["expires_at"].(string))
	require.NoError(t, err)

	// The lease now lives as long as the hold.
	rdb, _ := testenv.Redis(t)
	score, err := rdb.ZScore(context.Background(), s.room.Options().Prefix+"wr:{"+s.eventID+"}:lease", asha.UserID).Result()
	require.NoError(t, err)
	require.InDelta(t, float64(expires.UnixMilli()), score, 1000)

	// Released: settling shortens the lease back to the admission window, and
	// the pass still works inside it.
	require.Equal(t, http.StatusNoContent, s.do("DELETE", "/v1/holds/"+holdID, asha, nil).Status)
	require.NoError(t, s.room.Admitter().Settle(context.Background(), s.eventID))
	score, err = rdb.ZScore(context.Background(), s.room.Options().Prefix+"wr:{"+s.eventID+"}:lease", asha.UserID).Result()
	require.NoError(t, err)
	require.Less(t, score, float64(time.Now().Add(5*time.Minute+time.Second).UnixMilli()))
	rep = hold(asha, []string{seat(3)}, "X-Admission-Pass", pass, "Idempotency-Key", "k2")
	require.Equal(t, http.StatusCreated, rep.Status, string(rep.Raw))

	// Revoked: the same valid pass is refused.
	revoked, err := s.room.Revoke(context.Background(), s.eventID, asha.UserID)
	require.NoError(t, err)
	require.True(t, revoked, "asha had an admission to end")
	require.Equal(t, http.StatusNoContent, s.do("DELETE", "/v1/holds/"+rep.Body["hold_id"].(string), asha, nil).Status)
	rep = hold(asha, []string{seat(4)}, "X-Admission-Pass", pass, "Idempotency-Key", "k3")
	require.Equal(t, http.StatusTooManyRequests, rep.Status, string(rep.Raw))
	require.Equal(t, "/problems/queue-required", rep.Body["type"])
}

// TestSoldOutFromTheDatabase: when remaining inventory minus active holds
// reaches zero, the tick says so and queued fans are told sold out.
func TestSoldOutFromTheDatabase(t *testing.T) {
	s := newBuyStack(t, []demo.Section{
		{ID: "a", Name: "A", Rows: 1, PerRow: 2, BasePrice: 5000},
		{ID: "ga", Name: "Floor", General: true, Capacity: 1, BasePrice: 2000},
	})
	free, err := s.st.Holds.FreeUnits(context.Background(), s.eventID)
	require.NoError(t, err)
	require.EqualValues(t, 3, free)

	asha, bo := fan(1), fan(2)
	pass := s.admit(asha)
	rep := s.do("POST", "/v1/holds", asha, map[string]any{"event_id": s.eventID,
		"seat_ids": []string{demo.SeatID(s.eventID+"_a", 0, 1), demo.SeatID(s.eventID+"_a", 0, 2)}}, "X-Admission-Pass", pass)
	require.Equal(t, http.StatusCreated, rep.Status, string(rep.Raw))
	free, err = s.st.Holds.FreeUnits(context.Background(), s.eventID)
	require.NoError(t, err)
	require.EqualValues(t, 1, free, "held seats are not free")

	pass = s.admit(bo)
	rep = s.do("POST", "/v1/holds", bo, map[string]any{"event_id": s.eventID, "section_id": s.eventID + "_ga", "quantity": 1},
		"X-Admission-Pass", pass)
	require.Equal(t, http.StatusCreated, rep.Status, string(rep.Raw))
	free, err = s.st.Holds.FreeUnits(context.Background(), s.eventID)
	require.NoError(t, err)
	require.Zero(t, free)

	cy := fan(3)
	rep = s.do("POST", "/v1/events/"+s.eventID+"/queue", cy, nil)
	require.Equal(t, "waiting", rep.Body["status"])
	res := tick(t, s.room, s.eventID, "a")
	require.True(t, res.SoldOut)
	rep = s.do("GET", "/v1/events/"+s.eventID+"/queue", cy, nil)
	require.Equal(t, http.StatusOK, rep.Status)
	require.Equal(t, "sold_out", rep.Body["status"])
	wl, err := s.room.Line().Waitlist(context.Background(), s.eventID)
	require.NoError(t, err)
	require.Equal(t, []string{cy.UserID}, wl)

	outcomes, err := s.st.Holds.HoldOutcomes(context.Background(), s.eventID, []string{asha.UserID, cy.UserID})
	require.NoError(t, err)
	require.Equal(t, store.HoldOutcome{Holding: true}, outcomes[asha.UserID])
	require.Equal(t, store.HoldOutcome{}, outcomes[cy.UserID])
}

// TestStandardSignalsReadTheSagaAndThePayments: the adaptive mode steers by
// the saga's shared load (checkout latency and failures) and by payment
// failures in the database.
func TestStandardSignalsReadTheSagaAndThePayments(t *testing.T) {
	s := newBuyStack(t, []demo.Section{{ID: "a", Name: "A", Rows: 1, PerRow: 10, BasePrice: 5000}})
	pool := testenv.DB(t)
	ctx := context.Background()
	pass := s.admit(fan(1))
	rep := s.do("POST", "/v1/holds", fan(1), map[string]any{"event_id": s.eventID,
		"seat_ids": []string{demo.SeatID(s.eventID+"_a", 0, 1)}}, "X-Admission-Pass", pass)
	require.Equal(t, http.StatusCreated, rep.Status, string(rep.Raw))
	holdID := rep.Body["hold_id"].(string)
	_, err := pool.Exec(ctx, `INSERT INTO payments (reservation_id, amount, currency, status) VALUES ($1, 5000, 'EUR', 'FAILED')`, holdID)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = pool.Exec(ctx, `DELETE FROM payments WHERE reservation_id = $1`, holdID) })

	rdb, prefix := testenv.Redis(t)
	load := backpressure.New(rdb, prefix, backpressure.Bounds{}, slog.Default())
	load.Begin()(true)
	load.Begin()(false)
	src := &waitingroom.StandardSignals{Saga: load, Payments: s.st.Bookings}
	sig, err := src.Signals(ctx)
	require.NoError(t, err)
	require.Greater(t, sig.CheckoutLatency, time.Duration(0))
	require.InDelta(t, 0.5, sig.CheckoutErrorRate, 1e-9)
	require.InDelta(t, 1.0, sig.PaymentErrorRate, 1e-9)
}

// TestTheEdgeLimitsHoldsPerAddressBeforeTheHoldService: the route table runs
// the room's per-address limit ahead of authentication and the hold service,
// so the second hold attempt from one address within the burst is refused
// with Retry-After before the metered event's queue check, and even without a
// token.
// TestTheEdgeLimitsEachClientBehindATrustedProxyAndIgnoresASpoofedHeader:
// per-address limits count the client a trusted load balancer names, while
// X-Forwarded-For from anyone else changes nothing.
func TestTheEdgeLimitsEachClientBehindATrustedProxyAndIgnoresASpoofedHeader(t *testing.T) {
	s := newBuyStack(t, []demo.Section{{ID: "a", Name: "A", Rows: 1, PerRow: 10, BasePrice: 5000}},
		waitingroom.Options{HoldPerIP: 6})
	hold := func(base, forwardedFor string) int {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/holds", strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-For", forwardedFor)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	// The test's peer is loopback; untrusted here, its header is ignored.
	require.NotEqual(t, http.StatusTooManyRequests, hold(s.url, "203.0.113.1"))
	require.Equal(t, http.StatusTooManyRequests, hold(s.url, "203.0.113.2"), "a spoofed address buys no new budget")

	lb := s.behindProxy("127.0.0.0/8,::1")
	require.NotEqual(t, http.StatusTooManyRequests, hold(lb, "198.51.100.1"))
	require.NotEqual(t, http.StatusTooManyRequests, hold(lb, "198.51.100.2"), "another client behind the proxy has its own budget")
	require.Equal(t, http.StatusTooManyRequests, hold(lb, "198.51.100.1"))
	require.Equal(t, http.StatusTooManyRequests, hold(lb, "6.6.6.6, 198.51.100.2"), "a hop forged left of the proxy's counts for nothing")
}

func TestTheEdgeLimitsHoldsPerAddressBeforeTheHoldService(t *testing.T) {
	s := newBuyStack(t, []demo.Section{{ID: "a", Name: "A", Rows: 1, PerRow: 10, BasePrice: 5000}},
		waitingroom.Options{HoldPerIP: 6})
	asha := session.Identity{UserID: "asha-" + s.eventID, DeviceID: "phone"}
	first := s.do("POST", "/v1/holds", asha, map[string]any{"event_id": s.eventID, "seat_ids": []string{"nope"}})
	require.NotEqual(t, "/problems/rate-limited", first.Body["type"], string(first.Raw))
	second := s.do("POST", "/v1/holds", asha, map[string]any{"event_id": s.eventID, "seat_ids": []string{"nope"}})
	require.Equal(t, http.StatusTooManyRequests, second.Status, string(second.Raw))
	require.Equal(t, "/problems/rate-limited", second.Body["type"])
	require.NotEmpty(t, second.Header.Get("Retry-After"))

	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/holds", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var p struct{ Type string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	require.Equal(t, "/problems/rate-limited", p.Type, "limited before authentication too")
}
