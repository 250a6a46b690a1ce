package topology_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/dev/topology"
)

// BenchmarkBookingsAcrossProcesses measures paid bookings per second in the
// deployed topology (encore temporal, two encore api processes behind the
// balancer, one or two encore worker processes, PostgreSQL with fsync on),
// beside the trivial-workflow ceiling of that Temporal process in the same
// run. The load is the black-box booking benchmark of the system package
// (BenchmarkBookingsThroughARunningStack: a fresh fan per booking, a hold of
// one seat, a checkout with a card of its own, polling until PAID), run
// against the balancer with ENCORE_BENCH_FANS fans (default 32) and
// ENCORE_BENCH_BOOKINGS bookings (default 300). Run with -benchtime 1x.
func BenchmarkBookingsAcrossProcesses(b *testing.B) {
	bookings := testenv.IntFromEnv(b, "ENCORE_BENCH_BOOKINGS", 300)
	fans := testenv.IntFromEnv(b, "ENCORE_BENCH_FANS", 32)
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for range b.N {
				c := startCluster(b, topology.Options{APIs: 2, Workers: workers, Durable: true,
					Env: map[string]string{
						// Every fan of the load comes from 127.0.0.1.
						"ENCORE_ROOM_JOIN_IP_PER_MINUTE": "10000000", "ENCORE_HOLD_RATE_PER_MINUTE": "100000",
					}})
				s := newSale(b, openPool(b, c.DatabaseURL), 2*bookings/40+10, 40, false)
				out := runSystemBenchmark(b, "BookingsThroughARunningStack", bookings, map[string]string{
					"ENCORE_BENCH_URL": c.BalancerURL, "ENCORE_BENCH_PSP": strings.TrimPrefix(c.PSPURL, "http://"),
					"ENCORE_BENCH_TEMPORAL": c.TemporalAddr, "ENCORE_BENCH_EVENT": s.id,
					"ENCORE_BENCH_FANS": strconv.Itoa(fans),
				})
				for _, unit := range []string{"bookings/s", "trivial_wf/s", "fraction_of_ceiling", "hold_to_paid_p50_ms",
					"hold_to_paid_p99_ms", "failures"} {
					if v, ok := out[unit]; ok {
						b.ReportMetric(v, unit)
					}
				}
				c.Close()
			}
		})
	}
}

// runSystemBenchmark runs one of the system package's black-box benchmarks
// against a running topology and returns its reported metrics by unit.
func runSystemBenchmark(b *testing.B, name string, n int, env map[string]string) map[string]float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^Benchmark"+name+"$",
		"-benchtime", strconv.Itoa(n)+"x", "./system")
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(b, cmd.Run(), out.String())
	b.Log(out.String())
	metrics := map[string]float64{}
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "Benchmark"+name) {
			continue
		}
		f := strings.Fields(line)
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				metrics[f[i+1]] = v
			}
		}
	}
	require.NotEmpty(b, metrics, "no result line in:\n%s", out.String())
	return metrics
}
