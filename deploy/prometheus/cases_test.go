package prometheus

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/rules"
	"github.com/stretchr/testify/require"
)

const (
	m = time.Minute
	h = time.Hour
)

// sloSpec describes one SLO of recording.yml (its slo label) to the tests.
type sloSpec struct {
	slo          string
	budget       float64 // 1 - objective
	page, ticket string  // its burn-rate alerts
	// traffic renders the SLI's series with good(t) and bad(t) events in
	// the step that ends at t.
	traffic func(g gen, good, bad func(time.Duration) float64) []string
	// bad are the label sets of the burn rates that see bad/(good+bad);
	// zero, those of healthy traffic next to it, which stay at 0.
	bad, zero []string
	// labels a firing burn alert carries.
	labels map[string]string
}

// obs observes good(t) events at goodAt and bad(t) at badAt.
func obs(goodAt float64, good func(time.Duration) float64, badAt float64, bad func(time.Duration) float64) func(time.Duration) map[float64]float64 {
	return func(t time.Duration) map[float64]float64 {
		o := map[float64]float64{goodAt: good(t)}
		o[badAt] += bad(t)
		return o
	}
}

func sum(a, b func(time.Duration) float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 { return a(t) + b(t) }
}

const (
	holdsRoute    = `{route="/v1/holds"}`
	checkoutRoute = `{route="/v1/holds/:id/checkout"}`
	eventsRoute   = `{route="/v1/events"}`
)

var sloSpecs = []sloSpec{{
	slo: "http-availability", budget: 0.001,
	page: "EncoreRouteErrorBudgetBurn", ticket: "EncoreRouteErrorBudgetSlowBurn",
	traffic: func(g gen, good, bad func(time.Duration) float64) []string {
		return []string{
			g.counter(`encore_http_requests_total{route="/v1/holds",method="POST",code="201"}`, scaled(good, 0.8)),
			g.counter(`encore_http_requests_total{route="/v1/holds",method="POST",code="409"}`, scaled(good, 0.1)),
			// Shedding is counted apart: it spends no availability budget.
			g.counter(`encore_http_requests_total{route="/v1/holds",method="POST",code="503"}`, scaled(good, 0.1)),
			g.counter(`encore_http_requests_total{route="/v1/holds",method="POST",code="500"}`, bad),
			g.counter(`encore_http_requests_total{route="/v1/events",method="GET",code="200"}`, sum(good, bad)),
		}
	},
	bad: []string{holdsRoute}, zero: []string{eventsRoute},
	labels: map[string]string{"slo": "http-availability", "route": "/v1/holds"},
}, {
	slo: "http-latency", budget: 0.01,
	page: "EncoreRouteLatencyBudgetBurn", ticket: "EncoreRouteLatencyBudgetSlowBurn",
	traffic: func(g gen, good, bad func(time.Duration) float64) []string {
		const d = "encore_http_request_duration_seconds"
		return join(
			g.histogram(d, `route="/v1/holds",method="POST"`, httpBuckets, obs(0.1, good, 1, bad)),
			// Checkout waits on the saga: 3 s is within its 5 s, 8 s is not.
			g.histogram(d, `route="/v1/holds/:id/checkout",method="POST"`, httpBuckets, obs(3, good, 8, bad)),
			g.histogram(d, `route="/v1/events",method="GET"`, httpBuckets, obs(0.02, good, 0.02, bad)),
			// A socket lasts as long as the fan watches; a staff import may
			// take a minute. Neither is counted.
			g.histogram(d, `route="/v1/events/:event_id/live",method="GET"`, httpBuckets, obs(60, good, 60, bad)),
			g.histogram(d, `route="/v1/admin/venues",method="POST"`, httpBuckets, obs(30, good, 30, bad)),
			// The edge counts every request it times; the alerts' traffic
			// floor reads the count.
			[]string{
				g.counter(`encore_http_requests_total{route="/v1/holds",method="POST",code="201"}`, sum(good, bad)),
				g.counter(`encore_http_requests_total{route="/v1/holds/:id/checkout",method="POST",code="200"}`, sum(good, bad)),
				g.counter(`encore_http_requests_total{route="/v1/events",method="GET",code="200"}`, sum(good, bad)),
			},
		)
	},
	bad: []string{holdsRoute, checkoutRoute}, zero: []string{eventsRoute},
	labels: map[string]string{"slo": "http-latency", "route": "/v1/holds"},
}, {
	slo: "hold-errors", budget: 0.001,
	page: "EncoreHoldErrorBudgetBurn", ticket: "EncoreHoldErrorBudgetSlowBurn",
	traffic: func(g gen, good, bad func(time.Duration) float64) []string {
		return []string{
			g.counter(`encore_holds_total{result="held"}`, scaled(good, 0.7)),
			// A seat someone else took, a rate limit, a missing pass: the
			// system working, not failing.
			g.counter(`encore_holds_total{result="seat_unavailable"}`, scaled(good, 0.2)),
			g.counter(`encore_holds_total{result="rate_limited"}`, scaled(good, 0.05)),
			g.counter(`encore_holds_total{result="queue_required"}`, scaled(good, 0.05)),
			g.counter(`encore_holds_total{result="error"}`, bad),
		}
	},
	bad: []string{"{}"}, labels: map[string]string{"slo": "hold-errors"},
}, {
	slo: "hold-latency", budget: 0.01,
	page: "EncoreHoldLatencyBudgetBurn", ticket: "EncoreHoldLatencyBudgetSlowBurn",
	traffic: func(g gen, good, bad func(time.Duration) float64) []string {
		return g.histogram("encore_hold_duration_seconds", "", holdBuckets, obs(0.008, good, 0.5, bad))
	},
	bad: []string{"{}"}, labels: map[string]string{"slo": "hold-latency"},
}, {
	slo: "queue-wait", budget: 0.01,
	page: "EncoreQueueWaitBudgetBurn", ticket: "EncoreQueueWaitBudgetSlowBurn",
	traffic: func(g gen, good, bad func(time.Duration) float64) []string {
		return g.histogram("encore_waitingroom_join_to_admit_seconds", "", queueBuckets, obs(60, good, 3000, bad))
	},
	bad: []string{"{}"}, labels: map[string]string{"slo": "queue-wait"},
}, {
	slo: "checkout-to-paid", budget: 0.01,
	page: "EncoreCheckoutToPaidBudgetBurn", ticket: "EncoreCheckoutToPaidBudgetSlowBurn",
	traffic: func(g gen, good, bad func(time.Duration) float64) []string {
		return g.histogram("encore_checkout_to_paid_seconds", "", paidBuckets, obs(3, good, 100, bad))
	},
	bad: []string{"{}"}, labels: map[string]string{"slo": "checkout-to-paid"},
}}

func specFor(slo string) (sloSpec, bool) {
	for _, s := range sloSpecs {
		if s.slo == slo {
			return s, true
		}
	}
	return sloSpec{}, false
}

// increaseRatio is what a ratio of two rate()s over the window (end-w, end]
// computes when both series share their sample times and start above zero:
// the bad increase over the whole one between the window's first and last
// samples.
func increaseRatio(step, end, w time.Duration, good, bad func(time.Duration) float64) float64 {
	var b, all float64
	first := true
	for t := time.Duration(0); t <= end; t += step {
		if t <= end-w {
			continue
		}
		if first { // the baseline the increase is counted from
			first = false
			continue
		}
		b += bad(t)
		all += good(t) + bad(t)
	}
	return b / all
}

// burnRateCases test every slo:burn_rate rule on one scenario whose bad
// share climbs in steps, so each window sees a mix of its own: a rule that
// reads the wrong window, metric, bucket or budget computes another value.
// Histograms are loaded with le as Prometheus 3 stores it and as
// client_golang exposes it (Prometheus 2).
func burnRateCases(t *testing.T) []recordingCase {
	span := 6*h + 30*m
	share := func(t time.Duration) float64 {
		switch {
		case t <= 5*h:
			return 0.002
		case t <= 6*h:
			return 0.02
		case t <= 6*h+25*m:
			return 0.1
		}
		return 0.4
	}
	bad := func(t time.Duration) float64 { return 100 * share(t) }
	good := func(t time.Duration) float64 { return 100 - bad(t) }
	var cases []recordingCase
	for _, r := range newEnv(t, "load 1m\n  up 1\n").rules(t) {
		rr, ok := r.(*rules.RecordingRule)
		if !ok || !strings.HasPrefix(rr.Name(), "slo:burn_rate:") {
			continue
		}
		w, err := model.ParseDuration(strings.TrimPrefix(rr.Name(), "slo:burn_rate:"))
		require.NoError(t, err, "%s names its window", rr.Name())
		spec, ok := specFor(rr.Labels().Get("slo"))
		require.True(t, ok, "%s: the tests describe the SLO %q", ruleID(rr), rr.Labels().Get("slo"))
		ratio := increaseRatio(sampleStep, span, time.Duration(w), good, bad)
		want := map[string]float64{}
		for _, k := range spec.bad {
			want[k] = ratio / spec.budget
		}
		for _, k := range spec.zero {
			want[k] = 0
		}
		for _, le := range []struct {
			name string
			f    func(float64) string
		}{{"Prometheus 3's le", promLE}, {"client_golang's le", clientLE}} {
			cases = append(cases, recordingCase{
				rule: ruleID(rr), span: span, want: want,
				name: fmt.Sprintf("is the window's bad share over the budget with %s", le.name),
				series: func(g gen) []string {
					g.le = le.f
					return spec.traffic(g, good, bad)
				},
			})
		}
	}
	return cases
}

func recordingCases() []recordingCase {
	httpMix := func(g gen) []string {
		return []string{
			g.counter(`encore_http_requests_total{route="/v1/holds",method="POST",code="201"}`, each(8)),
			g.counter(`encore_http_requests_total{route="/v1/holds",method="POST",code="409"}`, each(2)),
			g.counter(`encore_http_requests_total{route="/v1/holds",method="POST",code="500"}`, each(1)),
			g.counter(`encore_http_requests_total{route="/v1/holds",method="POST",code="503"}`, each(1)),
			g.counter(`encore_http_requests_total{route="/v1/events",method="GET",code="200"}`, each(3)),
		}
	}
	at := func(v float64) func(time.Duration) map[float64]float64 {
		return func(time.Duration) map[float64]float64 { return map[float64]float64{v: 4} }
	}
	return []recordingCase{{
		rule: "route:encore_http_requests:rate5m", name: "is each route's requests a second",
		span: 10 * m, series: httpMix, want: map[string]float64{holdsRoute: 12.0 / 15, eventsRoute: 3.0 / 15},
	}, {
		rule: "route:encore_http_requests:rate1h", name: "is each route's requests a second over the hour",
		span: 70 * m, series: httpMix, want: map[string]float64{holdsRoute: 12.0 / 15, eventsRoute: 3.0 / 15},
	}, {
		rule: "route:encore_http_requests_errors:ratio_rate5m", name: "is each route's share of 5xx other than 503",
		span: 10 * m, series: httpMix, want: map[string]float64{holdsRoute: 1.0 / 12, eventsRoute: 0},
	}, {
		rule: "route:encore_http_requests_shed:ratio_rate5m", name: "is each route's share of 503",
		span: 10 * m, series: httpMix, want: map[string]float64{holdsRoute: 1.0 / 12, eventsRoute: 0},
	}, {
		rule: "route:encore_http_request_duration_seconds:p99_5m", name: "is each route's p99 with sockets left out",
		span: 10 * m, series: func(g gen) []string {
			const d = "encore_http_request_duration_seconds"
			return join(
				g.histogram(d, `route="/v1/holds",method="POST"`, httpBuckets, at(0.2)),
				g.histogram(d, `route="/v1/events",method="GET"`, httpBuckets, at(0.02)),
				g.histogram(d, `route="/v1/events/:event_id/queue/ws",method="GET"`, httpBuckets, at(60)),
			)
		},
		// histogram_quantile interpolates within the bucket: 0.1 + 0.15 * 0.99.
		want: map[string]float64{holdsRoute: 0.2485, eventsRoute: 0.01 + 0.015*0.99},
	}, {
		rule: "result:encore_holds:rate5m", name: "is each result's holds a second",
		span: 10 * m, series: func(g gen) []string {
			return []string{
				g.counter(`encore_holds_total{result="held"}`, each(4)),
				g.counter(`encore_holds_total{result="seat_unavailable"}`, each(2)),
				g.counter(`encore_holds_total{result="error"}`, each(1)),
			}
		},
		want: map[string]float64{`{result="held"}`: 4.0 / 15, `{result="seat_unavailable"}`: 2.0 / 15, `{result="error"}`: 1.0 / 15},
	},
		quantileCase("encore_hold_duration_seconds", "p50", "is the median hold time", holdBuckets, at(0.02), 0.016+0.016*0.5),
		quantileCase("encore_hold_duration_seconds", "p99", "is the 99th percentile hold time", holdBuckets, at(0.02), 0.016+0.016*0.99),
		quantileCase("encore_waitingroom_join_to_admit_seconds", "p50", "is the median wait from join to admission", queueBuckets, at(100), 64+64*0.5),
		quantileCase("encore_waitingroom_join_to_admit_seconds", "p99", "is the 99th percentile wait from join to admission", queueBuckets, at(100), 64+64*0.99),
		{
			rule: "event:encore_waitingroom_admitted:rate1m", name: "is each event's admissions a second summed over processes",
			span: 10 * m, series: func(g gen) []string {
				return []string{
					g.counter(`encore_waitingroom_admitted_total{event="e1",instance="api-1"}`, each(3)),
					g.counter(`encore_waitingroom_admitted_total{event="e1",instance="api-2"}`, each(3)),
					g.counter(`encore_waitingroom_admitted_total{event="e2",instance="api-1"}`, each(1.5)),
				}
			},
			want: map[string]float64{`{event="e1"}`: 0.4, `{event="e2"}`: 0.1},
		}, {
			rule: "event:encore_waitingroom_lease_utilisation:ratio", name: "is each event's leases over its capacity, however many processes report them",
			span: 10 * m, series: func(g gen) []string {
				return []string{
					g.gauge(`encore_waitingroom_active_leases{event="e1",instance="api-1"}`, val(30)),
					g.gauge(`encore_waitingroom_active_leases{event="e1",instance="api-2"}`, val(30)),
					g.gauge(`encore_waitingroom_capacity{event="e1",instance="api-1"}`, val(40)),
					g.gauge(`encore_waitingroom_capacity{event="e1",instance="api-2"}`, val(40)),
				}
			},
			want: map[string]float64{`{event="e1"}`: 0.75},
		}, {
			rule: ":encore_bookings_paid:rate1m", name: "is the bookings that reach PAID a second",
			span: 10 * m, series: func(g gen) []string {
				return g.histogram("encore_checkout_to_paid_seconds", "", paidBuckets, at(3))
			},
			want: map[string]float64{"{}": 4.0 / 15},
		},
		quantileCase("encore_checkout_to_paid_seconds", "p99", "is the 99th percentile time from checkout to PAID", paidBuckets, at(3), 2+2*0.99),
		quantileCase("encore_webhook_lag_seconds", "p99", "is the 99th percentile webhook lag", webhookBuckets, at(1), 0.8+0.8*0.99),
	}
}

// quantileCase is the case of a percentile rule, ":<metric>:<p>_5m", over
// one histogram with the observations in buckets: the rule must read want,
// PromQL's interpolation inside the observations' bucket.
func quantileCase(metric, p, name string, buckets []float64, observed func(time.Duration) map[float64]float64, want float64) recordingCase {
	return recordingCase{
		rule: ":" + metric + ":" + p + "_5m", name: name, span: 10 * m,
		series: func(g gen) []string { return g.histogram(metric, "", buckets, observed) },
		want:   map[string]float64{"{}": want},
	}
}

// val is a constant gauge.
func val(v float64) func(time.Duration) float64 { return func(time.Duration) float64 { return v } }

// seconds is a gauge worth the time since the epoch: a timestamp of now.
func seconds(t time.Duration) float64 { return t.Seconds() }

// sloAlertCases are the burn-rate alerts' scenarios, the same for every SLO:
// bad events at a steady multiple of the budget (100 events a step).
func sloAlertCases() []alertCase {
	var cases []alertCase
	for _, s := range sloSpecs {
		steady := func(multiple float64) func(g gen) []string {
			return func(g gen) []string {
				bad := 100 * multiple * s.budget
				return s.traffic(g, each(100-bad), each(bad))
			}
		}
		burst := func(g gen) []string {
			bad := func(t time.Duration) float64 {
				if t <= 10*m {
					return 100 * 30 * s.budget
				}
				return 0
			}
			return s.traffic(g, func(t time.Duration) float64 { return 100 - bad(t) }, bad)
		}
		cases = append(cases,
			alertCase{alert: s.page, name: "pages when the budget burns at 20 times its rate", span: 30 * m, series: steady(20), want: fires, labels: s.labels},
			alertCase{alert: s.page, name: "pages at 8 times its rate through the hour window", span: 30 * m, series: steady(8), want: fires, labels: s.labels},
			alertCase{alert: s.page, name: "does not page at twice its rate", span: 2 * h, series: steady(2), want: quiet},
			alertCase{alert: s.page, name: "stops paging minutes after a ten-minute burst ends", span: 16 * m, series: burst, want: resolves},
			alertCase{alert: s.ticket, name: "opens a ticket at twice its rate", span: time.Hour, series: steady(2), want: fires, labels: s.labels},
			alertCase{alert: s.ticket, name: "stays quiet at half its rate for seven hours", span: 7 * h, series: steady(0.5), want: quiet},
		)
		if s.labels["route"] != "" {
			sparse := func(g gen) []string {
				bad := func(t time.Duration) float64 {
					if t > 0 && t%(10*m) == 0 {
						return 1
					}
					return 0
				}
				return s.traffic(g, val(0), bad)
			}
			cases = append(cases, alertCase{alert: s.page, name: "does not page for a route whose only request every ten minutes fails", span: 2 * h, series: sparse, want: quiet})
		}
	}
	return cases
}

func alertCases() []alertCase {
	return append(sloAlertCases(), thresholdAlertCases()...)
}

func thresholdAlertCases() []alertCase {
	gauges := func(series map[string]func(time.Duration) float64) func(g gen) []string {
		return func(g gen) []string {
			var out []string
			for s, f := range series {
				out = append(out, g.gauge(s, f))
			}
			return out
		}
	}
	type fn = func(time.Duration) float64
	nothing := gauges(map[string]fn{"up": val(1)})
	kinds := func(orphans float64) func(g gen) []string {
		return func(g gen) []string {
			out := []string{g.counter(`encore_reconcile_repairs_total{kind="undelivered_webhook"}`, each(1))}
			for _, k := range []string{"leaked_authorisation", "orphan_capture", "undelivered_webhook", "other"} {
				v := 0.0
				if k == "orphan_capture" {
					v = orphans
				}
				out = append(out, g.gauge(fmt.Sprintf(`encore_reconcile_mismatches{kind=%q}`, k), val(v)))
			}
			return out
		}
	}
	room := func(depth, leases, capacity, soldOut float64, admitted func(time.Duration) float64) func(g gen) []string {
		return func(g gen) []string {
			out := []string{
				g.gauge(`encore_waitingroom_queue_depth{event="e1"}`, val(depth)),
				g.gauge(`encore_waitingroom_active_leases{event="e1"}`, val(leases)),
				g.gauge(`encore_waitingroom_capacity{event="e1"}`, val(capacity)),
				g.gauge(`encore_waitingroom_sold_out{event="e1"}`, val(soldOut)),
			}
			if admitted != nil {
				out = append(out, g.counter(`encore_waitingroom_admitted_total{event="e1"}`, admitted))
			}
			return out
		}
	}
	shedding := func(share float64) func(g gen) []string {
		return func(g gen) []string {
			return []string{
				g.counter(`encore_http_requests_total{route="/v1/holds/:id/checkout",method="POST",code="200"}`, each(100*(1-share))),
				g.counter(`encore_http_requests_total{route="/v1/holds/:id/checkout",method="POST",code="503"}`, each(100*share)),
			}
		}
	}
	webhooks := func(lag float64) func(g gen) []string {
		return func(g gen) []string {
			return g.histogram("encore_webhook_lag_seconds", "", webhookBuckets,
				func(time.Duration) map[float64]float64 { return map[float64]float64{lag: 2} })
		}
	}
	// every is a last-run timestamp for a job that runs every period.
	every := func(period time.Duration) fn {
		return func(t time.Duration) float64 { return (t - t%period).Seconds() + 1 }
	}
	return []alertCase{
		{alert: "EncoreDoubleSale", name: "pages when the audit finds a seat sold twice", span: 5 * m,
			series: gauges(map[string]fn{`encore_audit_violations{rule="double_sale"}`: val(1)}), want: fires,
			labels: map[string]string{"rule": "double_sale"}},
		{alert: "EncoreDoubleSale", name: "stays quiet when other rules are broken but no seat is sold twice", span: 30 * m,
			series: gauges(map[string]fn{`encore_audit_violations{rule="double_sale"}`: val(0), `encore_audit_violations{rule="allotment"}`: val(3)}), want: quiet},

		{alert: "EncoreAuditViolation", name: "pages when the audit finds a room-night past its allotment", span: 5 * m,
			series: gauges(map[string]fn{`encore_audit_violations{rule="double_sale"}`: val(0), `encore_audit_violations{rule="allotment"}`: val(2)}), want: fires,
			labels: map[string]string{"rule": "allotment"}},
		{alert: "EncoreAuditViolation", name: "leaves a double sale to its own alert", span: 30 * m,
			series: gauges(map[string]fn{`encore_audit_violations{rule="double_sale"}`: val(1), `encore_audit_violations{rule="allotment"}`: val(0)}), want: quiet},

		{alert: "EncorePaidBookingWithoutTickets", name: "pages when a PAID booking has no tickets", span: 5 * m,
			series: gauges(map[string]fn{`encore_audit_paid_without_tickets`: val(2)}), want: fires},
		{alert: "EncorePaidBookingWithoutTickets", name: "stays quiet when every PAID booking has its tickets", span: 30 * m,
			series: gauges(map[string]fn{`encore_audit_paid_without_tickets`: val(0)}), want: quiet},

		{alert: "EncoreReconciliationMismatch", name: "pages on an orphan capture", span: 5 * m,
			series: kinds(1), want: fires, labels: map[string]string{"kind": "orphan_capture"}},
		{alert: "EncoreReconciliationMismatch", name: "stays quiet when every mismatch was repaired", span: 30 * m,
			series: kinds(0), want: quiet},

		{alert: "EncoreWebhookConflict", name: "pages when an event ID comes back with other content", span: 12 * m,
			series: func(g gen) []string {
				return []string{g.counter("encore_webhook_conflicts_total", func(t time.Duration) float64 {
					if t == 10*m {
						return 1
					}
					return 0
				})}
			}, want: fires},
		{alert: "EncoreWebhookConflict", name: "stays quiet while no event ID is reused", span: h,
			series: func(g gen) []string { return []string{g.counter("encore_webhook_conflicts_total", each(0))} }, want: quiet},

		{alert: "EncoreOutboxStale", name: "pages when the oldest unpublished row ages past 30 seconds", span: 12 * m,
			series: gauges(map[string]fn{
				`encore_outbox_oldest_unpublished_age_seconds{instance="worker-1"}`: func(t time.Duration) float64 { return max(0, (t - 5*m).Seconds()) },
				// A process without the relay lease reports nothing waiting.
				`encore_outbox_oldest_unpublished_age_seconds{instance="api-1"}`: val(0),
			}), want: fires},
		{alert: "EncoreOutboxStale", name: "stays quiet while rows publish within a second", span: h,
			series: gauges(map[string]fn{`encore_outbox_oldest_unpublished_age_seconds`: val(0.4)}), want: quiet},

		{alert: "EncoreSagaStuck", name: "pages when a booking stays open past 30 minutes", span: 40 * m,
			series: gauges(map[string]fn{`encore_saga_oldest_open_age_seconds`: seconds}), want: fires},
		{alert: "EncoreSagaStuck", name: "stays quiet while bookings end within their 15-minute hold", span: 2 * h,
			series: gauges(map[string]fn{`encore_saga_oldest_open_age_seconds`: func(t time.Duration) float64 { return (t % (15 * m)).Seconds() }}), want: quiet},

		{alert: "EncoreWebhookLagHigh", name: "pages when payment events arrive a minute late", span: 15 * m,
			series: webhooks(60), want: fires},
		{alert: "EncoreWebhookLagHigh", name: "stays quiet while payment events arrive within a second", span: h,
			series: webhooks(1), want: quiet},

		{alert: "EncoreAdmissionStalled", name: "pages when fans queue, leases are free and nobody was ever admitted", span: 10 * m,
			series: room(500, 10, 100, 0, nil), want: fires, labels: map[string]string{"event": "e1"}},
		{alert: "EncoreAdmissionStalled", name: "pages when admissions stop while fans queue and leases are free", span: 20 * m,
			series: room(500, 10, 100, 0, func(t time.Duration) float64 {
				if t <= 5*m {
					return 5
				}
				return 0
			}), want: fires, labels: map[string]string{"event": "e1"}},
		{alert: "EncoreAdmissionStalled", name: "stays quiet while admissions flow", span: h,
			series: room(500, 10, 100, 0, each(5)), want: quiet},
		{alert: "EncoreAdmissionStalled", name: "stays quiet when every lease is taken", span: h,
			series: room(500, 100, 100, 0, each(0)), want: quiet},
		{alert: "EncoreAdmissionStalled", name: "stays quiet when the event is sold out", span: h,
			series: room(500, 10, 100, 1, each(0)), want: quiet},
		{alert: "EncoreAdmissionStalled", name: "stays quiet while the operator has paused admission, which reports capacity 0", span: h,
			series: room(500, 10, 0, 0, each(0)), want: quiet},

		{alert: "EncoreLoadShedding", name: "pages when checkout sheds a fifth of its requests", span: 15 * m,
			series: shedding(0.2), want: fires, labels: map[string]string{"route": "/v1/holds/:id/checkout"}},
		{alert: "EncoreLoadShedding", name: "stays quiet when checkout sheds one request in a hundred", span: h,
			series: shedding(0.01), want: quiet},

		{alert: "EncoreAuditNotRunRecently", name: "opens a ticket when the audit last ran 26 hours ago", span: 26*h + 10*m, step: m,
			series: gauges(map[string]fn{`encore_audit_last_run_timestamp_seconds`: val(1)}), want: fires},
		{alert: "EncoreAuditNotRunRecently", name: "stays quiet while the audit runs every day", span: 26*h + 10*m, step: m,
			series: gauges(map[string]fn{`encore_audit_last_run_timestamp_seconds`: every(24 * h)}), want: quiet},

		{alert: "EncoreAuditNotReporting", name: "opens a ticket when no audit reports a run for 26 hours", span: 26*h + 5*m, step: m,
			series: nothing, want: fires},
		{alert: "EncoreAuditNotReporting", name: "stays quiet while the audit reports its last run", span: 26*h + 5*m, step: m,
			series: gauges(map[string]fn{`encore_audit_last_run_timestamp_seconds`: every(24 * h)}), want: quiet},

		{alert: "EncoreReconciliationNotRunRecently", name: "opens a ticket when reconciliation last ran an hour ago", span: h + 10*m,
			series: gauges(map[string]fn{`encore_reconcile_last_run_timestamp_seconds`: val(1)}), want: fires},
		{alert: "EncoreReconciliationNotRunRecently", name: "stays quiet while reconciliation runs every 15 minutes", span: 3 * h,
			series: gauges(map[string]fn{`encore_reconcile_last_run_timestamp_seconds`: every(15 * m)}), want: quiet},

		{alert: "EncoreReconciliationNotReporting", name: "opens a ticket when no reconciliation reports a run for an hour", span: h + 5*m,
			series: nothing, want: fires},
		{alert: "EncoreReconciliationNotReporting", name: "stays quiet while reconciliation reports its last run", span: 3 * h,
			series: gauges(map[string]fn{`encore_reconcile_last_run_timestamp_seconds`: every(15 * m)}), want: quiet},
	}
}
