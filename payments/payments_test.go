package payments_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/payments"

	"github.com/encore-tickets/encore/vocab"
)

const key = "sk_test_encore_sandbox"

// sandbox runs the payment sandbox on loopback; every call goes through
// stripe-go as in production.
func sandbox(t *testing.T) string {
	t.Helper()
	srv, err := psp.New(psp.Config{APIKey: key, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		_ = srv.Close()
	})
	return ts.URL
}

var eur = money.Money{Amount: 4200, Currency: "EUR"}

// decline authorises booking with the card pm, which the provider must
// decline, and returns the decline.
func decline(t *testing.T, c *payments.Client, booking, pm string) *payments.DeclinedError {
	t.Helper()
	_, err := c.Authorise(context.Background(), booking+":authorise", booking, eur, pm, "", false)
	var d *payments.DeclinedError
	require.ErrorAs(t, err, &d)
	return d
}

func TestAuthoriseIsIdempotentUnderItsStepKey(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t)})
	ctx := context.Background()
	a, err := c.Authorise(ctx, "b1:authorise", "b1", eur, "pm_card_visa", "", false)
	require.NoError(t, err)
	require.Equal(t, vocab.IntentRequiresCapture, a.Status)
	require.Equal(t, eur, a.Amount)
	require.Equal(t, "b1", a.BookingID)
	again, err := c.Authorise(ctx, "b1:authorise", "b1", eur, "pm_card_visa", "", false)
	require.NoError(t, err)
	require.Equal(t, a.ID, again.ID, "the same step key is the same payment")
	found, ok, err := c.FindByBooking(ctx, "b1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, a.ID, found.ID)
	captured, err := c.Capture(ctx, "b1:capture", a.ID)
	require.NoError(t, err)
	require.Equal(t, vocab.IntentSucceeded, captured.Status)
	r, err := c.Refund(ctx, "b1:refund", a.ID)
	require.NoError(t, err)
	require.Equal(t, int64(4200), r.Amount)
}

func TestADeclineIsADeclinedErrorWithItsCode(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t)})
	d := decline(t, c, "b2", "pm_card_chargeDeclinedInsufficientFunds")
	require.Equal(t, "insufficient_funds", d.DeclineCode)
}

func TestALostAnswerIsUnknownAndTheLookupFindsTheOutcome(t *testing.T) {
	t.Parallel()
	base := sandbox(t)
	ctx := context.Background()
	ok := payments.New(payments.Config{APIKey: key, BaseURL: base})
	a, err := ok.Authorise(ctx, "b3:authorise", "b3", eur, "pm_card_visa", "", false)
	require.NoError(t, err)
	lossy := payments.New(payments.Config{APIKey: key, BaseURL: base, Timeout: time.Second, Fault: "timeout_after_success=drop"})
	_, err = lossy.Capture(ctx, "b3:capture", a.ID)
	require.True(t, errors.Is(err, payments.ErrUnknown), "got %v", err)
	got, err := ok.Retrieve(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, vocab.IntentSucceeded, got.Status, "the provider acted before the answer was lost")
	again, err := ok.Capture(ctx, "b3:capture", a.ID)
	require.NoError(t, err, "the same step key replays the first capture")
	require.Equal(t, vocab.IntentSucceeded, again.Status)
}

func TestACheckoutWithoutACardLinksToTheHostedPage(t *testing.T) {
	t.Parallel()
	base := sandbox(t)
	c := payments.New(payments.Config{APIKey: key, BaseURL: base, HostedPage: base})
	a, err := c.Authorise(context.Background(), "b4:authorise", "b4", eur, "", "", false)
	require.NoError(t, err)
	require.Equal(t, vocab.IntentRequiresPaymentMethod, a.Status)
	require.Contains(t, a.NextActionURL, base+"/checkout/"+a.ID+"?client_secret=")
}

func TestAStepUpSendsEvenAGoodCardThroughThreeDSecure(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t)})
	a, err := c.Authorise(context.Background(), "b5:authorise", "b5", eur, "pm_card_visa", "", true)
	require.NoError(t, err)
	require.Equal(t, vocab.IntentRequiresAction, a.Status)
	require.NotEmpty(t, a.NextActionURL)
}

func TestADeclineNamesTheIntentForTheNextCard(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t)})
	d := decline(t, c, "b6", "pm_card_chargeDeclined")
	require.NotEmpty(t, d.IntentID)
	in, err := c.Confirm(context.Background(), "b6:authorise-2", d.IntentID, "pm_card_visa", "", false)
	require.NoError(t, err)
	require.Equal(t, vocab.IntentRequiresCapture, in.Status)
}
