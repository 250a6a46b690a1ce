package rehearsal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The contract fixes these names: a rename would break every dashboard and
// script that reads summary.json.
var contractFields = []string{"fans", "admitted", "holds", "bookings_paid", "goodput_per_s", "hold_p50_ms",
	"hold_p99_ms", "hold_to_paid_p99_ms", "double_sales", "unmatched_captures", "fairness_kendall_tau", "sold_out_after_s"}

func TestSummaryJSONCarriesEveryContractFieldByItsName(t *testing.T) {
	t.Parallel()
	tau, soldOut := 0.9, 42.0
	s := &Summary{Fans: 40, Admitted: 30, Holds: 20, BookingsPaid: 10, GoodputPerS: 1.5, HoldP50MS: 12, HoldP99MS: 80,
		HoldToPaidP99MS: 3000, DoubleSales: 0, UnmatchedCaptures: 0, FairnessKendallTau: &tau, SoldOutAfterS: &soldOut}
	dir := t.TempDir()
	require.NoError(t, s.write(dir))
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(raw, &got))
	for _, f := range contractFields {
		require.Contains(t, got, f)
	}
	require.Equal(t, 40.0, got["fans"])
	require.Equal(t, 10.0, got["bookings_paid"])
	require.Equal(t, 0.9, got["fairness_kendall_tau"])
	require.Equal(t, 42.0, got["sold_out_after_s"])
}

func TestAnUndefinedTauOrANeverSoldOutSaleIsNullNotMissing(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(&Summary{})
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(raw, &got))
	for _, f := range []string{"fairness_kendall_tau", "sold_out_after_s"} {
		v, present := got[f]
		require.True(t, present, f)
		require.Nil(t, v, f)
	}
}

func TestASummaryFailsOnABrokenRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		s      Summary
		failed bool
	}{
		{"clean books", Summary{BooksChecked: true, TicketsPerBookingExact: true}, false},
		{"books not checked", Summary{}, false},
		{"a double sale", Summary{BooksChecked: true, TicketsPerBookingExact: true, DoubleSales: 1, AuditViolations: 1}, true},
		{"an unmatched capture", Summary{BooksChecked: true, TicketsPerBookingExact: true, UnmatchedCaptures: 1}, true},
		{"another audit violation", Summary{BooksChecked: true, TicketsPerBookingExact: true, AuditViolations: 2}, true},
		{"an audit that could not run", Summary{BooksChecked: true, TicketsPerBookingExact: true, AuditError: "connection refused"}, true},
		{"a reconciliation that could not run", Summary{BooksChecked: true, TicketsPerBookingExact: true, ReconcileError: "provider down"}, true},
		{"a paid booking missing a ticket", Summary{BooksChecked: true}, true},
		{"a stuck saga", Summary{BooksChecked: true, TicketsPerBookingExact: true, StuckWorkflows: 1}, true},
		{"a lost webhook", Summary{BooksChecked: true, TicketsPerBookingExact: true, LostWebhooks: 1}, true},
		{"settling that could not be read", Summary{BooksChecked: true, TicketsPerBookingExact: true, SettleError: "timeout"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.failed, tc.s.Failed())
		})
	}
}
