package rehearsal

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/encore-tickets/encore/internal/ctxsleep"
)

// monitor samples the sale every second: the rehearsal's own counts, the
// waiting room's depth, capacity, leases and admissions and the process's
// resident memory and goroutines from the admin listener's /metrics, the
// servers' connections and memory (Config.Servers), and whether the event
// page says nothing is left.
func (rn *run) monitor(ctx context.Context, every time.Duration) {
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		rn.rec.sample(rn.sampleNow(ctx, c))
		if !ctxsleep.Sleep(ctx, every) {
			return
		}
	}
}

func (rn *run) sampleNow(ctx context.Context, c *http.Client) sample {
	n := &rn.rec.n
	s := sample{at: rn.rec.since(time.Now()), arrived: n.arrived.Load(), waiting: n.waiting.Load(),
		admitted: n.admitted.Load(), paid: n.paid.Load(), holds: n.holds.Load(),
		depth: math.NaN(), capacity: math.NaN(), leases: math.NaN(), admittedTotal: math.NaN(), rss: math.NaN(),
		goroutines: math.NaN(), pgConns: math.NaN(), redisBytes: math.NaN()}
	if rn.cfg.Admin != "" {
		if m, err := scrape(ctx, c, rn.cfg.Admin+"/metrics", rn.event.ID); err == nil {
			s.depth, s.capacity, s.leases = m.get("encore_waitingroom_queue_depth"), m.get("encore_waitingroom_capacity"), m.get("encore_waitingroom_active_leases")
			s.admittedTotal, s.rss = m.get("encore_waitingroom_admitted_total"), m.get("process_resident_memory_bytes")
			s.soldOut = m.get("encore_waitingroom_sold_out") == 1
			s.goroutines = m.get("go_goroutines")
		}
	}
	for _, admin := range rn.cfg.Admitters {
		if m, err := scrape(ctx, c, admin+"/metrics", rn.event.ID); err == nil && m.get("encore_waitingroom_admitter_leader") == 1 {
			s.capacity, s.leases = m.get("encore_waitingroom_capacity"), m.get("encore_waitingroom_active_leases")
			break
		}
	}
	if rn.cfg.Servers != nil {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if srv, err := rn.cfg.Servers(sctx); err == nil {
			s.pgConns, s.redisBytes = srv.PostgresConnections, srv.RedisMemoryBytes
		}
		cancel()
	}
	// The event page's availability (the browse plane, cached for a second
	// or two): nothing available is sold out, held seats included.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rn.edge.base+"/v1/events/"+rn.event.ID, nil)
	if err == nil {
		if resp, err := c.Do(req); err == nil {
			var ev eventView
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && jsonUnmarshal(body, &ev) == nil && len(ev.Sections) > 0 {
				left := 0
				for _, sec := range ev.Sections {
					left += sec.Available
				}
				s.soldOut = s.soldOut || left == 0
			}
		}
	}
	return s
}

// metrics are the values of one scrape: by metric name, for the event's
// series (label event="<id>") or the unlabelled ones.
type metrics map[string]float64

func (m metrics) get(name string) float64 {
	if v, ok := m[name]; ok {
		return v
	}
	return math.NaN()
}

// scrape reads a Prometheus text exposition and keeps the samples that are
// the event's or carry no label.
func scrape(ctx context.Context, c *http.Client, url, eventID string) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	return parseMetrics(body, eventID), nil
}

// parseMetrics reads the lines `name value` and `name{labels} value`,
// keeping unlabelled samples and those whose labels are exactly
// event="<eventID>".
func parseMetrics(body []byte, eventID string) metrics {
	out := metrics{}
	want := `{event="` + eventID + `"}`
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		name, value := line[:sp], line[sp+1:]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			if name[i:] != want {
				continue
			}
			name = name[:i]
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		out[name] = v
	}
	return out
}
