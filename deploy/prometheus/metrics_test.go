package prometheus

import (
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// encoreMetrics is the contract between Encore's processes and this
// directory: every metric the rules and the dashboard may read, by type. A
// name that is not here (nor recorded by a rule) is a typo, and a typo in
// PromQL is no error: it selects nothing, and the alert never fires.
var encoreMetrics = map[string]string{
	// The HTTP edge, by route pattern, method and status.
	"encore_http_requests_total":           "counter",
	"encore_http_request_duration_seconds": "histogram",
	// The waiting room.
	"encore_waitingroom_join_to_admit_seconds": "histogram",
	"encore_waitingroom_admitted_total":        "counter",
	"encore_waitingroom_active_leases":         "gauge",
	"encore_waitingroom_capacity":              "gauge",
	"encore_waitingroom_queue_depth":           "gauge",
	"encore_waitingroom_sold_out":              "gauge",
	"encore_waitingroom_admitter_leader":       "gauge",
	"encore_waitingroom_tick_errors_total":     "counter",
	"encore_waitingroom_stale_dropped_total":   "counter",
	// Holds.
	"encore_holds_total":           "counter",
	"encore_hold_duration_seconds": "histogram",
	// The booking saga, payments and webhooks.
	"encore_checkout_to_paid_seconds":     "histogram",
	"encore_saga_oldest_open_age_seconds": "gauge",
	"encore_saga_calls_total":             "counter",
	"encore_saga_call_duration_seconds":   "histogram",
	"encore_saga_shed_total":              "counter",
	"encore_webhook_lag_seconds":          "histogram",
	"encore_webhook_conflicts_total":      "counter",
	// Booking pages waiting on their booking, and the listener that wakes them.
	"encore_booking_watched":           "gauge",
	"encore_booking_changes_listening": "gauge",
	// The outbox relay.
	"encore_outbox_oldest_unpublished_age_seconds": "gauge",
	"encore_outbox_failures_total":                 "counter",
	"encore_outbox_relay_active":                   "gauge",
	"encore_outbox_publish_lag_seconds":            "histogram",
	// Reconciliation with the payment provider and the inventory audit.
	"encore_reconcile_mismatches":                 "gauge",
	"encore_reconcile_repairs_total":              "counter",
	"encore_reconcile_last_run_timestamp_seconds": "gauge",
	"encore_audit_violations":                     "gauge",
	"encore_audit_paid_without_tickets":           "gauge",
	"encore_audit_last_run_timestamp_seconds":     "gauge",
	// Prometheus's own series of the alerts' state.
	"ALERTS": "gauge",
}

// knownSeries are the series names a query may select: the contract's (a
// histogram as its _bucket, _count and _sum) and every recorded one.
func knownSeries(t *testing.T) map[string]bool {
	known := map[string]bool{}
	for name, kind := range encoreMetrics {
		if kind == "histogram" {
			for _, s := range []string{"_bucket", "_count", "_sum"} {
				known[name+s] = true
			}
			continue
		}
		known[name] = true
	}
	for _, g := range parsedRuleGroups(t) {
		for _, r := range g.Rules {
			if r.Record != "" {
				known[r.Record] = true
			}
		}
	}
	return known
}

// selectedNames are the metric names an expression selects.
func selectedNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				name = m.Value
			}
		}
		names = append(names, name)
		return nil
	})
	return names
}

func TestTheMetricContractNamesEveryMetricByItsType(t *testing.T) {
	for name, kind := range encoreMetrics {
		require.Contains(t, []string{"counter", "gauge", "histogram"}, kind, name)
		if kind == "counter" {
			require.Regexp(t, `_total$`, name, "a counter's name ends in _total")
		}
	}
}
