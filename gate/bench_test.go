package gate_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"path/filepath"
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
// over loopback HTTP. Run them together:
//
//	go test -run '^$' -bench . -benchtime 20000x ./gate/
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
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			var n atomic.Int64
			b.SetParallelism(8) // 8 x GOMAXPROCS scanners
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := fmt.Appendf(nil, `{"payload":%q,"gate_id":"bench-1"}`, codes[n.Add(1)-1])
					req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/scan", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+g.Token)
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					var buf bytes.Buffer
					_, _ = buf.ReadFrom(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes(), []byte(`"accepted"`)) {
						b.Errorf("%d %s", resp.StatusCode, buf.Bytes())
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "scans/s")
		})
	}
}
