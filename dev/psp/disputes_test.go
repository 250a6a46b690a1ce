package psp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
)

// disputeEnv is a sandbox that disputes the dispute card's payments after
// 50ms and delivers its events to a receiver.
func disputeEnv(t *testing.T) (*env, *receiver, context.Context) {
	t.Helper()
	rc := newReceiver(t, "whsec_disputes")
	e := newEnv(t, Config{WebhookURL: rc.URL(), WebhookSecret: "whsec_disputes", DisputeDelay: 50 * time.Millisecond}, 0)
	return e, rc, ctxT(t)
}

// paidWith authorises and captures amount with pm.
func (e *env) paidWith(t *testing.T, ctx context.Context, pm string, amount int64) *stripe.PaymentIntent {
	t.Helper()
	pi := e.create(t, ctx, confirmedIntent(amount, map[string]string{"booking_id": "b1"}, pm))
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, pi.Status)
	pi, err := e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, pi.Status)
	return pi
}

// disputeOf waits for the dispute of intent piID and returns it.
func (e *env) disputeOf(t *testing.T, ctx context.Context, piID string) *stripe.Dispute {
	t.Helper()
	var got *stripe.Dispute
	eventually(t, func() bool {
		for d, err := range e.sc.V1Disputes.List(ctx, &stripe.DisputeListParams{PaymentIntent: stripe.String(piID)}).All(ctx) {
			require.NoError(t, err)
			got = d
		}
		return got != nil
	}, "no dispute opened for "+piID)
	return got
}

// eventsOfType are the delivered events of type typ about intent piID, decoded.
func disputeEvents(rc *receiver, typ stripe.EventType, piID string) []stripe.Dispute {
	var out []stripe.Dispute
	for _, r := range rc.events() {
		if r.Event.Type != typ {
			continue
		}
		var d stripe.Dispute
		if json.Unmarshal(r.Event.Data.Raw, &d) == nil && d.PaymentIntent != nil && d.PaymentIntent.ID == piID {
			out = append(out, d)
		}
	}
	return out
}

func TestTheDisputeCardPaysAndIsDisputedAsFraudulentAfterTheDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pm   func(t *testing.T, e *env, ctx context.Context) string
	}{
		{"the test payment method", func(*testing.T, *env, context.Context) string { return DisputeCard }},
		{"a card created from its number", func(t *testing.T, e *env, ctx context.Context) string {
			pm, err := e.sc.V1PaymentMethods.Create(ctx, &stripe.PaymentMethodCreateParams{Type: stripe.String("card"),
				Card: &stripe.PaymentMethodCreateCardParams{Number: stripe.String(DisputeCardNumber),
					ExpMonth: stripe.Int64(12), ExpYear: stripe.Int64(int64(time.Now().Year() + 2)), CVC: stripe.String("123")}})
			require.NoError(t, err)
			return pm.ID
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, rc, ctx := disputeEnv(t)
			pi := e.paidWith(t, ctx, tc.pm(t, e, ctx), 15000)
			d := e.disputeOf(t, ctx, pi.ID)
			require.Equal(t, "dispute", d.Object)
			require.Equal(t, stripe.DisputeStatusNeedsResponse, d.Status)
			require.Equal(t, stripe.DisputeReasonFraudulent, d.Reason)
			require.EqualValues(t, 15000, d.Amount)
			require.Equal(t, stripe.CurrencyEUR, d.Currency)
			require.Equal(t, pi.LatestCharge.ID, d.Charge.ID)
			require.Equal(t, pi.ID, d.PaymentIntent.ID)

			again, err := e.sc.V1Disputes.Retrieve(ctx, d.ID, nil)
			require.NoError(t, err)
			require.Equal(t, d.ID, again.ID)
			_, err = e.sc.V1Disputes.Retrieve(ctx, "dp_missing", nil)
			se := requireStripeError(t, err, 404)
			require.Equal(t, stripe.ErrorCodeResourceMissing, se.Code)

			eventually(t, func() bool { return len(disputeEvents(rc, stripe.EventTypeChargeDisputeCreated, pi.ID)) == 1 },
				"charge.dispute.created is delivered")
			rc.requireClean()
		})
	}
}

func TestAnOrdinaryCardIsNeverDisputed(t *testing.T) {
	t.Parallel()
	e, _, ctx := disputeEnv(t)
	pi := e.paidWith(t, ctx, "pm_card_visa", 1000)
	// A disputing card paid after it is disputed first: by then the
	// ordinary card's dispute delay has passed too.
	later := e.paidWith(t, ctx, "pm_card_createDispute", 1000)
	disputes := func(id string) int {
		n := 0
		for _, err := range e.sc.V1Disputes.List(ctx, &stripe.DisputeListParams{PaymentIntent: stripe.String(id)}).All(ctx) {
			require.NoError(t, err)
			n++
		}
		return n
	}
	eventually(t, func() bool { return disputes(later.ID) == 1 }, "the disputing card paid later is disputed")
	require.Zero(t, disputes(pi.ID))
}

func TestEvidenceClosesADisputeWonOrLostAsStripesTestModeDoes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, evidence string
		want           stripe.DisputeStatus
	}{
		{"winning evidence wins", WinningEvidence, stripe.DisputeStatusWon},
		{"losing evidence loses", LosingEvidence, stripe.DisputeStatusLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, rc, ctx := disputeEnv(t)
			pi := e.paidWith(t, ctx, DisputeCard, 4000)
			d := e.disputeOf(t, ctx, pi.ID)
			p := &stripe.DisputeUpdateParams{Evidence: &stripe.DisputeUpdateEvidenceParams{UncategorizedText: stripe.String(tc.evidence)}}
			closed, err := e.sc.V1Disputes.Update(ctx, d.ID, p)
			require.NoError(t, err)
			require.Equal(t, tc.want, closed.Status)
			require.Equal(t, tc.evidence, closed.Evidence.UncategorizedText)
			eventually(t, func() bool {
				ds := disputeEvents(rc, stripe.EventTypeChargeDisputeClosed, pi.ID)
				return len(ds) == 1 && ds[0].Status == tc.want
			}, "charge.dispute.closed is delivered with the outcome")

			_, err = e.sc.V1Disputes.Update(ctx, d.ID, p)
			requireStripeError(t, err, 400)
			ch, err := e.sc.V1Charges.Retrieve(ctx, pi.LatestCharge.ID, nil)
			require.NoError(t, err)
			require.Zero(t, ch.AmountRefunded, "a dispute is not a refund")
		})
	}
}

func TestOtherEvidencePutsADisputeUnderReviewAndClosingItLosesIt(t *testing.T) {
	t.Parallel()
	e, rc, ctx := disputeEnv(t)
	pi := e.paidWith(t, ctx, DisputeCard, 4000)
	d := e.disputeOf(t, ctx, pi.ID)
	d, err := e.sc.V1Disputes.Update(ctx, d.ID, &stripe.DisputeUpdateParams{
		Evidence: &stripe.DisputeUpdateEvidenceParams{UncategorizedText: stripe.String("the fan was at the concert")}})
	require.NoError(t, err)
	require.Equal(t, stripe.DisputeStatusUnderReview, d.Status)
	d, err = e.sc.V1Disputes.Close(ctx, d.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.DisputeStatusLost, d.Status)
	eventually(t, func() bool {
		return len(disputeEvents(rc, stripe.EventTypeChargeDisputeUpdated, pi.ID)) == 1 &&
			len(disputeEvents(rc, stripe.EventTypeChargeDisputeClosed, pi.ID)) == 1
	}, "updated, then closed")
}

func TestDisputesAreListedNewestFirstAndFilteredByCharge(t *testing.T) {
	t.Parallel()
	e, _, ctx := disputeEnv(t)
	a := e.paidWith(t, ctx, DisputeCard, 1000)
	da := e.disputeOf(t, ctx, a.ID)
	b := e.paidWith(t, ctx, DisputeCard, 2000)
	db := e.disputeOf(t, ctx, b.ID)
	var ids []string
	for d, err := range e.sc.V1Disputes.List(ctx, &stripe.DisputeListParams{}).All(ctx) {
		require.NoError(t, err)
		ids = append(ids, d.ID)
	}
	require.Equal(t, []string{db.ID, da.ID}, ids)
	ids = nil
	for d, err := range e.sc.V1Disputes.List(ctx, &stripe.DisputeListParams{Charge: stripe.String(a.LatestCharge.ID)}).All(ctx) {
		require.NoError(t, err)
		ids = append(ids, d.ID)
	}
	require.Equal(t, []string{da.ID}, ids)
}

func TestARefundByAnotherCallerEmitsChargeRefundedNamingItsOwnKey(t *testing.T) {
	t.Parallel()
	e, rc, ctx := disputeEnv(t)
	pi := e.paidWith(t, ctx, "pm_card_visa", 5000)
	// The "dashboard": any holder of the key, with a key of its own.
	_, err := e.sc.V1Refunds.Create(ctx, withKey(&stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID)}, "dashboard-1"))
	require.NoError(t, err)
	eventually(t, func() bool {
		for _, r := range rc.forIntent(pi.ID) {
			if r.Event.Type == stripe.EventTypeChargeRefunded {
				var ch stripe.Charge
				require.NoError(t, json.Unmarshal(r.Event.Data.Raw, &ch))
				return ch.Refunded && ch.AmountRefunded == 5000 && r.Event.Request.IdempotencyKey == "dashboard-1"
			}
		}
		return false
	}, "charge.refunded carries the charge refunded in full and the refund request's key")
}
