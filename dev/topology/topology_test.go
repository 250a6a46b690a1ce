package topology_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/dev/topology"
	"github.com/encore-tickets/encore/rehearsal"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// TestMain removes the built binary when the tests end: at 250 MB a build,
// every run of the suite would otherwise leave one behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// encoreBinary is the test command's own encore binary (testinfra's, built
// from this checkout), or else cmd/encore built once per test binary.
func encoreBinary(tb testing.TB) string {
	tb.Helper()
	if b := os.Getenv(testenv.EnvBinary); b != "" {
		_, err := os.Stat(b)
		require.NoError(tb, err, "%s names no file", testenv.EnvBinary)
		return b
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "encore-topology-bin")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "encore")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		buildErr = topology.Build(ctx, testenv.RepoRoot(), binary)
	})
	require.NoError(tb, buildErr)
	return binary
}

// startCluster starts a topology that is closed, its logs' tails printed on
// failure, when the test ends.
func startCluster(tb testing.TB, opts topology.Options) *topology.Cluster {
	tb.Helper()
	opts.Binary = encoreBinary(tb)
	if opts.Dir == "" {
		opts.Dir = testenv.ServerTempDir(tb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := topology.Start(ctx, opts)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Log(c.LogTails(40))
		}
		c.Close()
	})
	return c
}

// sale is an event of the topology's database: one numbered section.
type sale struct {
	id, section string
	rows, per   int
}

func newSale(tb testing.TB, pool *pgxpool.Pool, rows, per int, metered bool) sale {
	tb.Helper()
	suffix := strings.ToLower(strconv.FormatUint(rand.Uint64()%1e8, 36))
	s := sale{id: "evt_top" + suffix, section: "sec_top" + suffix, rows: rows, per: per}
	require.NoError(tb, demo.Create(context.Background(), pool, demo.Event{ID: s.id, Title: "Topology", VenueID: "ven_top",
		VenueName: "Topology Hall", City: "C", Currency: "EUR", StartsAt: time.Now().AddDate(0, 1, 0),
		OnsaleAt: time.Now().Add(-time.Hour), Metered: metered,
		Sections: []demo.Section{{ID: s.section, Name: "Floor", Rows: rows, PerRow: per, BasePrice: 4000}}}))
	return s
}

func (s sale) seats() []string {
	var out []string
	for r := range s.rows {
		for n := 1; n <= s.per; n++ {
			out = append(out, demo.SeatID(s.section, r, n))
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// fan is a client with its own loopback source address (every per-IP limit
// and the fraud rules see one fan per address, as on the internet) that
// remembers the longest time it went without an answer: from a request
// that failed with a 5xx or no answer at all until the next answered one.
type fan struct {
	http      *http.Client
	failSince time.Time
	// retryAfter is the last answer's Retry-After.
	retryAfter time.Duration
	worst      time.Duration
	worstAt    time.Time
	errors     int
	// failures counts the failed requests by what they were answered.
	failures map[string]int
}

func newFan(i int) *fan {
	f := &fan{failures: map[string]int{}}
	f.from(i, 0)
	return f
}

// from moves the fan to the source address of its n-th booking: the fraud
// rules step a checkout up to 3-D Secure past 30 an hour from one address.
func (f *fan) from(i, n int) {
	if f.http != nil {
		f.http.CloseIdleConnections()
	}
	src := net.IPv4(127, byte(10+i), byte(n/250), byte(1+n%250))
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 5 * time.Second}
	f.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext,
		MaxIdleConnsPerHost: 4}}
}

// call sends one request; status 0 is no answer.
func (f *fan) call(method, url, token, key string, body any, out any) (int, string) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := f.http.Do(req)
	if err != nil {
		f.failed("no answer")
		return 0, err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	f.retryAfter = 0
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		f.retryAfter = time.Duration(secs) * time.Second
	}
	var p struct {
		Type   string `json:"type"`
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(raw, &p)
	if resp.StatusCode >= 500 {
		f.failed(fmt.Sprintf("%s %d %s", method, resp.StatusCode, p.Detail))
	} else {
		f.answered()
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		p.Type += " (" + p.Detail + ")"
	}
	if out != nil && resp.StatusCode < 300 {
		_ = json.Unmarshal(raw, out)
	}
	return resp.StatusCode, p.Type
}

func (f *fan) failed(what string) {
	f.errors++
	f.failures[what]++
	if f.failSince.IsZero() {
		f.failSince = time.Now()
	}
}

func (f *fan) answered() {
	if !f.failSince.IsZero() {
		if d := time.Since(f.failSince); d > f.worst {
			f.worst, f.worstAt = d, f.failSince
		}
		f.failSince = time.Time{}
	}
}

// until retries a call, under the same idempotency key, until it is
// answered with something other than a 5xx, a 429 or a request still in
// progress (at most two minutes),
// after the answer's Retry-After (at most a second here, so the test
// measures how long the server failed, not how long the fan waited), else
// 200 ms.
func (f *fan) until(method, url, token, key string, body any, out any) (int, string) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, typ := f.call(method, url, token, key, body, out)
		// 409 request-in-progress: an earlier try under this key is still
		// running (its answer was lost to a crash): ask again.
		again := st == 0 || st >= 500 || st == http.StatusTooManyRequests ||
			(st == http.StatusConflict && strings.HasSuffix(typ, "/request-in-progress"))
		if !again || time.Now().After(deadline) {
			return st, typ
		}
		wait := 200 * time.Millisecond
		if f.retryAfter > 0 {
			wait = min(f.retryAfter, time.Second)
		}
		// The fan's pause before it tries again is the client behaviour the
		// test plays (a browser honouring Retry-After), not a wait for an
		// event: without it the fans would hammer a failing process.
		time.Sleep(wait)
	}
}

func (f *fan) session(api, user string) string {
	var s struct{ Token string }
	if st, _ := f.until(http.MethodPost, api+"/v1/sessions", "", "", map[string]string{"user_id": user, "device_id": "dev-" + user}, &s); st != http.StatusCreated {
		return ""
	}
	return s.Token
}

// metric sums the samples of a metric family on a process's /metrics whose
// labels contain every one of want (e.g. `event="evt_x"`).
func metric(tb testing.TB, adminURL, name string, want ...string) (float64, bool) {
	tb.Helper()
	resp, err := http.Get(adminURL + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		require.NoError(tb, err, line)
		sum += v
		found = true
	}
	return sum, found
}

// activeEverywhere sums a metric (a 0/1 gauge, a counter) over every API
// and worker.
func activeEverywhere(tb testing.TB, c *topology.Cluster, name string, want ...string) float64 {
	var sum float64
	for _, p := range append(append([]*topology.Proc{}, c.APIs...), c.Workers...) {
		v, _ := metric(tb, p.AdminURL, name, want...)
		sum += v
	}
	return sum
}

// requireExactlyOne waits until the gauge sums to 1 over every process and
// then sees it stay 1 for three seconds.
func requireExactlyOne(t *testing.T, c *topology.Cluster, what, name string, want ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return activeEverywhere(t, c, name, want...) == 1 }, 60*time.Second, 200*time.Millisecond,
		"one %s active", what)
	// Time passing is what is checked here: the gauge stays 1 for three
	// seconds, not that it reaches 1.
	for range 10 {
		require.Equal(t, 1.0, activeEverywhere(t, c, name, want...), "exactly one %s active", what)
		time.Sleep(300 * time.Millisecond)
	}
}

func openPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// liveLatencies holds seats through one API and times the invalidation that
// a viewer of another API's live seat map receives for each.
func liveLatencies(t *testing.T, holdAPI, viewAPI string, s sale, n int) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws := "ws" + strings.TrimPrefix(viewAPI, "http") + "/v1/events/" + s.id + "/live"
	conn, _, err := websocket.Dial(ctx, ws, nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":"`+s.section+`"}`)))
	msgs := make(chan string, 64)
	go func() {
		for {
			_, m, err := conn.Read(ctx)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(m)
		}
	}()
	next := func(within time.Duration) string {
		select {
		case m := <-msgs:
			return m
		case <-time.After(within):
			return ""
		}
	}
	require.Contains(t, next(10*time.Second), `"reset"`)
	f := newFan(900)
	seats := s.seats()
	var out []time.Duration
	for i := range n {
		tok := f.session(holdAPI, fmt.Sprintf("viewer-probe-%d-%d", time.Now().UnixNano(), i))
		require.NotEmpty(t, tok)
		// Time passing is the point: past the hub's coalescing window the
		// next invalidation is sent at once, not held back behind the last.
		time.Sleep(300 * time.Millisecond)
		for len(msgs) > 0 {
			<-msgs
		}
		var h struct {
			HoldID string `json:"hold_id"`
		}
		t0 := time.Now()
		st, typ := f.call(http.MethodPost, holdAPI+"/v1/holds", tok, "", map[string]any{"event_id": s.id, "seat_ids": []string{seats[i]}}, &h)
		require.Equal(t, http.StatusCreated, st, typ)
		for {
			m := next(10 * time.Second)
			require.NotEmpty(t, m, "the viewer on the other API hears the hold within 10 s")
			if strings.Contains(m, `"invalidate"`) && strings.Contains(m, s.section) {
				out = append(out, time.Since(t0))
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestSeveralAPIsAndWorkersShareOneSaleAndSurviveKillNineOfEachProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts eight processes")
	}
	c := startCluster(t, topology.Options{APIs: 2, Workers: 2, Log: testWriter{t}, Replica: topology.StreamingReplica,
		Env: map[string]string{
			// Every checkout of the test must end: a fan's hold outlives the kills.
			"ENCORE_LOG_LEVEL": "warn",
		}})
	pool := openPool(t, c.DatabaseURL)
	reader := openPool(t, c.ReaderURL)
	api1, api2 := c.APIs[0].URL, c.APIs[1].URL
	// The browse plane reads the replica: an event is on sale there once
	// the replica has replayed its creation.
	replicated := func(s sale) {
		require.Eventually(t, func() bool {
			var n int
			return reader.QueryRow(context.Background(), `SELECT count(*) FROM seats WHERE event_id = $1`, s.id).Scan(&n) == nil &&
				n == s.rows*s.per
		}, 10*time.Second, 20*time.Millisecond, "the replica has event %s", s.id)
	}

	// One relay and one admitter, however many workers.
	requireExactlyOne(t, c, "outbox relay", "encore_outbox_relay_active")
	metered := newSale(t, pool, 2, 10, true)
	requireExactlyOne(t, c, "admitter", "encore_waitingroom_admitter_leader", `event="`+metered.id+`"`)

	// A viewer on API 2 hears holds made on API 1.
	probe := newSale(t, pool, 2, 10, false)
	replicated(probe)
	lat := liveLatencies(t, api1, api2, probe, 15)
	t.Logf("invalidation latency across processes (hold on api1 answered -> viewer on api2 told), %d holds: p50 %v, max %v",
		len(lat), lat[len(lat)/2], lat[len(lat)-1])

	// The sale: fans hold through API 1 and check out through API 2 while
	// an API, a worker and the Temporal server are each killed (SIGKILL)
	// and restarted.
	s := newSale(t, pool, 30, 20, false)
	replicated(s)
	seats := s.seats()
	const fans = 12
	cards := make([]string, fans*40)
	cc := &http.Client{Timeout: 10 * time.Second}
	base := time.Now().UnixNano() % 1_000_000_000
	for i := range cards {
		var err error
		cards[i], err = psp.NewCard(context.Background(), cc, c.PSPURL, system.SandboxKey, rehearsal.VisaNumber(base*1000+int64(i)), "")
		require.NoError(t, err)
	}
	var nextSeat, nextCard atomic.Int64
	var mu sync.Mutex
	var checkedOut []string
	outcomes := map[string]int{}
	stop := make(chan struct{})
	run := fmt.Sprintf("top%d", time.Now().UnixNano())
	fanStates := make([]*fan, fans)
	var wg sync.WaitGroup
	for g := range fans {
		f := newFan(g)
		fanStates[g] = f
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := int(nextCard.Add(1)) - 1
				if k >= len(cards) {
					return
				}
				user := fmt.Sprintf("%s-%d-%d", run, g, n)
				f.from(g, n)
				tok := f.session(api1, user)
				if tok == "" {
					continue
				}
				var h struct {
					HoldID string `json:"hold_id"`
				}
				st, typ := 0, ""
				for try := 0; try < 5; try++ {
					j := int(nextSeat.Add(1)) - 1
					if j >= len(seats) {
						return
					}
					st, typ = f.until(http.MethodPost, api1+"/v1/holds", tok, user+"-hold-"+strconv.Itoa(try),
						map[string]any{"event_id": s.id, "seat_ids": []string{seats[j]}}, &h)
					if st != http.StatusConflict {
						break
					}
				}
				if st != http.StatusCreated {
					mu.Lock()
					outcomes[fmt.Sprintf("hold %d %s", st, typ)]++
					mu.Unlock()
					continue
				}
				failedBefore := f.errors
				st, typ = f.until(http.MethodPost, api2+"/v1/holds/"+h.HoldID+"/checkout", tok, user+"-checkout",
					map[string]any{"payment_method": cards[k]}, nil)
				// A checkout whose answer was lost (a 503 while Temporal
				// died, though the saga had taken it) gets its first answer
				// when retried under the same key, or a 503 while Temporal
				// cannot tell it yet: never a 409 for a hold being paid for.
				// Should one come anyway, the booking's state is counted
				// beside it, and the books below still have to balance.
				if st == http.StatusConflict && f.errors > failedBefore {
					var b struct {
						Status string `json:"status"`
					}
					f.call(http.MethodGet, api2+"/v1/bookings/"+h.HoldID, tok, "", nil, &b)
					typ += ", booking " + b.Status
				}
				mu.Lock()
				if st == http.StatusOK {
					checkedOut = append(checkedOut, h.HoldID)
				} else {
					outcomes[fmt.Sprintf("checkout %d %s", st, typ)]++
				}
				mu.Unlock()
			}
		}()
	}

	ctx := context.Background()
	restarts := map[string]time.Duration{}
	// Temporal stays dead for a while before its restart: long enough for
	// the checkouts of every fan to fail and the saga's bounds to start
	// refusing, which must end once it is back, not a window later.
	down := map[*topology.Proc]time.Duration{c.Temporal: 6 * time.Second}
	// The sleeps below are the sale's schedule, not waits for an event: the
	// sale runs under load for a while before each kill and after the last
	// restart, so every kill lands mid-sale and the recovery is exercised.
	for _, p := range []*topology.Proc{c.APIs[0], c.Workers[0], c.Temporal} {
		time.Sleep(6 * time.Second)
		d, err := p.RestartAfter(ctx, down[p])
		require.NoError(t, err, "restart %s", p.Name)
		restarts[p.Name] = d
		t.Logf("%s killed (SIGKILL) and ready again after %v", p.Name, d.Round(time.Millisecond))
	}
	time.Sleep(8 * time.Second)
	close(stop)
	wg.Wait()
	mu.Lock()
	ids := slices.Clone(checkedOut)
	t.Logf("%d bookings checked out; other outcomes: %v", len(ids), outcomes)
	mu.Unlock()
	require.GreaterOrEqual(t, len(ids), 20, "the sale went on through the kills")

	// Every checked-out booking ends PAID or refunded.
	var left map[string]int
	require.Eventually(t, func() bool {
		left = map[string]int{}
		rows, err := pool.Query(ctx, `SELECT status, count(*) FROM reservations WHERE id = ANY($1) GROUP BY status`, ids)
		require.NoError(t, err)
		defer rows.Close()
		done := 0
		for rows.Next() {
			var st string
			var n int
			require.NoError(t, rows.Scan(&st, &n))
			left[st] = n
			if st == "PAID" || st == "REFUNDED" {
				done += n
			}
		}
		return done == len(ids)
	}, 4*time.Minute, time.Second, "every checked-out booking ends PAID or REFUNDED")
	t.Logf("bookings by status: %v", left)

	// The books: the inventory audit and the payment reconciliation.
	st := store.New(pool, store.Options{})
	report, err := st.Holds.Audit(ctx, "", 30*time.Second)
	require.NoError(t, err)
	require.Zero(t, report.Violations(), "audit: %s", report)
	cfg := config.Default()
	cfg.StripeAPIURL = c.PSPURL
	cfg.DataDir = t.TempDir()
	acts, err := system.BookingActivities(cfg, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	var mismatches []string
	require.Eventually(t, func() bool {
		rec, err := (*activities.Reconciliation)(acts).ReconcilePayments(ctx, time.Hour)
		require.NoError(t, err)
		mismatches = rec.Mismatches
		return len(rec.Mismatches) == 0 && rec.Captured >= left["PAID"]
	}, time.Minute, 5*time.Second, "reconciliation: %v", mismatches)

	// The browse plane reads the replica, and its seat map shows every seat
	// sold once the replica has replayed the sales.
	var standby bool
	require.NoError(t, reader.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&standby))
	require.True(t, standby, "ENCORE_READER_DATABASE_URL is the replica")
	// One seat a paid booking, counting every booking of the sale: a
	// checkout answered with an error may still have sold its seat.
	// One statement, one snapshot: a sale committing between two reads
	// would count on one side only.
	var sold, paid int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM seats WHERE event_id = $1 AND status = 'SOLD'),
		(SELECT count(*) FROM reservations WHERE event_id = $1 AND status = 'PAID')`, s.id).Scan(&sold, &paid))
	require.Equal(t, paid, sold, "one seat a booking")
	require.GreaterOrEqual(t, paid, left["PAID"])
	require.Eventually(t, func() bool {
		var m struct {
			Seats []struct {
				Status string `json:"status"`
			} `json:"seats"`
		}
		resp, err := http.Get(api2 + "/v1/events/" + s.id + "/sections/" + s.section + "/seats")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		n := 0
		for _, seat := range m.Seats {
			if seat.Status == "SOLD" {
				n++
			}
		}
		return n == sold
	}, 10*time.Second, 200*time.Millisecond, "the seat map on the replica shows the %d sold seats", sold)

	// No fan went without an answer for longer than the restart that
	// caused it (plus a retry's pause and a request's own time).
	longestRestart := slices.Max(slices.Collect(func(yield func(time.Duration) bool) {
		for _, d := range restarts {
			if !yield(d) {
				return
			}
		}
	}))
	var worst time.Duration
	for i, f := range fanStates {
		if f.worst > worst {
			worst = f.worst
		}
		t.Logf("fan %d: %d failed requests, longest without an answer %v; failures: %v", i, f.errors, f.worst.Round(time.Millisecond), f.failures)
	}
	t.Logf("restarts %v; longest a fan went without an answer: %v; checkouts refused past the saga's bounds: %.0f",
		restarts, worst, activeEverywhere(t, c, "encore_saga_shed_total"))
	require.LessOrEqual(t, worst, longestRestart+3*time.Second, "no fan sees errors for longer than a restart")

	// After the kills, still exactly one relay and one admitter.
	requireExactlyOne(t, c, "outbox relay", "encore_outbox_relay_active")
	requireExactlyOne(t, c, "admitter", "encore_waitingroom_admitter_leader", `event="`+metered.id+`"`)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// replica starts a streaming read replica of the topology's PostgreSQL.
