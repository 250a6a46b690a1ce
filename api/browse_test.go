package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
)

// browseStack is newStack's event and hold service behind a server that also
// has the browse routes (as api.Server.Extra).
func browseStack(t *testing.T) (*stack, *seatmap.Cache) {
	t.Helper()
	return browseStackWith(t, func(*api.Server) {})
}

// browseStackWith is browseStack with the server changed by edit first.
func browseStackWith(t *testing.T, edit func(*api.Server)) (*stack, *seatmap.Cache) {
	t.Helper()
	s := newStack(t)
	rpool, err := store.OpenReader(context.Background(), testenv.DatabaseURL(t), store.ReaderRole, store.PoolOptions{MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(rpool.Close)
	reader := store.NewReader(rpool)
	cache := seatmap.NewCache(s.rdb, s.prefix+s.eventID+":", reader.SectionSeats, seatmap.CacheOptions{})
	hub := seatmap.NewHub(s.rdb, s.prefix+s.eventID+":", seatmap.HubOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	go hub.Run(ctx)
	t.Cleanup(cancel)
	srv := &api.Server{Holds: s.holds, Sessions: s.issuer, Log: s.holds.Log,
		Browse: &api.Browse{Catalog: catalog.New(reader), Cache: cache, Hub: hub}}
	edit(srv)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s, cache
}

// 100 fans at once ask for the best 2 adjacent seats of a 200-seat section:
// nobody waits on another's row locks (SKIP LOCKED), no seat is sold twice,
// every hold is 2 neighbours in one row, and the share that succeeds is
// reported.
func TestHundredConcurrentBestAvailableBuyers(t *testing.T) {
	s, _ := browseStack(t)
	section := s.eventID + "_a"
	const buyers = 100
	type result struct {
		status int
		seats  []string
		ptype  string
	}
	results := make([]result, buyers)
	tokens := make([]string, buyers)
	for i := range tokens {
		tokens[i] = s.fan(fmt.Sprintf("best%d", i))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	began := time.Now()
	for i := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := s.hold(tokens[i], map[string]any{"section_id": section, "quantity": 2, "adjacent": true})
			res := result{status: r.Status, ptype: problemType(r)}
			if ids, ok := r.Body["seat_ids"].([]any); ok {
				for _, id := range ids {
					res.seats = append(res.seats, id.(string))
				}
			}
			results[i] = res
		}()
	}
	close(start)
	wg.Wait()
	took := time.Since(began)

	owner := map[string]int{}
	held := 0
	for i, r := range results {
		switch r.status {
		case http.StatusCreated:
			held++
			require.Len(t, r.seats, 2)
			row0, n0 := splitSeat(t, r.seats[0])
			row1, n1 := splitSeat(t, r.seats[1])
			require.Equal(t, row0, row1, "one row: %v", r.seats)
			require.Equal(t, 1, abs(n0-n1), "adjacent: %v", r.seats)
			for _, id := range r.seats {
				prev, dup := owner[id]
				require.False(t, dup, "seat %s held by buyers %d and %d", id, prev, i)
				owner[id] = i
				require.Equal(t, "HELD", s.seatStatus(id))
			}
		case http.StatusConflict:
			require.Equal(t, problemName(api.ProbSeatUnavailable), r.ptype)
		default:
			t.Fatalf("buyer %d: status %d %s (a deadlock or timeout would show here)", i, r.status, r.ptype)
		}
	}
	t.Logf("best available, 2 adjacent seats, %d concurrent buyers, 200-seat section: %d held (success fraction %.2f) in %v",
		buyers, held, float64(held)/buyers, took.Round(time.Millisecond))
	require.GreaterOrEqual(t, held, 90)
	s.requireAuditClean()

	// The section is now (nearly) full of pairs: one more buyer of the last
	// seats either gets a pair or a 409, never a split pair.
	left := s.count(`SELECT count(*) FROM seats WHERE section_id = $1 AND status = 'AVAILABLE'`, section)
	require.Equal(t, 200-2*held, left)
	r := s.hold(s.fan("late"), map[string]any{"section_id": section, "quantity": 2, "adjacent": true})
	if left == 0 {
		require.Equal(t, http.StatusConflict, r.Status)
		require.Equal(t, problemName(api.ProbSeatUnavailable), problemType(r))
	}
}

func splitSeat(t *testing.T, id string) (string, int) {
	parts := strings.Split(id, "-")
	require.GreaterOrEqual(t, len(parts), 3, id)
	n, err := strconv.Atoi(parts[len(parts)-1])
	require.NoError(t, err)
	return parts[len(parts)-2], n
}

func abs(n int) int { return max(n, -n) }

func TestBestAvailableRequests(t *testing.T) {
	s, _ := browseStack(t)
	cases := []struct {
		name   string
		body   map[string]any
		status int
		ptype  string
	}{
		{"seated section", map[string]any{"section_id": s.eventID + "_b", "quantity": 3, "adjacent": true}, http.StatusCreated, ""},
		{"general admission ignores adjacency", map[string]any{"section_id": s.eventID + "_ga", "quantity": 2, "adjacent": true}, http.StatusCreated, ""},
		{"unknown section", map[string]any{"section_id": "nope", "quantity": 2, "adjacent": true}, http.StatusUnprocessableEntity, api.ProbInvalidRequest},
		{"too many", map[string]any{"section_id": s.eventID + "_b", "quantity": 7, "adjacent": true}, http.StatusUnprocessableEntity, api.ProbInvalidRequest},
		{"seat IDs and adjacency", map[string]any{"seat_ids": []string{s.seat("b", 0, 1)}, "adjacent": true}, http.StatusUnprocessableEntity, api.ProbInvalidRequest},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.hold(s.fan(fmt.Sprintf("case%d", i)), tc.body)
			require.Equal(t, tc.status, r.Status, string(r.Raw))
			if tc.ptype != "" {
				require.Equal(t, problemName(tc.ptype), problemType(r))
			}
		})
	}
	// The seated hold took the front row's centre.
	rows, err := s.pool.Query(context.Background(), `SELECT id FROM seats WHERE section_id = $1 AND status = 'HELD' ORDER BY number`, s.eventID+"_b")
	require.NoError(t, err)
	seats, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, seats, 3)
	for _, id := range seats {
		row, n := splitSeat(t, id)
		require.Equal(t, "A", row)
		require.True(t, n >= 7 && n <= 14, "near the centre: %v", seats)
	}
}

func TestBrowseEndpoints(t *testing.T) {
	s, cache := browseStack(t)
	section := s.eventID + "_a"
	// Hold two seats so the map has something to show.
	r := s.hold(s.fan("mapper"), map[string]any{"seat_ids": []string{s.seat("a", 0, 1), s.seat("a", 0, 2)}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.NoError(t, cache.Invalidate(context.Background(), s.eventID, section)) // what the relay does

	ev := s.do(http.MethodGet, "/v1/events/"+s.eventID, "", nil)
	require.Equal(t, http.StatusOK, ev.Status, string(ev.Raw))
	require.Equal(t, s.eventID, ev.Body["id"])
	for _, k := range []string{"title", "artist", "venue", "city", "genre", "starts_at", "onsale_at", "currency", "metered"} {
		require.Contains(t, ev.Body, k)
	}
	sections := ev.Body["sections"].([]any)
	require.Len(t, sections, 3)
	first := sections[0].(map[string]any)
	require.Equal(t, map[string]any{"id": section, "name": "A", "kind": "seated", "capacity": 200.0, "available": 198.0,
		"base_price": map[string]any{"amount": 5000.0, "currency": "EUR"}, "category": "standard"}, first)

	js := s.do(http.MethodGet, "/v1/events/"+s.eventID+"/sections/"+section+"/seats", "", nil)
	require.Equal(t, http.StatusOK, js.Status)
	seats := js.Body["seats"].([]any)
	require.Len(t, seats, 200)
	seat0 := seats[0].(map[string]any)
	require.Equal(t, s.seat("a", 0, 1), seat0["id"])
	require.Equal(t, "HELD", seat0["status"])
	require.Equal(t, "A", seat0["row"])
	require.Equal(t, 1.0, seat0["number"])
	// A grid's seats are placed by number (x) and row (y) on the plan.
	require.Equal(t, 1.0, seat0["x"])
	require.Equal(t, 0.0, seat0["y"])
	require.Equal(t, "standard", seat0["category"])
	require.Equal(t, 2.0, seats[21].(map[string]any)["x"], "row B, seat 2")
	require.Equal(t, 1.0, seats[21].(map[string]any)["y"])
	require.Equal(t, "AVAILABLE", seats[2].(map[string]any)["status"])

	bin := s.do(http.MethodGet, "/v1/events/"+s.eventID+"/sections/"+section+"/seats.bin", "", nil)
	require.Equal(t, http.StatusOK, bin.Status)
	require.Equal(t, "200", bin.Header.Get("X-Seat-Count"))
	require.Equal(t, store.SeatOrder, bin.Header.Get("X-Seat-Order"))
	require.Equal(t, "application/octet-stream", bin.Header.Get("Content-Type"))
	require.Len(t, bin.Raw, 50)
	require.Equal(t, byte(0b01_01_00_00), bin.Raw[0], "seats 1 and 2 held")
	etag := bin.Header.Get("ETag")
	require.NotEmpty(t, etag)
	for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
		nm := s.do(http.MethodGet, "/v1/events/"+s.eventID+"/sections/"+section+"/seats.bin", "", nil, "If-None-Match", inm)
		require.Equal(t, http.StatusNotModified, nm.Status, inm)
		require.Empty(t, nm.Raw)
	}
	changed := s.do(http.MethodGet, "/v1/events/"+s.eventID+"/sections/"+section+"/seats.bin", "", nil, "If-None-Match", `"stale"`)
	require.Equal(t, http.StatusOK, changed.Status)

	missing := s.do(http.MethodGet, "/v1/events/"+s.eventID+"/sections/nope/seats.bin", "", nil)
	require.Equal(t, http.StatusNotFound, missing.Status)
	require.Equal(t, problemName(api.ProbNotFound), problemType(missing))
	require.Equal(t, http.StatusNotFound, s.do(http.MethodGet, "/v1/events/evt_nope", "", nil).Status)

	search := s.do(http.MethodGet, "/v1/events?q="+strings.ReplaceAll("Test "+t.Name(), " ", "+")+"&city=testville", "", nil)
	require.Equal(t, http.StatusOK, search.Status, string(search.Raw))
	events := search.Body["events"].([]any)
	require.NotEmpty(t, events)
	ids := []string{}
	for _, e := range events {
		ids = append(ids, e.(map[string]any)["id"].(string))
	}
	require.True(t, slices.Contains(ids, s.eventID), "%v", ids)
	require.Contains(t, search.Body, "next_cursor")

	bad := s.do(http.MethodGet, "/v1/events?from=yesterday", "", nil)
	require.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	require.Equal(t, problemName(api.ProbInvalidRequest), problemType(bad))

	sug := s.do(http.MethodGet, "/v1/events/suggest?q=Tes", "", nil)
	require.Equal(t, http.StatusOK, sug.Status)
	require.NotEmpty(t, sug.Body["suggestions"])
	first = sug.Body["suggestions"].([]any)[0].(map[string]any)
	require.Contains(t, first, "text")
	require.Contains(t, first, "event_id")
}

func liveURL(s *stack, eventID string) string {
	return "ws" + strings.TrimPrefix(s.url, "http") + "/v1/events/" + eventID + "/live"
}

// openLive dials the live stream and waits for the reset of one section, so
// the socket is surely counted by the server.
func openLive(t *testing.T, ctx context.Context, s *stack) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, liveURL(s, s.eventID), nil)
	require.NoError(t, err)
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":"`+s.eventID+`_a"}`)))
	_, msg, err := conn.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(msg), `"reset"`)
	return conn
}

func TestTheLiveSocketIsCappedPerClientAddressAndPerProcess(t *testing.T) {
	for _, tc := range []struct {
		name          string
		perIP, perAll int
	}{
		{name: "per address", perIP: 3},
		{name: "per process", perIP: 100, perAll: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps := api.NewSocketCap(tc.perIP, tc.perAll)
			s, _ := browseStackWith(t, func(srv *api.Server) { srv.Sockets = caps })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var conns []*websocket.Conn
			for range 3 {
				conns = append(conns, openLive(t, ctx, s))
			}
			defer func() {
				for _, c := range conns {
					c.CloseNow()
				}
			}()
			require.Equal(t, 3, caps.Open())

			_, resp, err := websocket.Dial(ctx, liveURL(s, s.eventID), nil)
			require.Error(t, err, "the fourth socket")
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			require.NotEmpty(t, resp.Header.Get("Retry-After"))
			body, _ := io.ReadAll(resp.Body)
			require.Contains(t, string(body), "/problems/rate-limited")

			require.NoError(t, conns[0].Close(websocket.StatusNormalClosure, ""))
			require.Eventually(t, func() bool { return caps.Open() == 2 }, 5*time.Second, 10*time.Millisecond,
				"the closed socket's place is given back")
			conns[0] = openLive(t, ctx, s)
		})
	}
}

func TestTheLiveSocketNeedsAnExistingEventAndRefusesUnknownSections(t *testing.T) {
	s, _ := browseStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, resp, err := websocket.Dial(ctx, liveURL(s, "evt_no_such_event"), nil)
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "refused before the upgrade")

	conn, _, err := websocket.Dial(ctx, liveURL(s, s.eventID), nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":"sec_of_another_event"}`)))
	_, msg, err := conn.Read(ctx)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"error","section_id":"sec_of_another_event","detail":"no such section in this event"}`, string(msg))

	// The stream stays open for the event's own sections.
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":"`+s.eventID+`_b"}`)))
	_, msg, err = conn.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(msg), `"reset"`)
}
