package payments_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/payments"
)

func TestCardSummaryNamesTheBrandAndLastFourOfTheCardThatPaid(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t)})
	ctx := context.Background()
	cases := []struct{ pm, brand, last4 string }{
		{"pm_card_visa", "visa", "4242"},
		{"pm_card_mastercard", "mastercard", "4444"},
	}
	for _, tc := range cases {
		a, err := c.Authorise(ctx, "card-"+tc.pm+":authorise", "card-"+tc.pm, eur, tc.pm, "", false)
		require.NoError(t, err)
		brand, last4, err := c.CardSummary(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, tc.brand, brand, tc.pm)
		require.Equal(t, tc.last4, last4, tc.pm)
	}
}

func TestCardSummaryOfAnIntentNotYetPaidIsEmpty(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t)})
	a, err := c.Authorise(context.Background(), "hosted:authorise", "hosted", eur, "", "", false)
	require.NoError(t, err)
	brand, last4, err := c.CardSummary(context.Background(), a.ID)
	require.NoError(t, err)
	require.Empty(t, brand)
	require.Empty(t, last4)
}

func TestACaptureNamesTheCardThatPaid(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t)})
	ctx := context.Background()
	a, err := c.Authorise(ctx, "capture-card:authorise", "capture-card", eur, "pm_card_mastercard", "", false)
	require.NoError(t, err)
	captured, err := c.Capture(ctx, "capture-card:capture", a.ID)
	require.NoError(t, err)
	require.Equal(t, "mastercard", captured.CardBrand)
	require.Equal(t, "4444", captured.CardLast4)
}
