package system_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

func TestReconciliationRepairsEachBrokenStateOnceAndReportsThemAsMetrics(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	metrics := activities.NewMetrics(reg)
	// Repairs wait for no grace here, and signal through the test's Temporal.
	e.stopWorker()
	acts := e.deps.Booking
	acts.Sagas, acts.RepairGrace, acts.Metrics = workflows.Sagas{Client: e.temporal}, -1, metrics
	e.startWorker()
	pay := acts.Payments
	eur := money.Money{Amount: 4200, Currency: "EUR"}

	// A paid booking, whose provider events reached its workflow.
	fan := e.fan("reconciled")
	holdID, co := e.checkedOut(fan, e.pay.card(), e.seat(1, 1))
	e.waitStatus(fan, co["booking_id"].(string), vocab.BookingPaid, time.Minute)
	require.EqualValues(t, 1, histogramCount(t, reg, "encore_checkout_to_paid_seconds"), "the sale's checkout to PAID is timed")

	// Broken by hand: an authorisation for a booking Encore never had
	// (leaked), money captured for another (orphan), and a stored provider
	// event of the paid booking that never reached it (undelivered).
	leaked, err := pay.Authorise(ctx, "by-hand-leak-"+holdID, uuid.NewString(), eur, "pm_card_visa", "http://127.0.0.1/return", false)
	require.NoError(t, err)
	require.Equal(t, vocab.IntentRequiresCapture, leaked.Status)
	orphan, err := pay.Authorise(ctx, "by-hand-orphan-"+holdID, uuid.NewString(), eur, "pm_card_visa", "http://127.0.0.1/return", false)
	require.NoError(t, err)
	_, err = pay.Capture(ctx, "by-hand-orphan-capture-"+holdID, orphan.ID)
	require.NoError(t, err)
	_, err = e.store.Pool().Exec(ctx, `INSERT INTO webhook_events (provider, event_id, fingerprint, type, intent_id, payload, received_at)
		SELECT provider, event_id || '_lost', fingerprint, type, intent_id, payload, now() - interval '2 minutes'
		FROM webhook_events WHERE intent_id IS NOT NULL ORDER BY received_at LIMIT 1`)
	require.NoError(t, err)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM webhook_events WHERE signalled_at IS NULL`))

	reconcile := func() activities.ReconcileReport {
		t.Helper()
		run, err := e.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "reconcile-" + uuid.NewString(),
			TaskQueue: workflows.TaskQueue}, workflows.ReconcileWorkflowName, time.Hour)
		require.NoError(t, err)
		var rep activities.ReconcileReport
		require.NoError(t, run.Get(ctx, &rep))
		return rep
	}
	rep := reconcile()
	require.Equal(t, map[vocab.RepairKind]int{vocab.RepairLeakedAuthorisation: 1, vocab.RepairOrphanCapture: 1,
		vocab.RepairUndeliveredWebhook: 1}, rep.Repaired)

	got, err := pay.Retrieve(ctx, leaked.ID)
	require.NoError(t, err)
	require.Equal(t, vocab.IntentCanceled, got.Status, "the leaked authorisation is voided")
	refunds := refundsOf(t, pay, orphan.ID)
	require.Len(t, refunds, 1)
	require.EqualValues(t, eur.Amount, refunds[0].Amount, "the orphan capture is refunded in full")
	require.Zero(t, e.count(`SELECT count(*) FROM webhook_events WHERE signalled_at IS NULL`), "the lost event was delivered")
	require.Equal(t, 1.0, gauge(t, reg, "encore_reconcile_repairs_total", "orphan_capture"))

	// A second run finds nothing left to repair and moves no money.
	rep = reconcile()
	require.Empty(t, rep.Repaired)
	require.Empty(t, rep.Mismatches)
	require.Len(t, refundsOf(t, pay, orphan.ID), 1)
	require.Equal(t, 0.0, gauge(t, reg, "encore_reconcile_mismatches", "orphan_capture"))
	require.Equal(t, 1.0, gauge(t, reg, "encore_reconcile_repairs_total", "orphan_capture"), "repaired once")
}

func refundsOf(t *testing.T, pay *payments.Client, intentID string) []payments.Refund {
	t.Helper()
	var out []payments.Refund
	require.NoError(t, pay.Each(context.Background(), time.Now().Add(-time.Hour), func(in payments.Intent, rs []payments.Refund) error {
		if in.ID == intentID {
			out = rs
		}
		return nil
	}))
	return out
}

// gauge reads the series of a gauge or counter family with the kind label
// from reg.
func gauge(t *testing.T, reg *prometheus.Registry, name, kind string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					if m.GetGauge() != nil {
						return m.GetGauge().GetValue()
					}
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("%s{kind=%q} not found", name, kind)
	return 0
}

// histogramCount is the sample count of an unlabelled histogram in reg.
func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("%s not found", name)
	return 0
}
