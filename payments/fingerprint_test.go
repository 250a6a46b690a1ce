package payments_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/vocab"
)

// documentedCards are the test payment methods listed in the sandbox's
// package documentation, each with its card's last four digits.
var documentedCards = []struct{ pm, last4 string }{
	{"pm_card_visa", "4242"},
	{"pm_card_visa_debit", "5556"},
	{"pm_card_mastercard", "4444"},
	{"pm_card_mastercard_debit", "8210"},
	{"pm_card_mastercard_prepaid", "5100"},
	{"pm_card_amex", "8431"},
	{"pm_card_discover", "1117"},
	{"pm_card_diners", "0004"},
	{"pm_card_jcb", "0505"},
	{"pm_card_unionpay", "0005"},
	{"pm_card_us", "4242"},
	{"pm_card_ca", "0000"},
	{"pm_card_mx", "8001"},
	{"pm_card_br", "0002"},
	{"pm_card_gb", "0000"},
	{"pm_card_ie", "0005"},
	{"pm_card_de", "0016"},
	{"pm_card_fr", "0003"},
	{"pm_card_nl", "0002"},
	{"pm_card_be", "0004"},
	{"pm_card_at", "0008"},
	{"pm_card_lu", "0006"},
	{"pm_card_es", "0007"},
	{"pm_card_it", "0008"},
	{"pm_card_pt", "0007"},
	{"pm_card_dk", "0001"},
	{"pm_card_se", "0008"},
	{"pm_card_fi", "0001"},
	{"pm_card_no", "0007"},
	{"pm_card_ch", "0009"},
	{"pm_card_pl", "0005"},
	{"pm_card_jp", "0003"},
	{"pm_card_au", "0006"},
	{"pm_card_nz", "0008"},
	{"pm_card_sg", "0003"},
	{"pm_card_hk", "0004"},
	{"pm_card_chargeDeclined", "0002"},
	{"pm_card_chargeDeclinedInsufficientFunds", "9995"},
	{"pm_card_chargeDeclinedFraudulent", "0019"},
	{"pm_card_chargeDeclinedExpiredCard", "0069"},
	{"pm_card_chargeDeclinedIncorrectCvc", "0127"},
	{"pm_card_chargeDeclinedProcessingError", "0119"},
	{"pm_card_threeDSecure2Required", "3220"},
	{"pm_card_authenticationRequired", "3155"},
}

// sameCardAs names the documented test methods that are another name for a
// card already in the list: pm_card_us is Stripe's 4242 Visa.
var sameCardAs = map[string]string{"pm_card_us": "pm_card_visa"}

var fingerprintShape = regexp.MustCompile(`^[0-9A-Za-z]{16}$`)

func TestEveryDocumentedTestCardHasAFingerprint(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t)})
	for _, tc := range documentedCards {
		t.Run(tc.pm, func(t *testing.T) {
			t.Parallel()
			fp, err := c.CardFingerprint(context.Background(), tc.pm)
			require.NoError(t, err)
			require.Regexp(t, fingerprintShape, fp)
		})
	}
}

func TestTheSameCardYieldsTheSameFingerprintOnEveryRetrieval(t *testing.T) {
	t.Parallel()
	base := sandbox(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		first string
		again string
	}{
		{"a card retrieved twice", "pm_card_visa", "pm_card_visa"},
		{"a debit card retrieved twice", "pm_card_mastercard_debit", "pm_card_mastercard_debit"},
		{"a country card retrieved twice", "pm_card_gb", "pm_card_gb"},
		{"the 4242 card under its country name", "pm_card_visa", "pm_card_us"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Two clients stand for two fans' sessions sharing one card.
			first, err := payments.New(payments.Config{APIKey: key, BaseURL: base}).CardFingerprint(ctx, tc.first)
			require.NoError(t, err)
			again, err := payments.New(payments.Config{APIKey: key, BaseURL: base}).CardFingerprint(ctx, tc.again)
			require.NoError(t, err)
			require.Equal(t, first, again)
		})
	}
}

func TestDistinctCardsYieldDistinctFingerprints(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t)})
	ctx := context.Background()
	seen := map[string]string{} // fingerprint -> payment method
	for _, tc := range documentedCards {
		if _, alias := sameCardAs[tc.pm]; alias {
			continue
		}
		fp, err := c.CardFingerprint(ctx, tc.pm)
		require.NoError(t, err)
		other, dup := seen[fp]
		require.False(t, dup, "%s and %s are different cards but share fingerprint %s", other, tc.pm, fp)
		seen[fp] = tc.pm
	}
	require.Len(t, seen, len(documentedCards)-len(sameCardAs))
}

func TestAnUnknownPaymentMethodIsAClearError(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t)})
	tests := []struct {
		name string
		pm   string
	}{
		{"a test name the sandbox does not know", "pm_card_nope"},
		{"an ID that was never created", "pm_1NotARealPaymentMethod"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fp, err := c.CardFingerprint(context.Background(), tc.pm)
			require.Empty(t, fp)
			var r *payments.RejectedError
			require.ErrorAs(t, err, &r, "an unknown payment method is refused for good, not in doubt")
			require.Equal(t, http.StatusNotFound, r.Status)
			require.Contains(t, r.Message, tc.pm)
			require.False(t, errors.Is(err, payments.ErrUnknown))
			require.False(t, errors.Is(err, payments.ErrNotACard))
		})
	}
}

func TestABusyProviderIsRetryableNotARefusal(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{APIKey: key, BaseURL: sandbox(t), Fault: "server_error"})
	_, err := c.CardFingerprint(context.Background(), "pm_card_visa")
	require.Error(t, err)
	var r *payments.RejectedError
	require.False(t, errors.As(err, &r), "a 500 may pass: the caller retries, got %v", err)
}

// fanCard is a distinct Luhn-valid Visa number per fan: a per-fan prefix
// and the check digit.
func fanCard(fan int) string {
	prefix := fmt.Sprintf("499999%09d", fan)
	for d := byte('0'); d <= '9'; d++ {
		n := prefix + string(d)
		sum := 0
		for i := range n {
			v := int(n[len(n)-1-i] - '0')
			if i%2 == 1 {
				if v *= 2; v > 9 {
					v -= 9
				}
			}
			sum += v
		}
		if sum%10 == 0 {
			return n
		}
	}
	panic("unreachable")
}

// createCard creates a card PaymentMethod from a number on the sandbox, as
// load tests do for each fan, and returns its ID.
func createCard(t *testing.T, base, number string) string {
	t.Helper()
	id, err := psp.NewCard(context.Background(), http.DefaultClient, base, key, number, "")
	require.NoError(t, err)
	return id
}

func TestACardCreatedFromANumberHasTheFingerprintOfThatNumber(t *testing.T) {
	t.Parallel()
	base := sandbox(t)
	c := payments.New(payments.Config{APIKey: key, BaseURL: base})
	ctx := context.Background()
	// A "number:" entry is created from that number; others are test methods.
	method := func(t *testing.T, v string) string {
		if number, ok := strings.CutPrefix(v, "number:"); ok {
			return createCard(t, base, number)
		}
		return v
	}
	tests := []struct {
		name          string
		first, second string
		sameCard      bool
	}{
		{"4242 created and pm_card_visa", "number:4242424242424242", "pm_card_visa", true},
		{"0002 created and pm_card_chargeDeclined", "number:4000000000000002", "pm_card_chargeDeclined", true},
		{"one fan's number created twice", "number:" + fanCard(1), "number:" + fanCard(1), true},
		{"two fans' numbers", "number:" + fanCard(1), "number:" + fanCard(2), false},
		{"a fan's number and pm_card_visa", "number:" + fanCard(1), "pm_card_visa", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first, err := c.CardFingerprint(ctx, method(t, tc.first))
			require.NoError(t, err)
			require.Regexp(t, fingerprintShape, first)
			second, err := c.CardFingerprint(ctx, method(t, tc.second))
			require.NoError(t, err)
			if tc.sameCard {
				require.Equal(t, first, second)
			} else {
				require.NotEqual(t, first, second)
			}
		})
	}
}

func TestAuthoriseTakesACardCreatedFromANumber(t *testing.T) {
	t.Parallel()
	base := sandbox(t)
	c := payments.New(payments.Config{APIKey: key, BaseURL: base})
	a, err := c.Authorise(context.Background(), "fan-7:authorise", "fan-7", eur, createCard(t, base, fanCard(7)), "", false)
	require.NoError(t, err)
	require.Equal(t, vocab.IntentRequiresCapture, a.Status)
}
