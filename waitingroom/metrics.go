package waitingroom

import "github.com/prometheus/client_golang/prometheus"

// metrics are the room's Prometheus series: queue depth, admissions per tick,
// active leases against capacity, stale entries dropped, and the time from
// join to admission. Every part of the room shares one *metrics, which
// records nothing until Register fills it in (nor when nil).
type metrics struct {
	on           bool
	queueDepth   *prometheus.GaugeVec
	admitted     *prometheus.CounterVec
	perTick      prometheus.Histogram
	leases       *prometheus.GaugeVec
	capacity     *prometheus.GaugeVec
	stale        *prometheus.CounterVec
	joinToAdmit  prometheus.Histogram
	joinResults  *prometheus.CounterVec
	sockets      prometheus.Gauge
	soldOut      *prometheus.GaugeVec
	tickErrors   prometheus.Counter
	challenges   *prometheus.CounterVec
	limited      *prometheus.CounterVec
	leasesEnded  prometheus.Counter
	admitterRole *prometheus.GaugeVec
}

// Register creates the room's metrics on reg.
func (r *Room) Register(reg prometheus.Registerer) {
	m := metrics{on: true,
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "encore_waitingroom_queue_depth",
			Help: "Fans in line, by event (stale entries not yet dropped included)."}, []string{"event"}),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_waitingroom_admitted_total",
			Help: "Fans admitted into checkout, by event."}, []string{"event"}),
		perTick: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "encore_waitingroom_admitted_per_tick",
			Help: "Fans admitted by one admission tick.", Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}}),
		leases: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "encore_waitingroom_active_leases",
			Help: "Fans inside checkout (active admission leases), by event; compare with encore_waitingroom_capacity."}, []string{"event"}),
		capacity: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "encore_waitingroom_capacity",
			Help: "Admission capacity in force, by event (adaptive mode moves it)."}, []string{"event"}),
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_waitingroom_stale_dropped_total",
			Help: "Silent fans dropped from the line, by event (cleanup plus those skipped at the head)."}, []string{"event"}),
		joinToAdmit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "encore_waitingroom_join_to_admit_seconds",
			Help: "Time from joining the line to admission.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 16)}),
		joinResults: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_waitingroom_joins_total",
			Help: "Join attempts by result."}, []string{"result"}),
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{Name: "encore_waitingroom_websockets",
			Help: "Queued fans connected by WebSocket to this process."}),
		soldOut: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "encore_waitingroom_sold_out",
			Help: "1 while the event is sold out (remaining inventory minus active holds is zero)."}, []string{"event"}),
		tickErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_waitingroom_tick_errors_total",
			Help: "Admission ticks that failed (nobody was admitted)."}),
		challenges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_waitingroom_challenges_total",
			Help: "Proof-of-work challenges by outcome."}, []string{"outcome"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_waitingroom_rate_limited_total",
			Help: "Requests refused by a waiting-room rate limit, by limit."}, []string{"limit"}),
		leasesEnded: prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_waitingroom_leases_settled_total",
			Help: "Leases ended early because the fan's hold ended."}),
		admitterRole: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "encore_waitingroom_admitter_leader",
			Help: "1 while this process is the elected admitter of the event."}, []string{"event"}),
	}
	reg.MustRegister(m.queueDepth, m.admitted, m.perTick, m.leases, m.capacity, m.stale, m.joinToAdmit,
		m.joinResults, m.sockets, m.soldOut, m.tickErrors, m.challenges, m.limited, m.leasesEnded, m.admitterRole)
	*r.m = m
}

// off reports whether m records nothing (not registered).
func (m *metrics) off() bool { return m == nil || !m.on }

func (m *metrics) joins(result string) {
	if !m.off() {
		m.joinResults.WithLabelValues(result).Inc()
	}
}

func (m *metrics) depth(event string, n int64) {
	if !m.off() {
		m.queueDepth.WithLabelValues(event).Set(float64(n))
	}
}

func (m *metrics) tick(event string, res TickResult, capacity int) {
	if m.off() {
		return
	}
	m.queueDepth.WithLabelValues(event).Set(float64(res.Depth))
	m.leases.WithLabelValues(event).Set(float64(res.Active))
	m.capacity.WithLabelValues(event).Set(float64(capacity))
	m.stale.WithLabelValues(event).Add(float64(res.StaleDropped + res.StaleSkipped))
	m.admitted.WithLabelValues(event).Add(float64(len(res.Admitted)))
	m.perTick.Observe(float64(len(res.Admitted)))
	sold := 0.0
	if res.SoldOut {
		sold = 1
	}
	m.soldOut.WithLabelValues(event).Set(sold)
	for _, a := range res.Admitted {
		m.joinToAdmit.Observe(max(res.At.Sub(a.JoinedAt), 0).Seconds())
	}
}

func (m *metrics) leader(event string, yes bool) {
	if m.off() {
		return
	}
	v := 0.0
	if yes {
		v = 1
	}
	m.admitterRole.WithLabelValues(event).Set(v)
}

func (m *metrics) tickError() {
	if !m.off() {
		m.tickErrors.Inc()
	}
}

func (m *metrics) challenge(outcome string) {
	if !m.off() {
		m.challenges.WithLabelValues(outcome).Inc()
	}
}

func (m *metrics) limit(name string) {
	if !m.off() {
		m.limited.WithLabelValues(name).Inc()
	}
}

func (m *metrics) socket(delta float64) {
	if !m.off() {
		m.sockets.Add(delta)
	}
}

func (m *metrics) settled(n int64) {
	if !m.off() {
		m.leasesEnded.Add(float64(n))
	}
}
