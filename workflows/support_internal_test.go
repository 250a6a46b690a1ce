package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/money"
)

// The fan's e-mail reaches Temporal only in the workflow's static details
// (encrypted with the payloads) and as its keyed hash, never in the
// recorded input; the start carries what support filters by.
func TestABookingStartsWithItsSummaryDetailsAndSearchAttributesButNoEmailInItsInput(t *testing.T) {
	in := BookingInput{ReservationID: "r1", EventID: "evt", UserID: "asha", ExpiresAt: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC),
		Total: money.Money{Amount: 4500, Currency: "EUR"}, Seats: 2, Email: "asha@example.com", EmailHash: EmailHash([]byte("k"), "asha@example.com")}
	raw, err := json.Marshal(in)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "asha@example.com", "the recorded input holds no address")

	o := startOptions(in)
	require.Equal(t, "booking r1 · 2 seat(s) · 45.00 EUR", o.StaticSummary)
	require.Contains(t, o.StaticDetails, "asha@example.com")
	require.Contains(t, o.StaticDetails, "45.00 EUR")
	sa := o.TypedSearchAttributes
	amount, ok := sa.GetInt64(amountAttr)
	require.True(t, ok)
	require.EqualValues(t, 4500, amount)
	hash, ok := sa.GetKeyword(emailHashAttr)
	require.True(t, ok)
	require.Equal(t, in.EmailHash, hash)
	attention, ok := sa.GetBool(attentionAttr)
	require.True(t, ok)
	require.False(t, attention)
}

func TestAmountsReadAsPeopleWriteThem(t *testing.T) {
	require.Equal(t, "45.00 EUR", formatMoney(money.Money{Amount: 4500, Currency: "EUR"}))
	require.Equal(t, "0.05 EUR", formatMoney(money.Money{Amount: 5, Currency: "EUR"}))
	require.Equal(t, "-1.50 EUR", formatMoney(money.Money{Amount: -150, Currency: "EUR"}))
}
