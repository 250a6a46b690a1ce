package gate_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
)

// The gate's ceiling beside SQLite's own: BenchmarkRawInsert is the bare
// INSERT into the entries table with the gate's connection settings (WAL,
// the synchronous level, busy timeout, one writer connection);
// BenchmarkGateScan is a whole accepted scan in process (parse, one read,
// open the sealed secret, HMAC, the INSERT); BenchmarkGateScanHTTP adds JSON
// over loopback HTTP; BenchmarkGateScanP99TwentyScanners is the latency that
// 20 scanners at once see. Run them together, on one core for the one-core
// figure:
//
//	GOMAXPROCS=1 go test -run '^$' -bench . -benchtime 20000x ./gate/
var syncLevels = []string{"FULL", "NORMAL"}

func BenchmarkRawInsert(b *testing.B) {
	for _, level := range syncLevels {
		b.Run("sync="+level, func(b *testing.B) {
			keys := devKeys(b)
			path := filepath.Join(b.TempDir(), "raw.db")
			st, err := gate.OpenStore(path, keys.Encryption, gate.StoreOptions{Synchronous: level}) // creates the schema
			if err != nil {
				b.Fatal(err)
			}
			_ = st.Close()
			db, err := sql.Open("sqlite3", gate.DSN(path, gate.StoreOptions{Synchronous: level}))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			var n atomic.Int64
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					if _, err := db.Exec(`INSERT INTO entries (ticket_id, gate_id, entered_at) VALUES (?, ?, ?)`,
						fmt.Sprintf("tkt_raw%016d", i), "bench-1", time.Now().UnixMilli()); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "inserts/s")
		})
	}
}

// benchGate is a gate holding b.N fresh tickets and their current codes.
func benchGate(b *testing.B, level string) (*gate.TestGate, []string) {
	keys := devKeys(b)
	ts := makeTickets(b, b.N, "sec_bench")
	now := time.Now()
	data := sealed(b, keys, manifest.Header{EventID: "evt_bench", Version: now.UnixMicro(), ExpiresAt: now.Add(time.Hour)}, ts)
	// The scanner's clock stands still, so codes stay current however long
	// the run takes.
	g := gate.StartForTest(b, gate.TestOptions{Manifest: data, Keys: &keys, Store: gate.StoreOptions{Synchronous: level},
		Now: func() time.Time { return now }})
	codes := make([]string, len(ts))
	for i, tk := range ts {
		codes[i] = tk.code(now)
	}
	return g, codes
}

func BenchmarkGateScan(b *testing.B) {
	for _, level := range syncLevels {
		b.Run("sync="+level, func(b *testing.B) {
			g, codes := benchGate(b, level)
			var n atomic.Int64
			ctx := context.Background()
			b.SetParallelism(8)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := g.Gate.Scan(ctx, codes[n.Add(1)-1], "bench-1")
					if err != nil || r.Result != gate.Accepted {
						b.Errorf("%+v %v", r, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "scans/s")
		})
	}
}

func BenchmarkGateScanHTTP(b *testing.B) {
	for _, level := range syncLevels {
		b.Run("sync="+level, func(b *testing.B) {
			g, codes := benchGate(b, level)
			c := benchScanner{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
				url: g.URL, token: g.Token, gateID: "bench-1"}
			var n atomic.Int64
			b.SetParallelism(8) // 8 x GOMAXPROCS scanners
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.scan(codes[n.Add(1)-1]); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "scans/s")
		})
	}
}

// BenchmarkGateScanP99TwentyScanners is a gate's door at its busiest: 20
// paired scanners, each with its own device token and connection, scan at
// once as fast as they are answered (every scan a fresh ticket, so every one
// writes), over loopback HTTP. It reports the median and 99th percentile of
// a scan's round trip as a scanner sees it, and the scans per second.
func BenchmarkGateScanP99TwentyScanners(b *testing.B) {
	const scanners = 20
	for _, level := range syncLevels {
		b.Run("sync="+level, func(b *testing.B) {
			g, codes := benchGate(b, level)
			clients := pairBenchScanners(b, g, scanners)
			took := make([]time.Duration, b.N) // by scan, each written by one scanner
			var n atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for _, c := range clients {
				wg.Go(func() {
					for i := n.Add(1) - 1; i < int64(b.N); i = n.Add(1) - 1 {
						t0 := time.Now()
						if err := c.scan(codes[i]); err != nil {
							b.Error(err)
							return
						}
						took[i] = time.Since(t0)
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "scans/s")
			b.ReportMetric(percentileMs(took, 50), "p50-ms")
			b.ReportMetric(percentileMs(took, 99), "p99-ms")
		})
	}
}

// benchScanner posts scans to a gate's HTTP API as one paired device.
type benchScanner struct {
	client             *http.Client
	url, token, gateID string
}

// scan posts one code; an error unless the gate accepted it.
func (s benchScanner) scan(code string) error {
	body := fmt.Appendf(nil, `{"payload":%q,"gate_id":%q}`, code, s.gateID)
	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/scan", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes(), []byte(`"accepted"`)) {
		return fmt.Errorf("scan: %d %s", resp.StatusCode, buf.Bytes())
	}
	return nil
}

// pairBenchScanners serves g's gate on a second loopback server that pairs n
// scanners, a device token each (as ENCORE_GATE_TOKENS lists them), and
// returns them, each with a connection of its own and its own gate ID.
func pairBenchScanners(b *testing.B, g *gate.TestGate, n int) []benchScanner {
	b.Helper()
	out := make([]benchScanner, n)
	list := make([]string, n)
	for i := range out {
		id := fmt.Sprintf("scanner-%02d", i+1)
		out[i] = benchScanner{client: &http.Client{Transport: &http.Transport{}}, token: gate.NewDeviceToken(), gateID: id}
		list[i] = id + ":" + out[i].token
	}
	devices, err := gate.ParseDevices(strings.Join(list, ","))
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer((&gate.Server{Gate: g.Gate, Devices: devices, Mode: gate.ModeLedger}).Handler())
	b.Cleanup(srv.Close)
	for i := range out {
		out[i].url = srv.URL
		b.Cleanup(out[i].client.CloseIdleConnections)
	}
	return out
}

// percentileMs is the p-th percentile (nearest rank) of sorted durations,
// in milliseconds.
func percentileMs(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return float64(sorted[max(i, 0)]) / float64(time.Millisecond)
}
