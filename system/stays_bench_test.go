package system_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkStayHoldsThroughARunningStack drives hotel-only holds, POST
// /v1/holds {"stays":[...]}, of a running `encore dev` (ENCORE_BENCH_URL,
// loopback only) as a black-box client: 16 clients, each hold one room of
// one room type for 1 or 2 nights by a fresh fan (demo login), at the hotel
// ENCORE_BENCH_HOTEL (default the demo's Arena Inn, prop_arena_inn; its
// minimum stay must be one night) and room type ENCORE_BENCH_ROOM_TYPE
// (empty, the default: every room type of the hotel). The stays are planned
// before the clock starts from the hotel search, night by night over the
// seeded nights, so they fit the rooms left; a hold answered 409
// room-unavailable anyway is a refused hold, counted apart (refused). After
// the clock stops every created hold is released, so the next run finds the
// same rooms. With ENCORE_BENCH_SAME_STAY=1 every hold is instead the stay
// of hotels/testdata/room_night_hold.sql, the pgbench ceiling's: tomorrow
// for two nights of ENCORE_BENCH_ROOM_TYPE (all holds on the same two
// rows; for a property like the ceiling's, with an allotment that lasts). It is the stays' headline figure: PostgreSQL with fsync on,
// Temporal and every plane in one process. Start the stack with
// ENCORE_ROOM_JOIN_IP_PER_MINUTE raised (the per-address hold limit), since
// every client shares one address. Skipped without ENCORE_BENCH_URL.
func BenchmarkStayHoldsThroughARunningStack(b *testing.B) {
	st := newStack(b)
	hotel := envOr("ENCORE_BENCH_HOTEL", "prop_arena_inn")
	plan := st.planStays(hotel, os.Getenv("ENCORE_BENCH_ROOM_TYPE"), os.Getenv("ENCORE_BENCH_SAME_STAY") == "1", b.N)
	run := fmt.Sprintf("stay%d", time.Now().UnixNano())
	tokens := make([]string, b.N)
	parallel(16, b.N, func(i int) { tokens[i] = st.session(fmt.Sprintf("%s_%d", run, i)) })
	if b.Failed() {
		b.FailNow()
	}

	const clients = 16
	var created, refused, other, roomNights atomic.Int64
	var mu sync.Mutex
	outcomes := map[string]int{}
	holdIDs := make([]string, b.N)
	latencies := make([]time.Duration, b.N)
	b.ResetTimer()
	start := time.Now()
	parallel(clients, b.N, func(i int) {
		var h struct {
			HoldID string `json:"hold_id"`
		}
		t0 := time.Now()
		status, outcome := st.callProblem(http.MethodPost, "/v1/holds", tokens[i],
			map[string]any{"stays": []stayBody{plan[i]}}, &h)
		latencies[i] = time.Since(t0)
		switch {
		case status == http.StatusCreated:
			created.Add(1)
			roomNights.Add(int64(plan[i].nights()))
			holdIDs[i] = h.HoldID
		case outcome == "409 room-unavailable":
			refused.Add(1)
		default:
			other.Add(1)
			mu.Lock()
			outcomes[outcome]++
			mu.Unlock()
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()

	// Give the rooms back for the next run (not timed).
	var notReleased atomic.Int64
	parallel(16, b.N, func(i int) {
		if holdIDs[i] == "" {
			return
		}
		if s := st.call(http.MethodDelete, "/v1/holds/"+holdIDs[i], tokens[i], nil, nil); s != http.StatusNoContent {
			notReleased.Add(1)
		}
	})
	if n := notReleased.Load(); n > 0 {
		b.Logf("%d holds not released; their rooms come back when they expire", n)
	}
	if other.Load() > 0 {
		b.Fatalf("%d holds answered neither 201 nor 409 room-unavailable: %v (raise ENCORE_ROOM_JOIN_IP_PER_MINUTE?)", other.Load(), outcomes)
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "holds/s")
	b.ReportMetric(float64(roomNights.Load())/elapsed.Seconds(), "room_nights/s")
	b.ReportMetric(percentileMS(latencies, 50), "p50_ms")
	b.ReportMetric(percentileMS(latencies, 99), "p99_ms")
	b.ReportMetric(float64(refused.Load()), "refused")
}

// stayBody is one stay of a hold's body.
type stayBody struct {
	PropertyID string `json:"property_id"`
	RoomType   string `json:"room_type"`
	Checkin    string `json:"checkin"`
	Checkout   string `json:"checkout"`
	Rooms      int    `json:"rooms"`
}

func (s stayBody) nights() int {
	in, _ := time.Parse(time.DateOnly, s.Checkin)
	out, _ := time.Parse(time.DateOnly, s.Checkout)
	return int(out.Sub(in).Hours()+12) / 24
}

// planStays plans n stays of one room for 1 or 2 nights (at random; 1 when
// two nights in a row are hard to find) at hotel, of roomType (empty: any of its room types), at random check-ins
// over the nights the hotel search shows on sale from today for the demo's
// 90 nights, each fitting the rooms the search showed left after the stays
// planned before it; with same, n times the stay from tomorrow for two
// nights of roomType. Fatal when n stays do not fit.
func (s *stack) planStays(hotel, roomType string, same bool, n int) []stayBody {
	s.b.Helper()
	const horizon = 92 // the demo's 90 nights and the day a stack started before midnight
	today := time.Now()
	today = time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	// left[room type][night index from today]: rooms left, 0 when not on sale.
	left := map[string][]int{}
	var mu sync.Mutex
	parallel(8, horizon, func(d int) {
		in := today.AddDate(0, 0, d)
		q := url.Values{"dest": {hotel}, "checkin": {in.Format(time.DateOnly)},
			"checkout": {in.AddDate(0, 0, 1).Format(time.DateOnly)}, "guests": {"1"}}
		var res struct {
			Properties []struct {
				ID        string `json:"id"`
				RoomTypes []struct {
					ID        string `json:"id"`
					Available int    `json:"available"`
				} `json:"room_types"`
			} `json:"properties"`
		}
		if st := s.call(http.MethodGet, "/v1/hotels/search?"+q.Encode(), "", nil, &res); st != http.StatusOK {
			s.b.Errorf("hotel search %s: %d", q.Encode(), st)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, p := range res.Properties {
			if p.ID != hotel {
				continue
			}
			for _, rt := range p.RoomTypes {
				if roomType != "" && rt.ID != roomType {
					continue
				}
				if left[rt.ID] == nil {
					left[rt.ID] = make([]int, horizon)
				}
				left[rt.ID][d] = rt.Available
			}
		}
	})
	if s.b.Failed() {
		s.b.FailNow()
	}
	types := make([]string, 0, len(left))
	total := 0
	for id, nights := range left {
		types = append(types, id)
		for _, r := range nights {
			total += r
		}
	}
	slices.Sort(types)
	if len(types) == 0 {
		s.b.Fatalf("hotel search shows no one-night stay at %s (room type %q) in the next %d nights", hotel, roomType, horizon)
	}
	plan := make([]stayBody, 0, n)
	need := 0
	if same {
		if len(types) != 1 || left[types[0]][1] < n || left[types[0]][2] < n {
			s.b.Fatalf("ENCORE_BENCH_SAME_STAY: want one room type (ENCORE_BENCH_ROOM_TYPE) with %d rooms left tomorrow and the night after at %s; have %v", n, hotel, types)
		}
		for range n {
			plan = append(plan, stayBody{PropertyID: hotel, RoomType: types[0], Rooms: 1,
				Checkin:  today.AddDate(0, 0, 1).Format(time.DateOnly),
				Checkout: today.AddDate(0, 0, 3).Format(time.DateOnly)})
		}
		need = 2 * n
	}
	for len(plan) < n {
		nights := 1 + rand.IntN(2)
		ok := false
		for try := range 1000 {
			if try == 500 {
				nights = 1 // two nights in a row are rarer than one
			}
			rt, d := types[rand.IntN(len(types))], rand.IntN(horizon-nights+1)
			fits := true
			for k := range nights {
				fits = fits && left[rt][d+k] > 0
			}
			if !fits {
				continue
			}
			for k := range nights {
				left[rt][d+k]--
			}
			plan = append(plan, stayBody{PropertyID: hotel, RoomType: rt, Rooms: 1,
				Checkin:  today.AddDate(0, 0, d).Format(time.DateOnly),
				Checkout: today.AddDate(0, 0, d+nights).Format(time.DateOnly)})
			need += nights
			ok = true
			break
		}
		if !ok {
			s.b.Fatalf("only %d of %d stays fit the %d room-nights left at %s (room types %v); run with fewer holds (-benchtime Nx) or a fresh stack",
				len(plan), n, total, hotel, types)
		}
	}
	s.b.Logf("%d stays planned at %s (room types %v): %d of the %d room-nights left", n, hotel, types, need, total)
	return plan
}
