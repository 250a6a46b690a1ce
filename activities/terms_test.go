package activities_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/money"
)

func TestAFansCancellationRefundsEverythingUnlessItsStaysArePastTheirFreeWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	eur := func(n int64) money.Money { return money.Money{Amount: n, Currency: "EUR"} }
	for _, tc := range []struct {
		name   string
		hold   activities.HoldInfo
		refund money.Money
		may    bool
	}{
		{"seats only, before the deadline", activities.HoldInfo{Total: eur(9000), CancelBy: now.Add(time.Hour)}, eur(9000), true},
		{"seats only, at the deadline", activities.HoldInfo{Total: eur(9000), CancelBy: now}, eur(9000), false},
		{"a package inside the stays' free window", activities.HoldInfo{Total: eur(30000), CancelBy: now.Add(48 * time.Hour),
			StayFreeUntil: now.Add(time.Minute), StayPenalty: 12000}, eur(30000), true},
		{"a package past the stays' free window keeps the first nights", activities.HoldInfo{Total: eur(30000),
			CancelBy: now.Add(48 * time.Hour), StayFreeUntil: now, StayPenalty: 12000}, eur(18000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.refund, tc.hold.FanRefund(now))
			require.Equal(t, tc.may, tc.hold.FanCanCancel(now))
		})
	}
}
