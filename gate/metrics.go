package gate

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the gate's Prometheus metrics. Labels are results and
// reasons only, never ticket, seat or gate IDs.
type Metrics struct {
	scans   prometheus.Counter
	accepts prometheus.Counter
	rejects *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// NewMetrics registers the gate's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		scans: prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_gate_scans_total",
			Help: "Scans answered, accepted or rejected."}),
		accepts: prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_gate_accepts_total",
			Help: "Scans that let a fan in."}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_gate_rejects_total",
			Help: "Scans refused, by reason."}, []string{"reason"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "encore_gate_scan_duration_seconds",
			Help:    "Time to answer a scan, ledger write included.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}}, []string{"result"}),
	}
	for _, r := range Reasons {
		m.rejects.WithLabelValues(r)
	}
	reg.MustRegister(m.scans, m.accepts, m.rejects, m.latency)
	return m
}

func (m *Metrics) observe(r Result, took time.Duration) {
	if m == nil {
		return
	}
	m.scans.Inc()
	if r.Result == Accepted {
		m.accepts.Inc()
	} else {
		m.rejects.WithLabelValues(r.Reason).Inc()
	}
	m.latency.WithLabelValues(r.Result).Observe(took.Seconds())
}
