package system_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/rehearsal"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/waitingroom"
)

// withRehearsalSale adds a metered event of 30 numbered seats and a
// standing area of 10, on sale in 3 seconds (so the first fans join before
// the opening), with a waiting room that lets 20 fans into checkout at once,
// its admitter running, and its metrics (and the process's) served as an
// admin listener's /metrics. It returns the event's ID and the metrics
// listener's URL through id and admin.
func withRehearsalSale(id, admin *string) stackOption {
	return func(t *testing.T, e *e2e, a *api.Server) {
		*id = "evt_" + testenv.RandomSuffix()
		require.NoError(t, demo.Create(context.Background(), e.store.Pool(), demo.Event{ID: *id, Title: "Rehearsal " + (*id)[4:],
			Artist: "The Rehearsals", VenueID: "ven_rehearsal", VenueName: "Rehearsal Hall", City: "C", Currency: "EUR",
			StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(3 * time.Second), Metered: true, HoldTTL: time.Minute,
			Sections: []demo.Section{
				{ID: "sec_" + (*id)[4:], Name: "Stalls", Rows: 3, PerRow: 10, BasePrice: 6000},
				{ID: "sec_" + (*id)[4:] + "_floor", Name: "Floor", General: true, Capacity: 10, BasePrice: 3000, Category: "standing"},
			}}))
		rdb, prefix := testenv.Redis(t)
		room := waitingroom.New(rdb, e.store.Holds, []byte("rehearsal-pass-seed-for-tests-only"), waitingroom.Options{
			Prefix: prefix + "wr" + testenv.RandomSuffix() + ":", Capacity: 20, MinCapacity: 20, MaxCapacity: 20, Batch: 5,
			Tick: 200 * time.Millisecond, PassTTL: time.Minute})
		reg := prometheus.NewRegistry()
		room.Register(reg)
		reg.MustRegister(prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
		metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		t.Cleanup(metrics.Close)
		*admin = metrics.URL
		admitThrough(t, e, a, room)
	}
}

// A small flash sale played through the in-test stack's real edge: forty
// fans, each signing in on a device of their own, join the waiting room
// before and after the opening, follow its socket, contend for 30 seats and
// a standing area, walk away from some holds, pay with the sandbox's cards
// (declines, 3-D Secure completed and failed), cancel a few; then the
// inventory audit and the payment reconciliation read the books.
func TestARehearsalSellsAFlashSaleThroughTheEdgeAndTheBooksBalance(t *testing.T) {
	t.Parallel()
	var eventID, admin string
	e, base := browserStack(t, withSweeper, withRehearsalSale(&eventID, &admin))
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	s, err := rehearsal.Run(ctx, rehearsal.Config{API: base, PSP: e.pspURL, PSPKey: system.SandboxKey, Admin: admin,
		EventID: eventID, Fans: 40, ArrivalRate: 8, Duration: 20 * time.Second, Drain: time.Minute,
		Abandon: 0.15, Decline: 0.15, ThreeDS: 0.2, ThreeDSFail: 0.3, Cancel: 0.1, Think: 200 * time.Millisecond,
		Seed: 7, Out: out,
		Books: rehearsal.StackBooks{Store: e.store, Activities: e.deps.Booking, SweepLag: 30 * time.Second}})
	require.NoError(t, err)

	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(raw, &fields))
	for _, f := range []string{"fans", "admitted", "holds", "bookings_paid", "goodput_per_s", "hold_p50_ms", "hold_p99_ms",
		"hold_to_paid_p99_ms", "double_sales", "unmatched_captures", "fairness_kendall_tau", "sold_out_after_s"} {
		require.Contains(t, fields, f, "summary.json names %s", f)
	}
	var got rehearsal.Summary
	require.NoError(t, json.Unmarshal(raw, &got))
	t.Logf("summary: %s", raw)

	require.EqualValues(t, 40, got.Fans, "every fan arrived within the sale")
	require.Positive(t, got.Admitted)
	require.Positive(t, got.Holds)
	require.Positive(t, got.BookingsPaid)
	require.LessOrEqual(t, got.SeatsPaid-got.SeatsCancelled, int64(got.Seats), "never more seats kept than there are")
	require.LessOrEqual(t, got.BookingsPaid, int64(got.Seats))
	require.Positive(t, got.OpenedAfterS, "the sale opened during the rehearsal: the first fans joined before it")
	require.Positive(t, got.HoldP99MS)
	require.GreaterOrEqual(t, got.HoldToPaidP99MS, got.SagaLagP99MS)

	require.True(t, got.BooksChecked)
	require.Empty(t, got.AuditError)
	require.Empty(t, got.ReconcileError)
	require.Zero(t, got.DoubleSales, "inventory audit: %+v", got.Audit)
	require.Zero(t, got.AuditViolations, "inventory audit: %+v", got.Audit)
	require.Zero(t, got.UnmatchedCaptures, "reconciliation: %v", got.Mismatches)
	require.GreaterOrEqual(t, got.Captured, int(got.BookingsPaid), "every paid booking's payment was captured and checked")
	require.False(t, s.Failed())

	for _, f := range []string{"report.html", "queue.png", "hold_latency.png", "goodput.png", "saga_lag.png", "errors.png", "fairness.png"} {
		info, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		require.Positive(t, info.Size(), f)
	}
	if dir := os.Getenv("ENCORE_REHEARSAL_KEEP"); dir != "" { // to look at the report of a run
		require.NoError(t, os.CopyFS(dir, os.DirFS(out)))
	}
}
