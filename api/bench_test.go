package api_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
)

// benchEvent creates a 50,000-seat event: 10 sections of 50 rows x 100.
func benchEvent(b *testing.B, id string) {
	b.Helper()
	pool := testenv.DB(b)
	ev := demo.Event{ID: id, Title: "Bench", VenueID: "ven_bench", VenueName: "Bench", City: "B", Currency: "EUR",
		StartsAt: time.Now().AddDate(0, 2, 0), OnsaleAt: time.Now().Add(-time.Hour), PerCustomerLimit: 6}
	for i := range 10 {
		ev.Sections = append(ev.Sections, demo.Section{ID: fmt.Sprintf("sec_%s%d", id[4:], i), Name: fmt.Sprint(i), Rows: 50, PerRow: 100, BasePrice: 1000})
	}
	require.NoError(b, demo.Create(context.Background(), pool, ev))
}

var pgbenchOnce sync.Once
var pgbenchTPS = map[string]float64{}

// runPgbench runs the hold SQL of testdata/hold.sql, once per strategy, with
// 16 clients for 10 s against the package's database and records
// transactions per second by strategy. The statements are prepared, as pgx
// prepares them, and pipelined as its batches are.
func runPgbench(b *testing.B) {
	pgbenchOnce.Do(func() {
		bin := "/usr/lib/postgresql/15/bin/pgbench"
		if _, err := os.Stat(bin); err != nil {
			b.Logf("pgbench not found: %v", err)
			return
		}
		benchEvent(b, "evt_bench_pg")
		path, _ := filepath.Abs(filepath.Join("testdata", "hold.sql"))
		// The script's \if takes the one statement the strategies differ in.
		for _, strategy := range []struct{ name, locked string }{{"conditional", "0"}, {"locked", "1"}} {
			out, err := exec.Command(bin, "-n", "-M", "prepared", "-c", "16", "-j", "2", "-T", "10",
				"-D", "locked="+strategy.locked, "-f", path, testenv.DatabaseURL(b)).CombinedOutput()
			if err != nil {
				b.Logf("pgbench %s: %v\n%s", strategy.name, err, out)
				continue
			}
			m := regexp.MustCompile(`tps = ([0-9.]+)`).FindSubmatch(out)
			if m != nil {
				tps, _ := strconv.ParseFloat(string(m[1]), 64)
				pgbenchTPS[strategy.name] = tps
			}
			// Free the seats again for the next strategy.
			_, err = testenv.DB(b).Exec(context.Background(), `
				UPDATE seats SET status = 'AVAILABLE', reservation_id = NULL WHERE event_id = 'evt_bench_pg';
				UPDATE reservation_items SET live = false WHERE event_id = 'evt_bench_pg';
				UPDATE reservations SET status = 'CANCELLED', ended_at = now() WHERE event_id = 'evt_bench_pg' AND status = 'PENDING_PAYMENT'`)
			require.NoError(b, err)
		}
	})
}

// reportPgbench adds the ceiling measured in the same run (after ResetTimer,
// which deletes earlier metrics).
func reportPgbench(b *testing.B) {
	for strategy, tps := range pgbenchTPS {
		b.ReportMetric(tps, "pgbench_"+strategy+"_tps")
	}
}

// benchHolds drives POST /v1/holds from `clients` goroutines, each hold by a
// fresh account on seats chosen by pick, and reports holds/s, p50 and p99.
func benchHolds(b *testing.B, clients int, pick func(r *rand.Rand) []string, s *stack) {
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var created, conflicts atomic.Int64
	tokens := make([]string, b.N)
	for i := range tokens {
		tokens[i] = s.fan(fmt.Sprintf("b%d-%d", time.Now().UnixNano(), i))
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				resp := s.hold(tokens[i], map[string]any{"seat_ids": pick(r)})
				lat[c] = append(lat[c], time.Since(t0))
				switch resp.Status {
				case http.StatusCreated:
					created.Add(1)
				case http.StatusConflict:
					conflicts.Add(1)
				default:
					b.Errorf("unexpected %d: %s", resp.Status, resp.Raw)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(len(all))/elapsed.Seconds(), "holds/s")
		b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99_ms")
		b.ReportMetric(float64(conflicts.Load())/float64(len(all)), "conflict_frac")
	}
	reportPgbench(b)
	s.requireAuditClean()
}

// BenchmarkHoldHTTPRandomSeats: two adjacent random seats of a 50,000-seat
// event per hold, 16 concurrent clients, full HTTP path (auth, rate limit,
// idempotency lookup, pre-check, Redis hint, transaction).
func BenchmarkHoldHTTPRandomSeats(b *testing.B) {
	runPgbench(b)
	s := newStackB(b, "evt_bench_http"+testenv.RandomSuffix())
	benchHolds(b, 16, func(r *rand.Rand) []string {
		sec := fmt.Sprintf("sec_%s%d", s.eventID[4:], r.IntN(10))
		row, n := r.IntN(50), 1+r.IntN(99)
		return []string{demo.SeatID(sec, row, n), demo.SeatID(sec, row, n+1)}
	}, s)
}

// BenchmarkHoldHTTPContended: 100 clients over the same 200 seats.
func BenchmarkHoldHTTPContended(b *testing.B) {
	runPgbench(b)
	s := newStackB(b, "evt_bench_hot"+testenv.RandomSuffix())
	benchHolds(b, 100, func(r *rand.Rand) []string {
		row, n := r.IntN(2), 1+r.IntN(99)
		return []string{demo.SeatID("sec_"+s.eventID[4:]+"0", row, n)}
	}, s)
}
