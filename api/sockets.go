package api

import (
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// SocketCap bounds the WebSockets one process holds open: per client
// address and in all. The queue socket and the live seat-map socket share
// one cap, so a client cannot hold PerIP of each. A socket counts from
// before its upgrade until it closes.
type SocketCap struct {
	perIP, perProcess int
	// retryAfter is the Retry-After of a refusal: sockets live for minutes,
	// so a refused client waits a little before trying again.
	retryAfter time.Duration

	mu    sync.Mutex
	byIP  map[string]int // only addresses with an open socket: at most perProcess entries
	total int

	open    prometheus.Gauge
	refused *prometheus.CounterVec
}

// NewSocketCap caps open sockets at perIP per client address and perProcess
// in all (0: no cap of that kind).
func NewSocketCap(perIP, perProcess int) *SocketCap {
	return &SocketCap{perIP: perIP, perProcess: perProcess, retryAfter: 5 * time.Second, byIP: map[string]int{},
		open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "encore_websockets_open",
			Help: "Queue and live seat-map WebSockets this process holds open (or is opening)."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_websockets_refused_total",
			Help: "WebSocket requests refused 429 at a cap, by cap (ip or process)."}, []string{"cap"}),
	}
}

// Register adds the cap's metrics to reg.
func (c *SocketCap) Register(reg prometheus.Registerer) { reg.MustRegister(c.open, c.refused) }

// Open reports the sockets held open now.
func (c *SocketCap) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// acquire takes a place for ip; refused names the cap that said no.
func (c *SocketCap) acquire(ip string) (release func(), refused string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.perProcess > 0 && c.total >= c.perProcess:
		return nil, "process"
	case c.perIP > 0 && c.byIP[ip] >= c.perIP:
		return nil, "ip"
	}
	c.byIP[ip]++
	c.total++
	c.open.Inc()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.byIP[ip]--; c.byIP[ip] <= 0 {
				delete(c.byIP, ip)
			}
			c.total--
			c.open.Dec()
		})
	}, ""
}

// capSocket runs ahead of a WebSocket route (and of its authentication): at
// a cap it answers 429 before any upgrade; otherwise the place is held
// until the handler returns, which for an upgraded socket is when it closes.
func (s *Server) capSocket(c *gin.Context) {
	if s.Sockets == nil {
		c.Next()
		return
	}
	release, refused := s.Sockets.acquire(clientKey(c.Request))
	if refused != "" {
		s.Sockets.refused.WithLabelValues(refused).Inc()
		detail := "too many open sockets from this address; close one or retry later"
		if refused == "process" {
			detail = "this server holds as many sockets as it can; retry later"
		}
		writeProblem(c, NewProblem(http.StatusTooManyRequests, ProbRateLimited, detail).RetryAfter(s.Sockets.retryAfter))
		return
	}
	defer release()
	c.Next()
}
