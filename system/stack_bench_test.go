package system_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/rehearsal"
	"github.com/encore-tickets/encore/system"
)

// BenchmarkHoldsThroughARunningStack drives POST /v1/holds of a running
// `encore dev` (ENCORE_BENCH_URL, loopback only) as a black-box client: 16
// clients (ENCORE_BENCH_CLIENTS), each hold two random available seats of the event
// (ENCORE_BENCH_EVENT, default the demo night) by a fresh account. It is the
// headline hold figure: the configuration a user runs (PostgreSQL with fsync
// on, Temporal and every plane in one process). Start the stack with
// ENCORE_ROOM_JOIN_IP_PER_MINUTE raised, since every client shares one
// address. Skipped without ENCORE_BENCH_URL.
func BenchmarkHoldsThroughARunningStack(b *testing.B) {
	st := newStack(b)
	eventID := st.event()
	seats := st.availableSeats(eventID)
	if len(seats) < 4*b.N {
		b.Fatalf("%d available seats; run with fewer holds (-benchtime Nx) or a fresh stack", len(seats))
	}
	call := st.call
	run := fmt.Sprintf("bench%d", time.Now().UnixNano())
	tokens := make([]string, b.N)
	for i := range tokens {
		var t struct{ Token string }
		if st := call(http.MethodPost, "/v1/sessions", "", map[string]string{"user_id": fmt.Sprintf("%s_%d", run, i), "device_id": "d" + run}, &t); st != http.StatusCreated {
			b.Fatalf("session: %d", st)
		}
		tokens[i] = t.Token
	}

	// 16 clients is the headline; ENCORE_BENCH_CLIENTS=1 shows one hold's
	// own latency, without queueing.
	clients := envInt(b, "ENCORE_BENCH_CLIENTS", 16)
	var created, conflicts, other atomic.Int64
	latencies := make([]time.Duration, b.N)
	b.ResetTimer()
	cpu := startCPUMeter()
	start := time.Now()
	parallel(clients, b.N, func(i int) {
		j := rand.IntN(len(seats))
		k := (j + 1 + rand.IntN(len(seats)-1)) % len(seats)
		t0 := time.Now()
		st := call(http.MethodPost, "/v1/holds", tokens[i], map[string]any{"event_id": eventID,
			"seat_ids": []string{seats[j], seats[k]}}, nil)
		latencies[i] = time.Since(t0)
		switch st {
		case http.StatusCreated:
			created.Add(1)
		case http.StatusConflict:
			conflicts.Add(1)
		default:
			other.Add(1)
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if other.Load() > 0 {
		b.Fatalf("%d holds answered neither 201 nor 409 (raise ENCORE_ROOM_JOIN_IP_PER_MINUTE?)", other.Load())
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "holds/s")
	b.ReportMetric(float64(latencies[b.N/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(latencies[b.N*99/100].Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflict_frac")
	if ms, ok := cpu.perOp(int64(b.N)); ok {
		b.ReportMetric(ms, "machine_cpu_ms/hold")
	}
}

// stack is a black-box client of a running `encore dev`.
type stack struct {
	b    *testing.B
	base string
	http *http.Client
	// transportErrors counts requests that got no answer.
	transportErrors atomic.Int64
}

// newStack reads ENCORE_BENCH_URL (loopback only) or skips the benchmark.
func newStack(b *testing.B) *stack {
	b.Helper()
	base := os.Getenv("ENCORE_BENCH_URL")
	if base == "" {
		b.Skip("set ENCORE_BENCH_URL to a running encore dev, e.g. http://127.0.0.1:8080")
	}
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	requireLoopback(b, "ENCORE_BENCH_URL", u.Hostname())
	// Longer than the stack's own one-minute bound on a checkout, so a slow
	// checkout is answered (503 unavailable) rather than cut off here.
	return &stack{b: b, base: base, http: &http.Client{Timeout: 90 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 128}}}
}

func requireLoopback(b *testing.B, name, host string) {
	b.Helper()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		b.Fatalf("%s must be a loopback address, not %s", name, host)
	}
}

// event is ENCORE_BENCH_EVENT, default the demo night. The stadium
// (evt_demo_stadium, 50,000 seats) is the event for headline figures.
func (s *stack) event() string { return envOr("ENCORE_BENCH_EVENT", "evt_demo_night") }

// envOr is the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// loopbackAddr is the host:port in the environment variable name (def when
// unset); the benchmarks only ever drive a stack on this machine.
func loopbackAddr(b *testing.B, name, def string) string {
	b.Helper()
	addr := envOr(name, def)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatalf("%s=%q: %v", name, addr, err)
	}
	requireLoopback(b, name, host)
	return addr
}

// call sends a JSON request and decodes a JSON answer into out (when not
// nil); it returns the status, 0 when the request failed.
func (s *stack) call(method, path, token string, body any, out any) int {
	var rd *bytes.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.b.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		// Counted by the caller as status 0; only the first is logged, so a
		// burst that outlasts the timeout does not flood the output.
		if s.transportErrors.Add(1) == 1 {
			s.b.Logf("%s %s: %v", method, path, err)
		}
		return 0
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode
}

// callProblem is call that also names the outcome: "201", "409
// seat-unavailable" from the problem's type, or "no-answer".
func (s *stack) callProblem(method, path, token string, body any, out any) (int, string) {
	var raw json.RawMessage
	st := s.call(method, path, token, body, &raw)
	if st == 0 {
		return 0, "no-answer"
	}
	if st >= 200 && st < 300 {
		if out != nil {
			_ = json.Unmarshal(raw, out)
		}
		return st, strconv.Itoa(st)
	}
	var p struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &p)
	return st, strings.TrimSpace(strconv.Itoa(st) + " " + strings.TrimPrefix(p.Type, "/problems/"))
}

// watchBooking reads booking id as the fan's page does: with the ETag of
// the copy it has (none at first) and, when wait > 0, Prefer: wait, so an
// unchanged booking is held up to wait seconds and answered 304. It returns
// the HTTP status and, on 200, the new ETag and booking status.
func (s *stack) watchBooking(id, token, etag string, wait int) (code int, tag, status string) {
	req, err := http.NewRequest(http.MethodGet, s.base+"/v1/bookings/"+id, nil)
	if err != nil {
		s.b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if etag != "" && wait > 0 {
		req.Header.Set("If-None-Match", etag)
		req.Header.Set("Prefer", "wait="+strconv.Itoa(wait))
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if s.transportErrors.Add(1) == 1 {
			s.b.Logf("GET /v1/bookings/%s: %v", id, err)
		}
		return 0, "", ""
	}
	defer resp.Body.Close()
	var v struct {
		Status string `json:"status"`
	}
	if resp.StatusCode == http.StatusOK {
		_ = json.NewDecoder(resp.Body).Decode(&v)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode, resp.Header.Get("ETag"), v.Status
}

// session signs in a fresh fan: a new account on a new device, so no fraud
// velocity rule (per account or device) fires across the benchmark.
func (s *stack) session(user string) string {
	var t struct{ Token string }
	if st := s.call(http.MethodPost, "/v1/sessions", "", map[string]string{"user_id": user, "device_id": "dev-" + user}, &t); st != http.StatusCreated {
		s.b.Errorf("session: %d", st)
	}
	return t.Token
}

// availableSeats lists the event's available numbered seats, shuffled.
func (s *stack) availableSeats(eventID string) []string {
	var ev struct {
		Sections []struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		} `json:"sections"`
	}
	if st := s.call(http.MethodGet, "/v1/events/"+eventID, "", nil, &ev); st != http.StatusOK {
		s.b.Fatalf("event %s: %d", eventID, st)
	}
	var seats []string
	for _, sec := range ev.Sections {
		if sec.Kind != "seated" {
			continue
		}
		var m struct {
			Seats []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"seats"`
		}
		s.call(http.MethodGet, "/v1/events/"+eventID+"/sections/"+sec.ID+"/seats", "", nil, &m)
		for _, seat := range m.Seats {
			if seat.Status == "AVAILABLE" {
				seats = append(seats, seat.ID)
			}
		}
	}
	rand.Shuffle(len(seats), func(i, j int) { seats[i], seats[j] = seats[j], seats[i] })
	return seats
}

// terminalBooking are the statuses a booking does not leave except by a
// refund: every one but PAID is a failed booking here.
var terminalBooking = map[string]bool{"EXPIRED": true, "CANCELLED": true, "REFUNDED": true, "FAILED": true}

// cards creates n cards in the stack's payment sandbox (ENCORE_BENCH_PSP,
// default 127.0.0.1:12111, loopback only), one per fan as a fan's browser
// would: the fraud rule counts accounts per card fingerprint, so fans
// sharing a test card would be stepped up to 3-D Secure. Created before the
// clock starts: the card is the provider's work, not the stack's.
func (s *stack) cards(n int) []string {
	s.b.Helper()
	addr := loopbackAddr(s.b, "ENCORE_BENCH_PSP", "127.0.0.1:12111")
	base := time.Now().UnixNano() % 1_000_000_000
	out := make([]string, n)
	parallel(16, n, func(i int) {
		id, err := sandboxCard(s.http, "http://"+addr, rehearsal.VisaNumber(base*1000+int64(i)), 0)
		if err != nil {
			s.b.Error(err)
			return
		}
		out[i] = id
	})
	if s.b.Failed() {
		s.b.FailNow()
	}
	return out
}

func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	return envPositive(b, name, def, strconv.Atoi, "integer")
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	b.Helper()
	return envPositive(b, name, def, time.ParseDuration, "duration")
}

// envPositive parses the environment variable name (def when unset); a value
// that does not parse, or is not positive, fails the benchmark.
func envPositive[T int | time.Duration](b *testing.B, name string, def T, parse func(string) (T, error), what string) T {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := parse(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive %s", name, v, what)
	}
	return n
}

// percentile of sorted durations, in milliseconds.
func percentileMS(sorted []time.Duration, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[(len(sorted)-1)*p/100].Microseconds()) / 1000
}

// dialStackTemporal dials the stack's Temporal frontend (ENCORE_BENCH_TEMPORAL,
// default 127.0.0.1:7233, loopback only) in ENCORE_BENCH_NAMESPACE (default
// "default", ENCORE_TEMPORAL_NAMESPACE's default).
func dialStackTemporal(b *testing.B) client.Client {
	b.Helper()
	addr := loopbackAddr(b, "ENCORE_BENCH_TEMPORAL", "127.0.0.1:7233")
	ns := envOr("ENCORE_BENCH_NAMESPACE", "default")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The stack's embedded server admits Encore's processes by the key
	// encore dev keeps in its data folder (or ENCORE_TEMPORAL_API_KEY).
	key := os.Getenv("ENCORE_TEMPORAL_API_KEY")
	if key == "" {
		raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), ".encore", system.TemporalKeyFile))
		if err != nil {
			b.Fatalf("the stack's Temporal API key (set ENCORE_TEMPORAL_API_KEY): %v", err)
		}
		key = strings.TrimSpace(string(raw))
	}
	// Uncompressed, as Encore's own clients of a loopback server are
	// (temporalclient.Options): the trivial workflows' ceiling is measured
	// on the terms the bookings get.
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: ns,
		Credentials:       client.NewAPIKeyStaticCredentials(key),
		ConnectionOptions: client.ConnectionOptions{TLSDisabled: true, GrpcCompression: &client.GrpcCompressionNone{}},
		Logger:            sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	if err != nil {
		b.Fatalf("dial Temporal at %s: %v", addr, err)
	}
	return c
}

// trivialCeiling runs a worker for a trivial workflow on a task queue of its
// own in this process, starts n of them (eagerly, like the booking saga) from
// fans goroutines, waits for each result and returns workflows per second
// with the start-to-result latencies, sorted.
func trivialCeiling(b *testing.B, c client.Client, n, fans int) (float64, []time.Duration) {
	b.Helper()
	queue := fmt.Sprintf("bench-trivial-%d", time.Now().UnixNano())
	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(trivial, workflow.RegisterOptions{Name: "Trivial"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var failed atomic.Int64
	lat := make([]time.Duration, n)
	start := time.Now()
	parallel(fans, n, func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		t0 := time.Now()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue, EnableEagerStart: true,
			WorkflowExecutionTimeout: time.Minute}, "Trivial")
		if err == nil {
			err = run.Get(ctx, nil)
		}
		lat[i] = time.Since(t0)
		if err != nil && failed.Add(1) == 1 {
			b.Errorf("trivial workflow: %v", err)
		}
	})
	rate := float64(n) / time.Since(start).Seconds()
	slices.Sort(lat)
	return rate, lat
}

// BenchmarkTrivialWorkflowsOnARunningStack is the ceiling for bookings on a
// running `encore dev`: a worker in this process on a task queue of its own,
// b.N trivial workflows (one workflow task each) started eagerly from
// ENCORE_BENCH_FANS (default 32) goroutines through the stack's Temporal
// frontend, each result awaited. Skipped without ENCORE_BENCH_URL (set it to
// say a stack is running; only the frontend is used).
func BenchmarkTrivialWorkflowsOnARunningStack(b *testing.B) {
	newStack(b) // the skip and the loopback check
	c := dialStackTemporal(b)
	defer c.Close()
	fans := envInt(b, "ENCORE_BENCH_FANS", 32)
	b.ResetTimer()
	rate, lat := trivialCeiling(b, c, b.N, fans)
	b.StopTimer()
	b.ReportMetric(rate, "wf/s")
	b.ReportMetric(percentileMS(lat, 50), "p50_ms")
	b.ReportMetric(percentileMS(lat, 99), "p99_ms")
}

// BenchmarkBookingsThroughARunningStack: ENCORE_BENCH_FANS (default 32)
// fans, each op one booking through the HTTP API of a running `encore dev`:
// a new session, a hold of one random available seat of ENCORE_BENCH_EVENT,
// checkout with a sandbox test card (each fan its own card), then GET
// /v1/bookings/{id} every ENCORE_BENCH_POLL (default 100ms) until PAID or
// ended otherwise (a failure), for at most ENCORE_BENCH_BOOKING_TIMEOUT
// (default 60s). The sandbox sends its signed webhooks itself. Before the
// bookings and again after them, in the same run, the trivial-workflow
// ceiling of BenchmarkTrivialWorkflowsOnARunningStack (ENCORE_BENCH_CEILING
// workflows, default 1000), and the bookings' fraction of the two runs' mean. Only HTTP: it measures the
// saga whether the workflow starts at hold or at checkout. Run with
// -benchtime Nx.
func BenchmarkBookingsThroughARunningStack(b *testing.B) {
	st := newStack(b)
	c := dialStackTemporal(b)
	defer c.Close()
	fans := envInt(b, "ENCORE_BENCH_FANS", 32)
	// Each read of the booking costs the stack a request and its queries.
	// The fan's page holds each read until the booking changes (Prefer:
	// wait, ENCORE_BENCH_WAIT seconds); with ENCORE_BENCH_WAIT=0 the fans
	// poll every ENCORE_BENCH_POLL instead, as the page did before (at
	// 100ms, 10-12 reads a booking; at 50ms, 35-60 on a loaded machine).
	poll := envDuration(b, "ENCORE_BENCH_POLL", 100*time.Millisecond)
	wait := 20
	if v := os.Getenv("ENCORE_BENCH_WAIT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("ENCORE_BENCH_WAIT=%q: seconds, 0 to poll", v)
		}
		wait = n
	}
	perBooking := envDuration(b, "ENCORE_BENCH_BOOKING_TIMEOUT", time.Minute)
	eventID := st.event()
	seats := st.availableSeats(eventID)
	if len(seats) < 2*b.N {
		b.Fatalf("%d available seats of %s for %d bookings; run with fewer (-benchtime Nx) or on the stadium", len(seats), eventID, b.N)
	}
	trivials := envInt(b, "ENCORE_BENCH_CEILING", 1000)
	before, _ := trivialCeiling(b, c, trivials, fans)

	run := fmt.Sprintf("bk%d", time.Now().UnixNano())
	var nextSeat, paid, failed, holdConflicts, polls atomic.Int64
	var mu sync.Mutex
	outcomes := map[string]int{}
	count := func(k string) {
		mu.Lock()
		outcomes[k]++
		mu.Unlock()
	}
	cards := st.cards(b.N)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := startCPUMeter()
	start := time.Now()
	parallel(fans, b.N, func(i int) {
		card := cards[i]
		token := st.session(fmt.Sprintf("%s_%d", run, i))
		// A seat someone else took since the seat map was read is
		// retried with the next one.
		var hold struct {
			HoldID string `json:"hold_id"`
		}
		var t0 time.Time
		status, outcome := 0, ""
		for range 5 {
			j := int(nextSeat.Add(1)) - 1
			if j >= len(seats) {
				break
			}
			t0 = time.Now()
			status, outcome = st.callProblem(http.MethodPost, "/v1/holds", token,
				map[string]any{"event_id": eventID, "seat_ids": []string{seats[j]}}, &hold)
			if status != http.StatusConflict {
				break
			}
			holdConflicts.Add(1)
		}
		if status != http.StatusCreated {
			count("hold " + outcome)
			failed.Add(1)
			return
		}
		status, outcome = st.callProblem(http.MethodPost, "/v1/holds/"+hold.HoldID+"/checkout", token,
			map[string]any{"payment_method": card}, nil)
		if status != http.StatusOK {
			count("checkout " + outcome)
			failed.Add(1)
			return
		}
		deadline := time.Now().Add(perBooking)
		var final, etag string
		for {
			polls.Add(1)
			code, tag, status := st.watchBooking(hold.HoldID, token, etag, wait)
			if code == http.StatusOK {
				final, etag = status, tag
			}
			if final == "PAID" || terminalBooking[final] || time.Now().After(deadline) {
				break
			}
			if wait == 0 || (code != http.StatusOK && code != http.StatusNotModified) {
				time.Sleep(poll)
			}
		}
		if final != "PAID" {
			count("booking " + final)
			failed.Add(1)
			return
		}
		d := time.Since(t0)
		paid.Add(1)
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	cpuMS, cpuOK := cpu.perOp(paid.Load())
	// The ceiling again after the bookings: on a shared machine the speed
	// drifts within minutes, and the fraction is of the two runs' mean.
	after, _ := trivialCeiling(b, c, trivials, fans)
	ceiling := (before + after) / 2
	slices.Sort(lat)
	if len(outcomes) > 0 {
		b.Logf("failed bookings by step and outcome: %v", outcomes)
	}
	rate := float64(paid.Load()) / elapsed.Seconds()
	b.ReportMetric(rate, "bookings/s")
	b.ReportMetric(percentileMS(lat, 50), "hold_to_paid_p50_ms")
	b.ReportMetric(percentileMS(lat, 99), "hold_to_paid_p99_ms")
	b.ReportMetric(float64(failed.Load()), "failures")
	b.ReportMetric(float64(holdConflicts.Load()), "hold_conflicts")
	b.ReportMetric(float64(polls.Load())/float64(max(paid.Load(), 1)), "polls/booking")
	b.ReportMetric(before, "trivial_before_wf/s")
	b.ReportMetric(after, "trivial_after_wf/s")
	b.ReportMetric(ceiling, "trivial_wf/s")
	b.ReportMetric(rate/ceiling, "fraction_of_ceiling")
	if cpuOK {
		b.ReportMetric(cpuMS, "machine_cpu_ms/booking")
	}
}

// BenchmarkBurstThroughARunningStack: each op is one burst against a running
// `encore dev` (run with -benchtime 1x): ENCORE_BENCH_BURST holds (default
// 2000; the flash-sale figure is 10,000 on the stadium) of one random
// available seat each, by fresh fans, at full speed from 64 goroutines; then
// a checkout of every created hold, again from 64 goroutines (sandbox cards
// cycled); then GET /v1/bookings/{id} of every checked-out booking until
// each is PAID or ended otherwise, for at most ENCORE_BENCH_BURST_TIMEOUT
// (default 5m) after the last checkout answered. Answers are counted by
// status and problem type (a 503 is "503 unavailable").
func BenchmarkBurstThroughARunningStack(b *testing.B) {
	st := newStack(b)
	n := envInt(b, "ENCORE_BENCH_BURST", 2000)
	settleWithin := envDuration(b, "ENCORE_BENCH_BURST_TIMEOUT", 5*time.Minute)
	const workers = 64
	eventID := st.event()
	for range b.N {
		b.StopTimer()
		seats := st.availableSeats(eventID)
		if len(seats) < n {
			b.Fatalf("%d available seats of %s for a burst of %d; use the stadium (ENCORE_BENCH_EVENT=evt_demo_stadium) or a fresh stack", len(seats), eventID, n)
		}
		run := fmt.Sprintf("burst%d", time.Now().UnixNano())
		tokens := make([]string, n)
		cards := st.cards(n)
		parallel(workers, n, func(i int) { tokens[i] = st.session(fmt.Sprintf("%s_%d", run, i)) })
		b.StartTimer()

		// Holds.
		var mu sync.Mutex
		holdOutcomes, checkoutOutcomes, bookingOutcomes := map[string]int{}, map[string]int{}, map[string]int{}
		holdIDs := make([]string, n)
		t0 := time.Now()
		parallel(workers, n, func(i int) {
			var h struct {
				HoldID string `json:"hold_id"`
			}
			_, outcome := st.callProblem(http.MethodPost, "/v1/holds", tokens[i],
				map[string]any{"event_id": eventID, "seat_ids": []string{seats[i]}}, &h)
			holdIDs[i] = h.HoldID
			mu.Lock()
			holdOutcomes[outcome]++
			mu.Unlock()
		})
		holdTime := time.Since(t0)

		// Checkouts of every created hold.
		var held []int
		for i, id := range holdIDs {
			if id != "" {
				held = append(held, i)
			}
		}
		checkedOut := make([]bool, n)
		checkoutLat := make([]time.Duration, len(held))
		t1 := time.Now()
		parallel(workers, len(held), func(k int) {
			i := held[k]
			c0 := time.Now()
			status, outcome := st.callProblem(http.MethodPost, "/v1/holds/"+holdIDs[i]+"/checkout", tokens[i],
				map[string]any{"payment_method": cards[i]}, nil)
			checkoutLat[k] = time.Since(c0)
			checkedOut[i] = status == http.StatusOK
			mu.Lock()
			checkoutOutcomes[outcome]++
			mu.Unlock()
		})
		checkoutTime := time.Since(t1)

		// Every checked-out booking settles: PAID or ended otherwise.
		pending := []int{}
		for i, ok := range checkedOut {
			if ok {
				pending = append(pending, i)
			}
		}
		deadline := time.Now().Add(settleWithin)
		for len(pending) > 0 && time.Now().Before(deadline) {
			still := make([]bool, len(pending))
			parallel(16, len(pending), func(k int) {
				i := pending[k]
				var v struct {
					Status string `json:"status"`
				}
				st.call(http.MethodGet, "/v1/bookings/"+holdIDs[i], tokens[i], nil, &v)
				if v.Status == "PAID" || terminalBooking[v.Status] {
					mu.Lock()
					bookingOutcomes[v.Status]++
					mu.Unlock()
					return
				}
				still[k] = true
			})
			next := pending[:0]
			for k, i := range pending {
				if still[k] {
					next = append(next, i)
				}
			}
			pending = next
			if len(pending) > 0 {
				time.Sleep(250 * time.Millisecond)
			}
		}
		settleTime := time.Since(t1)
		b.StopTimer()
		slices.Sort(checkoutLat)
		b.Logf("burst of %d on %s: holds %v in %s; checkouts %v in %s (p50 %.0f ms, p99 %.0f ms); bookings %v, %d unsettled after %s",
			n, eventID, holdOutcomes, holdTime.Round(time.Millisecond), checkoutOutcomes, checkoutTime.Round(time.Millisecond),
			percentileMS(checkoutLat, 50), percentileMS(checkoutLat, 99), bookingOutcomes, len(pending), settleTime.Round(time.Millisecond))
		b.ReportMetric(float64(n)/holdTime.Seconds(), "holds/s")
		b.ReportMetric(float64(len(held))/checkoutTime.Seconds(), "checkouts/s")
		for k, v := range holdOutcomes {
			b.ReportMetric(float64(v), "hold_"+strings.ReplaceAll(k, " ", "_"))
		}
		for k, v := range checkoutOutcomes {
			b.ReportMetric(float64(v), "checkout_"+strings.ReplaceAll(k, " ", "_"))
		}
		b.ReportMetric(float64(bookingOutcomes["PAID"]), "paid")
		b.ReportMetric(float64(len(held)-bookingOutcomes["PAID"]), "not_paid")
		b.ReportMetric(float64(len(pending)), "unsettled")
		b.ReportMetric(settleTime.Seconds(), "checkout_to_settled_s")
	}
}

// parallel calls f(0..n-1) from workers goroutines.
func parallel(workers, n int, f func(int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}
