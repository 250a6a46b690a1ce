package psp

import (
	"os"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
)

var fingerprintShape = regexp.MustCompile(`^[0-9A-Za-z]{16}$`)

func sortedCardIDs() []string {
	ids := make([]string, 0, len(testCards))
	for id := range testCards {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func TestEveryTestCardIsDocumentedAndRetrievableWithAFingerprint(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	e, ctx := newDefaultEnv(t)
	for _, id := range sortedCardIDs() {
		card := testCards[id]
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			require.Regexp(t, `\b`+id+`\b`, string(doc), "every test card is listed in the package documentation")
			require.Len(t, card.Number, map[bool]int{true: 15, false: 16}[card.Brand == "amex"], "the card number is Stripe's")
			require.Equal(t, card.Last4, card.Number[len(card.Number)-4:], "last4 comes from the card number")

			pm, err := e.sc.V1PaymentMethods.Retrieve(ctx, id, nil)
			require.NoError(t, err)
			require.Equal(t, id, pm.ID)
			require.Equal(t, stripe.PaymentMethodTypeCard, pm.Type)
			require.NotNil(t, pm.Card)
			require.Regexp(t, fingerprintShape, pm.Card.Fingerprint)
			require.Equal(t, card.Last4, pm.Card.Last4)
			require.Equal(t, card.Brand, string(pm.Card.Brand))
			require.Equal(t, card.country(), pm.Card.Country)
		})
	}
}

func TestTestCardsShareAFingerprintExactlyWhenTheyShareACardNumber(t *testing.T) {
	t.Parallel()
	ids := sortedCardIDs()
	for i, a := range ids {
		for _, b := range ids[i+1:] {
			ca, cb := testCards[a], testCards[b]
			if ca.Number == cb.Number {
				require.Equal(t, ca.fingerprint(), cb.fingerprint(), "%s and %s are the same card", a, b)
			} else {
				require.NotEqual(t, ca.fingerprint(), cb.fingerprint(), "%s and %s are different cards", a, b)
			}
		}
	}
}

func TestOnlyPmCardUsIsAnotherNameForAnExistingCard(t *testing.T) {
	t.Parallel()
	byNumber := map[string][]string{}
	for _, id := range sortedCardIDs() {
		byNumber[testCards[id].Number] = append(byNumber[testCards[id].Number], id)
	}
	for number, ids := range byNumber {
		if number == "4242424242424242" {
			require.Equal(t, []string{"pm_card_us", "pm_card_visa"}, ids)
			continue
		}
		require.Len(t, ids, 1, "load tests rely on each other test card being its own card: %v", ids)
	}
}

func TestAFingerprintIsStableAcrossSandboxInstances(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	first, err := newEnv(t, Config{}, 0).sc.V1PaymentMethods.Retrieve(ctx, "pm_card_visa", nil)
	require.NoError(t, err)
	second, err := newEnv(t, Config{}, 0).sc.V1PaymentMethods.Retrieve(ctx, "pm_card_visa", nil)
	require.NoError(t, err)
	require.Equal(t, first.Card.Fingerprint, second.Card.Fingerprint)
}

func TestTheFingerprintIsTheSameWhereverTheCardIsRendered(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	tests := []struct {
		name string
		pm   string
	}{
		{"an authorised card", "pm_card_mastercard"},
		{"a card from one country", "pm_card_de"},
		{"a declined card", "pm_card_chargeDeclined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pm, err := e.sc.V1PaymentMethods.Retrieve(ctx, tc.pm, nil)
			require.NoError(t, err)
			want := pm.Card.Fingerprint

			p := confirmedIntent(4200, nil, tc.pm)
			pi, err := e.sc.V1PaymentIntents.Create(ctx, p)
			if err != nil {
				// A decline carries the payment method in last_payment_error.
				var se *stripe.Error
				require.ErrorAs(t, err, &se)
				require.NotNil(t, se.PaymentMethod)
				require.Equal(t, want, se.PaymentMethod.Card.Fingerprint)
				require.NotNil(t, se.PaymentIntent)
				pi = se.PaymentIntent
			}
			got, err := e.sc.V1PaymentIntents.Retrieve(ctx, pi.ID, &stripe.PaymentIntentRetrieveParams{
				Expand: []*string{stripe.String("latest_charge"), stripe.String("payment_method")}})
			require.NoError(t, err)
			if got.PaymentMethod != nil { // a decline detaches the card from the intent, as at Stripe
				require.Equal(t, want, got.PaymentMethod.Card.Fingerprint, "expand[]=payment_method")
			}
			require.NotNil(t, got.LatestCharge)
			require.Equal(t, want, got.LatestCharge.PaymentMethodDetails.Card.Fingerprint, "payment_method_details.card")
		})
	}
}

func TestAnUnknownPaymentMethodIsResourceMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, 0)
	_, err := e.sc.V1PaymentMethods.Retrieve(ctxT(t), "pm_card_nope", nil)
	se := requireStripeError(t, err, 404)
	require.Equal(t, stripe.ErrorCodeResourceMissing, se.Code)
	require.Equal(t, "payment_method", se.Param)
	require.Contains(t, se.Msg, "pm_card_nope")
}
