package activities

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/vocab"
)

// sandboxPayments is a payments client aimed at the payment sandbox on
// loopback: every call goes through stripe-go as in production.
func sandboxPayments(t *testing.T) *payments.Client {
	t.Helper()
	const key = "sk_test_encore_sandbox"
	srv, err := psp.New(psp.Config{APIKey: key, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		_ = srv.Close()
	})
	return payments.New(payments.Config{APIKey: key, BaseURL: ts.URL})
}

// The saga confirms a provider event received by signal with the provider
// before acting on it: the real intent, as the event describes it, is
// confirmed; a claim of another amount, status, currency or booking is
// reported as a mismatch; an intent the provider does not know is one too,
// not an error to retry.
func TestVerifyPaymentEventConfirmsOnlyWhatTheProviderHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sandboxPayments(t)
	a := &Booking{Payments: c}
	const booking = "0b9c4c53-0000-4000-8000-0000000000aa"
	eur := money.Money{Amount: 4500, Currency: "EUR"}
	it, err := c.Authorise(ctx, booking+":authorise", booking, eur, "pm_card_visa", "", false)
	require.NoError(t, err)
	require.Equal(t, vocab.IntentRequiresCapture, it.Status)

	real := EventClaim{BookingID: booking, EventID: "evt_1", Type: vocab.EventAuthorised, IntentID: it.ID, Amount: eur}
	got, err := a.VerifyPaymentEvent(ctx, real)
	require.NoError(t, err)
	require.True(t, got.Confirmed, "%+v", got)
	require.True(t, got.Owned)
	require.Empty(t, got.Mismatch)
	require.Equal(t, vocab.IntentRequiresCapture, got.Status)
	require.Equal(t, eur, got.Amount)

	for name, tc := range map[string]struct {
		claim EventClaim
		owned bool
		says  string
	}{
		"wrong amount":     {func() EventClaim { c := real; c.Amount.Amount = 1; return c }(), true, "claims 1 EUR"},
		"wrong currency":   {func() EventClaim { c := real; c.Amount.Currency = "USD"; return c }(), true, "claims 4500 USD"},
		"not captured yet": {func() EventClaim { c := real; c.Type = vocab.EventSucceeded; return c }(), true, "not succeeded"},
		"another booking":  {func() EventClaim { c := real; c.BookingID = "0b9c4c53-0000-4000-8000-0000000000bb"; return c }(), false, "belongs to booking"},
		"unknown intent":   {func() EventClaim { c := real; c.IntentID = "pi_doesnotexist"; return c }(), false, "does not know"},
	} {
		got, err := a.VerifyPaymentEvent(ctx, tc.claim)
		require.NoError(t, err, name)
		require.False(t, got.Confirmed, "%s: %+v", name, got)
		require.Equal(t, tc.owned, got.Owned, name)
		require.Contains(t, got.Mismatch, tc.says, name)
	}

	// Once captured, the success event is confirmed with what was received.
	_, err = c.Capture(ctx, booking+":capture", it.ID)
	require.NoError(t, err)
	got, err = a.VerifyPaymentEvent(ctx, EventClaim{BookingID: booking, EventID: "evt_2", Type: vocab.EventSucceeded, IntentID: it.ID, Amount: eur})
	require.NoError(t, err)
	require.True(t, got.Confirmed, "%+v", got)
}

// A declined card leaves the intent awaiting a payment method: the failure
// event is confirmed, an authorisation claimed for it is not.
func TestVerifyPaymentEventAfterADecline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sandboxPayments(t)
	a := &Booking{Payments: c}
	const booking = "0b9c4c53-0000-4000-8000-0000000000cc"
	eur := money.Money{Amount: 4500, Currency: "EUR"}
	_, err := c.Authorise(ctx, booking+":authorise", booking, eur, "pm_card_chargeDeclined", "", false)
	var d *payments.DeclinedError
	require.ErrorAs(t, err, &d)
	require.NotEmpty(t, d.IntentID)
	failed, err := a.VerifyPaymentEvent(ctx, EventClaim{BookingID: booking, Type: vocab.EventFailed, IntentID: d.IntentID, Amount: eur})
	require.NoError(t, err)
	require.True(t, failed.Confirmed, "%+v", failed)
	forged, err := a.VerifyPaymentEvent(ctx, EventClaim{BookingID: booking, Type: vocab.EventAuthorised, IntentID: d.IntentID, Amount: eur})
	require.NoError(t, err)
	require.False(t, forged.Confirmed)
	require.Contains(t, forged.Mismatch, "requires_payment_method")
}
