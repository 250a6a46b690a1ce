package rehearsal

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
)

// recorded is a small sale as the recorder would have it.
func recorded() *run {
	rn := &run{cfg: Defaults(), rec: newRecorder(time.Now()), event: eventView{ID: "evt_x", Metered: true}, seats: 20,
		clients: &clients{groups: nil}}
	rn.cfg.EventID = "evt_x"
	r := rn.rec
	r.opened = 2 * time.Second
	for i := range 30 {
		at := time.Duration(i) * 300 * time.Millisecond
		r.holdLat = append(r.holdLat, timed{at: at, took: time.Duration(5+i) * time.Millisecond, outcome: "201"})
		r.samples = append(r.samples, sample{at: at, arrived: int64(i), waiting: int64(30 - i), admitted: int64(i),
			depth: float64(30 - i), capacity: 10, leases: float64(i % 10), admittedTotal: float64(i), rss: 2e8})
	}
	for i := range 10 {
		r.bookings = append(r.bookings, booking{place: float64(i + 1), holdAt: time.Duration(i) * time.Second,
			checkoutAt: time.Duration(i)*time.Second + 800*time.Millisecond, paidAt: time.Duration(i)*time.Second + 2*time.Second, seats: 2})
	}
	r.bookings = append(r.bookings, booking{place: math.NaN(), holdAt: time.Second, checkoutAt: 2 * time.Second, paidAt: 3 * time.Second, seats: 1})
	r.failures["hold"] = map[string]int{"seat-unavailable": 7, "rate-limited": 1}
	r.failures["checkout"] = map[string]int{"payment-declined": 2}
	r.n.paid.Store(11)
	r.chaos = append(r.chaos, ChaosEvent{AfterS: 4, What: "kill api1"}, ChaosEvent{AfterS: 5, What: "restart api1"},
		ChaosEvent{AfterS: 6, What: "fault psp (lost answers)"})
	return rn
}

func TestTheReportEmbedsEveryPlotAndTheSummaryTable(t *testing.T) {
	t.Parallel()
	rn := recorded()
	dir := t.TempDir()
	s := rn.summarize(time.Now(), &checked{reconTries: 1})
	require.NoError(t, s.write(dir))
	figs, err := rn.plot(dir)
	require.NoError(t, err)
	require.Len(t, figs, 7)
	require.NoError(t, writeReport(dir, s, figs))
	for _, f := range figs {
		info, err := os.Stat(filepath.Join(dir, f.File))
		require.NoError(t, err)
		require.Greater(t, info.Size(), int64(1000), f.File)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	page := string(html)
	require.Equal(t, len(figs), strings.Count(page, `src="data:image/png;base64,`), "every plot embedded")
	for _, f := range contractFields {
		require.Contains(t, page, "<code>"+f+"</code>")
	}
	for _, elsewhere := range []string{`src="http`, `href="http`, `<script`, `<link`, `@import`, `url(`} {
		require.NotContains(t, page, elsewhere, "self-contained: nothing loaded from elsewhere")
	}
	require.Contains(t, page, "seat-unavailable")
}

func TestTheSummaryIsComputedFromWhatWasRecorded(t *testing.T) {
	t.Parallel()
	s := recorded().summarize(time.Now(), nil)
	require.EqualValues(t, 11, s.BookingsPaid)
	require.NotNil(t, s.FairnessKendallTau)
	require.InDelta(t, 1.0, *s.FairnessKendallTau, 1e-12, "places 1..10 bought in order; the fan without a place is left out")
	require.Equal(t, 19.0, s.HoldP50MS, "the 15th of the 30 latencies 5..34 ms")
	require.Equal(t, 34.0, s.HoldP99MS, "the 30th")
	require.Equal(t, 2000.0, s.HoldToPaidP99MS)
	require.Equal(t, 9, s.Errors["seat-unavailable"]+s.Errors["payment-declined"])
	require.EqualValues(t, 2e8, s.StackRSSMaxBytes)
	require.False(t, s.BooksChecked)
	require.InDelta(t, 11/9.0, s.GoodputPerS, 1e-9, "11 bookings from the opening (2s) to the last PAID (11s)")
}

func TestEveryKillOfAChaosRehearsalIsALineOnTheTimelines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		m        marks
		min, max float64
	}{
		{"an opening", marks{opened: 5}, 5, 5},
		{"an opening and three kills", marks{opened: 5, kills: []float64{7, 12.5, 20}}, 5, 20},
		{"kills of a sale open from the start", marks{kills: []float64{3, 9}}, 3, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := plot.New()
			markOpening(p, tc.m)
			// Each line widens the time axis to its moment.
			require.Equal(t, tc.min, p.X.Min)
			require.Equal(t, tc.max, p.X.Max)
		})
	}
}
