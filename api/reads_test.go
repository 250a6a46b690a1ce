package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/internal/bulkhead"
	"github.com/encore-tickets/encore/store"
)

// limitedBrowseStack is browseStack with the per-address read limits at
// perMinute per class, behind a trusted proxy (the test client's loopback
// address), so each request names its client in X-Forwarded-For.
func limitedBrowseStack(t *testing.T, perMinute int) *stack {
	t.Helper()
	s, _ := browseStackWith(t, func(srv *api.Server) {
		srv.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
		srv.Reads = readLimits(t, perMinute)
	})
	return s
}

// readLimits are per-address read limits under the test's own Redis prefix,
// so parallel tests never share a budget.
func readLimits(t *testing.T, perMinute int) *api.ReadLimits {
	rdb, prefix := testenv.RedisPrefix(t)
	return api.NewReadLimits(rdb, prefix, perMinute)
}

func suggestFrom(s *stack, client, q string) apitest.Response {
	s.t.Helper()
	return s.do(http.MethodGet, "/v1/events/suggest?q="+q, "", nil, "X-Forwarded-For", client)
}

func requireRateLimited(t *testing.T, r apitest.Response) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, r.Status, string(r.Raw))
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
	require.Equal(t, problemName(api.ProbRateLimited), problemType(r))
}

func TestAFloodOfAnonymousSuggestionsFromOneAddressIsLimitedWhileAnotherAddressIsServed(t *testing.T) {
	t.Parallel()
	s := limitedBrowseStack(t, 60) // bursts of 10
	limited := 0
	for i := range 40 {
		r := suggestFrom(s, "198.51.100.7", fmt.Sprintf("flood%d", i))
		if r.Status == http.StatusTooManyRequests {
			requireRateLimited(t, r)
			limited++
			continue
		}
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}
	require.Greater(t, limited, 0, "40 suggestions at once from one address are not all served")
	r := suggestFrom(s, "198.51.100.8", "other")
	require.Equal(t, http.StatusOK, r.Status, "another address keeps its own budget: %s", r.Raw)
}

func TestAnAddressWrittenWithAPortCountsAsTheSameClient(t *testing.T) {
	t.Parallel()
	s := limitedBrowseStack(t, 6) // a burst of 1: the second request is refused
	require.Equal(t, http.StatusOK, suggestFrom(s, "1.2.3.4:5555", "a").Status)
	requireRateLimited(t, suggestFrom(s, "1.2.3.4", "b"))
	requireRateLimited(t, suggestFrom(s, "::ffff:1.2.3.4", "c"))
	requireRateLimited(t, suggestFrom(s, "[::ffff:1.2.3.4]:80", "d"))
}

func TestTwoIPv6AddressesInOneSlash64CountAsOneClient(t *testing.T) {
	t.Parallel()
	s := limitedBrowseStack(t, 6)
	require.Equal(t, http.StatusOK, suggestFrom(s, "2001:db8:1:2::1", "a").Status)
	requireRateLimited(t, suggestFrom(s, "[2001:db8:1:2:ffff:ffff:ffff:9]:443", "b"))
	require.Equal(t, http.StatusOK, suggestFrom(s, "2001:db8:1:3::1", "c").Status, "the next /64 is another client")
}

func TestAForwardedAddressFromAnUntrustedPeerStillCountsAsThePeer(t *testing.T) {
	t.Parallel()
	s, _ := browseStackWith(t, func(srv *api.Server) { srv.Reads = readLimits(t, 6) })
	require.Equal(t, http.StatusOK, suggestFrom(s, "1.2.3.4", "a").Status)
	requireRateLimited(t, suggestFrom(s, "5.6.7.8:9", "b"))
}

// suggestGate holds every suggestion query on its connection until
// released, so a test can fill the read pool with suggestions and watch
// what else still gets a connection.
type suggestGate struct {
	entered chan struct{}
	release chan struct{}
}

func (g *suggestGate) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "similarity(") {
		g.entered <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	}
	return ctx
}

func (g *suggestGate) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func TestAnEventPageStillAnswersWhileSuggestionsFloodTheReadPool(t *testing.T) {
	t.Parallel()
	const poolSize, slots, flood = 4, 2, 8
	gate := &suggestGate{entered: make(chan struct{}, flood), release: make(chan struct{})}
	s := newStack(t)
	rpool, err := store.OpenReader(context.Background(), testenv.DatabaseURL(t), store.ReaderRole,
		store.PoolOptions{MaxConns: poolSize, Tracer: gate})
	require.NoError(t, err)
	t.Cleanup(rpool.Close)
	cat := catalog.New(store.NewReader(rpool)).Guard(bulkhead.Options{Slots: slots, Queue: 2, Wait: 50 * time.Millisecond})
	// The deadline turns a request stuck behind the flood into an answer
	// (503) instead of a hung test.
	srv := &api.Server{Holds: s.holds, Log: s.holds.Log, RequestTimeout: 5 * time.Second,
		Browse: &api.Browse{Catalog: cat}}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	s.url = ts.URL

	// Distinct prefixes, so that no cache or shared query absorbs them.
	answers := make(chan apitest.Response, flood)
	var wg sync.WaitGroup
	for i := range flood {
		wg.Go(func() { answers <- s.do(http.MethodGet, fmt.Sprintf("/v1/events/suggest?q=flood%d", i), "", nil) })
	}
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(gate.release) }); wg.Wait() })

	// Wait until the flood has taken all it can: every suggestion either
	// holds a connection or has been answered, or the pool is full.
	held, answered := 0, []apitest.Response{}
	for held+len(answered) < flood && held < poolSize {
		select {
		case <-gate.entered:
			held++
		case r := <-answers:
			answered = append(answered, r)
		case <-time.After(30 * time.Second):
			t.Fatalf("the flood never settled: %d holding a connection, %d answered", held, len(answered))
		}
	}
	require.Equal(t, slots, held, "suggestions hold at most their class's share of the pool")

	page := s.do(http.MethodGet, "/v1/events/"+s.eventID, "", nil)
	require.Equal(t, http.StatusOK, page.Status, "the event page is served beside the flood: %s", page.Raw)
	require.Equal(t, s.eventID, page.Body["id"])

	for _, r := range answered {
		require.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Raw))
		require.Equal(t, problemName(api.ProbUnavailable), problemType(r))
		require.NotEmpty(t, r.Header.Get("Retry-After"))
	}
	released.Do(func() { close(gate.release) })
	for range slots {
		r := <-answers
		require.Equal(t, http.StatusOK, r.Status, "the suggestions that held a slot finish: %s", r.Raw)
	}
}

func TestSuggestionsOfOneNormalisedPrefixAreAskedOfThePoolOnce(t *testing.T) {
	t.Parallel()
	gate := &suggestGate{entered: make(chan struct{}, 8), release: make(chan struct{})}
	close(gate.release) // nothing waits: the gate only counts
	s := newStack(t)
	rpool, err := store.OpenReader(context.Background(), testenv.DatabaseURL(t), store.ReaderRole,
		store.PoolOptions{MaxConns: 2, Tracer: gate})
	require.NoError(t, err)
	t.Cleanup(rpool.Close)
	ts := httptest.NewServer((&api.Server{Holds: s.holds, Log: s.holds.Log,
		Browse: &api.Browse{Catalog: catalog.New(store.NewReader(rpool))}}).Handler())
	t.Cleanup(ts.Close)
	s.url = ts.URL

	first := s.do(http.MethodGet, "/v1/events/suggest?q=Test%20%20Sugg", "", nil)
	require.Equal(t, http.StatusOK, first.Status, string(first.Raw))
	for _, q := range []string{"test%20sugg", "%20TEST%09Sugg%20"} {
		r := s.do(http.MethodGet, "/v1/events/suggest?q="+q, "", nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Equal(t, first.Body, r.Body)
	}
	require.Len(t, gate.entered, 1, "one query for three spellings of one prefix")
}
