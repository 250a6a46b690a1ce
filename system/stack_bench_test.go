package system_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkHoldsThroughARunningStack drives POST /v1/holds of a running
// `encore dev` (ENCORE_BENCH_URL, loopback only) as a black-box client: 16
// clients, each hold two random available seats of the event
// (ENCORE_BENCH_EVENT, default the demo night) by a fresh account. It is the
// headline hold figure: the configuration a user runs (PostgreSQL with fsync
// on, Temporal and every plane in one process). Start the stack with
// ENCORE_ROOM_JOIN_IP_PER_MINUTE raised, since every client shares one
// address. Skipped without ENCORE_BENCH_URL.
func BenchmarkHoldsThroughARunningStack(b *testing.B) {
	base := os.Getenv("ENCORE_BENCH_URL")
	if base == "" {
		b.Skip("set ENCORE_BENCH_URL to a running encore dev, e.g. http://127.0.0.1:8080")
	}
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		b.Fatalf("ENCORE_BENCH_URL must be a loopback address, not %s", u.Hostname())
	}
	eventID := os.Getenv("ENCORE_BENCH_EVENT")
	if eventID == "" {
		eventID = "evt_demo_night"
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	call := func(method, path, token string, body any, out any) int {
		var rd *bytes.Reader
		if body != nil {
			raw, _ := json.Marshal(body)
			rd = bytes.NewReader(raw)
		} else {
			rd = bytes.NewReader(nil)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			b.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return 0
		}
		defer resp.Body.Close()
		if out != nil {
			_ = json.NewDecoder(resp.Body).Decode(out)
		}
		return resp.StatusCode
	}

	var ev struct {
		Sections []struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		} `json:"sections"`
	}
	if st := call(http.MethodGet, "/v1/events/"+eventID, "", nil, &ev); st != http.StatusOK {
		b.Fatalf("event %s: %d", eventID, st)
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
		call(http.MethodGet, "/v1/events/"+eventID+"/sections/"+sec.ID+"/seats", "", nil, &m)
		for _, s := range m.Seats {
			if s.Status == "AVAILABLE" {
				seats = append(seats, s.ID)
			}
		}
	}
	if len(seats) < 4*b.N {
		b.Fatalf("%d available seats; run with fewer holds (-benchtime Nx) or a fresh stack", len(seats))
	}
	run := fmt.Sprintf("bench%d", time.Now().UnixNano())
	tokens := make([]string, b.N)
	for i := range tokens {
		var t struct{ Token string }
		if st := call(http.MethodPost, "/v1/sessions", "", map[string]string{"user_id": fmt.Sprintf("%s_%d", run, i), "device_id": "d" + run}, &t); st != http.StatusCreated {
			b.Fatalf("session: %d", st)
		}
		tokens[i] = t.Token
	}

	const clients = 16
	var next, created, conflicts, other atomic.Int64
	latencies := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
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
			}
		}()
	}
	wg.Wait()
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
}
