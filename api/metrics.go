package api

import (
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// EdgeMetrics are the per-route service-level indicators of the edge:
// requests by route, method and status, and their latency. Route is the
// route table's pattern (/v1/holds/:id), never the raw path, so a scan of
// made-up paths cannot grow the series; unmatched paths share one label.
type EdgeMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewEdgeMetrics creates the edge's metrics on reg.
func NewEdgeMetrics(reg prometheus.Registerer) *EdgeMetrics {
	m := &EdgeMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_http_requests_total",
			Help: "Requests the fan API answered, by route pattern, method and status code."}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "encore_http_request_duration_seconds",
			Help:    "Time to answer a request, by route pattern and method (a WebSocket: its whole life).",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}}, []string{"route", "method"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// observe is the first middleware: it sees every answer, problems and
// panics included (the recoverer runs inside it).
func (m *EdgeMetrics) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, c.Request.Method, strconv.Itoa(c.Writer.Status())).Inc()
	m.duration.WithLabelValues(route, c.Request.Method).Observe(time.Since(start).Seconds())
}
