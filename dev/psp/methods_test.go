package psp

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
)

// withCheckDigit completes a prefix of digits into a Luhn-valid number.
func withCheckDigit(prefix string) string {
	for d := '0'; d <= '9'; d++ {
		if n := prefix + string(d); luhnValid(n) {
			return n
		}
	}
	panic("unreachable")
}

// fanCard is a distinct Luhn-valid 16-digit Visa number per fan, the way a
// load test makes one card per fan.
func fanCard(fan int) string { return withCheckDigit(fmt.Sprintf("499999%09d", fan)) }

func cardParams(number string) *stripe.PaymentMethodCreateParams {
	return &stripe.PaymentMethodCreateParams{
		Type: stripe.String("card"),
		Card: &stripe.PaymentMethodCreateCardParams{
			Number:   stripe.String(number),
			ExpMonth: stripe.Int64(12),
			ExpYear:  stripe.Int64(2034),
			CVC:      stripe.String("123"),
		},
	}
}

func (e *env) createCard(t *testing.T, number string) *stripe.PaymentMethod {
	t.Helper()
	pm, err := e.sc.V1PaymentMethods.Create(ctxT(t), cardParams(number))
	require.NoError(t, err)
	return pm
}

func TestACreatedCardIsConfirmedAndCapturedWhereverItIsAttached(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	tests := []struct {
		name   string
		attach func(t *testing.T, pm string) *stripe.PaymentIntent
	}{
		{"on create with confirm", func(t *testing.T, pm string) *stripe.PaymentIntent {
			return e.create(t, ctx, confirmedIntent(4200, nil, pm))
		}},
		{"on update, then confirm", func(t *testing.T, pm string) *stripe.PaymentIntent {
			pi := e.create(t, ctx, manualIntent(4200, nil))
			_, err := e.sc.V1PaymentIntents.Update(ctx, pi.ID, &stripe.PaymentIntentUpdateParams{PaymentMethod: stripe.String(pm)})
			require.NoError(t, err)
			pi, err = e.sc.V1PaymentIntents.Confirm(ctx, pi.ID, nil)
			require.NoError(t, err)
			return pi
		}},
		{"on confirm", func(t *testing.T, pm string) *stripe.PaymentIntent {
			pi := e.create(t, ctx, manualIntent(4200, nil))
			pi, err := e.sc.V1PaymentIntents.Confirm(ctx, pi.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String(pm)})
			require.NoError(t, err)
			return pi
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			number := fanCard(i + 1)
			p := cardParams(number)
			p.Card.ExpMonth, p.Card.ExpYear = stripe.Int64(3), stripe.Int64(2031)
			pm, err := e.sc.V1PaymentMethods.Create(ctx, p)
			require.NoError(t, err)
			require.Regexp(t, `^pm_[0-9A-Za-z]{24}$`, pm.ID)
			require.Equal(t, stripe.PaymentMethodTypeCard, pm.Type)
			require.Equal(t, number[len(number)-4:], pm.Card.Last4)
			require.EqualValues(t, "visa", pm.Card.Brand)
			require.EqualValues(t, 3, pm.Card.ExpMonth)
			require.EqualValues(t, 2031, pm.Card.ExpYear)
			require.Regexp(t, fingerprintShape, pm.Card.Fingerprint)

			pi := tc.attach(t, pm.ID)
			require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, pi.Status)
			_, err = e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
			require.NoError(t, err)

			got, err := e.sc.V1PaymentIntents.Retrieve(ctx, pi.ID, &stripe.PaymentIntentRetrieveParams{
				Expand: []*string{stripe.String("latest_charge"), stripe.String("payment_method")}})
			require.NoError(t, err)
			require.Equal(t, stripe.PaymentIntentStatusSucceeded, got.Status)
			require.EqualValues(t, 4200, got.AmountReceived)
			require.Equal(t, pm.ID, got.PaymentMethod.ID)
			require.Equal(t, pm.Card.Fingerprint, got.PaymentMethod.Card.Fingerprint, "expand[]=payment_method")
			details := got.LatestCharge.PaymentMethodDetails.Card
			require.Equal(t, pm.Card.Fingerprint, details.Fingerprint, "payment_method_details.card")
			require.Equal(t, pm.Card.Last4, details.Last4)
			require.EqualValues(t, 3, details.ExpMonth)
			require.EqualValues(t, 2031, details.ExpYear)

			again, err := e.sc.V1PaymentMethods.Retrieve(ctx, pm.ID, nil)
			require.NoError(t, err)
			require.Equal(t, pm.Card.Fingerprint, again.Card.Fingerprint)
			require.Equal(t, pm.Created, again.Created)
		})
	}
}

// outcome is what confirming a manual-capture intent with a payment method
// gave: the status, or the error's code and decline code.
type outcome struct {
	Status      stripe.PaymentIntentStatus
	Code        stripe.ErrorCode
	DeclineCode stripe.DeclineCode
}

func (e *env) confirmOutcome(t *testing.T, pm string) outcome {
	t.Helper()
	p := confirmedIntent(1500, nil, pm)
	pi, err := e.sc.V1PaymentIntents.Create(ctxT(t), p)
	if err != nil {
		var se *stripe.Error
		require.ErrorAs(t, err, &se)
		return outcome{Status: se.PaymentIntent.Status, Code: se.Code, DeclineCode: se.DeclineCode}
	}
	return outcome{Status: pi.Status}
}

func TestACreatedCardWithATestCardsNumberBehavesLikeThatTestCard(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, 0)
	tests := []struct {
		like string
		want outcome
	}{
		{"pm_card_visa", outcome{Status: stripe.PaymentIntentStatusRequiresCapture}},
		{"pm_card_amex", outcome{Status: stripe.PaymentIntentStatusRequiresCapture}},
		{"pm_card_mastercard_prepaid", outcome{Status: stripe.PaymentIntentStatusRequiresCapture}},
		{"pm_card_br", outcome{Status: stripe.PaymentIntentStatusRequiresCapture}},
		{"pm_card_chargeDeclined", outcome{stripe.PaymentIntentStatusRequiresPaymentMethod, stripe.ErrorCodeCardDeclined, stripe.DeclineCodeGenericDecline}},
		{"pm_card_chargeDeclinedInsufficientFunds", outcome{stripe.PaymentIntentStatusRequiresPaymentMethod, stripe.ErrorCodeCardDeclined, stripe.DeclineCodeInsufficientFunds}},
		{"pm_card_chargeDeclinedExpiredCard", outcome{stripe.PaymentIntentStatusRequiresPaymentMethod, stripe.ErrorCodeExpiredCard, stripe.DeclineCodeExpiredCard}},
		{"pm_card_threeDSecure2Required", outcome{Status: stripe.PaymentIntentStatusRequiresAction}},
	}
	for _, tc := range tests {
		t.Run(tc.like, func(t *testing.T) {
			t.Parallel()
			created := e.createCard(t, testCards[tc.like].Number)
			fixed, err := e.sc.V1PaymentMethods.Retrieve(ctxT(t), tc.like, nil)
			require.NoError(t, err)
			require.Equal(t, fixed.Card.Brand, created.Card.Brand)
			require.Equal(t, fixed.Card.Funding, created.Card.Funding)
			require.Equal(t, fixed.Card.Country, created.Card.Country)
			require.Equal(t, fixed.Card.Last4, created.Card.Last4)
			require.Equal(t, fixed.Card.Fingerprint, created.Card.Fingerprint)

			require.Equal(t, tc.want, e.confirmOutcome(t, tc.like), "the fixed test method")
			require.Equal(t, tc.want, e.confirmOutcome(t, created.ID), "the created method")
		})
	}
}

func TestEveryTestCardNumberCanBeCreated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, 0)
	for _, id := range sortedCardIDs() {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			pm := e.createCard(t, testCards[id].Number)
			require.Equal(t, testCards[id].fingerprint(), pm.Card.Fingerprint)
		})
	}
}

func TestACreatedCardSharesAFingerprintExactlyWhenItSharesACardNumber(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, 0)
	visa, err := e.sc.V1PaymentMethods.Retrieve(ctxT(t), "pm_card_visa", nil)
	require.NoError(t, err)

	created4242 := e.createCard(t, "4242424242424242")
	require.NotEqual(t, "pm_card_visa", created4242.ID)
	require.Equal(t, visa.Card.Fingerprint, created4242.Card.Fingerprint, "a created 4242 is pm_card_visa's card")

	first, second := e.createCard(t, fanCard(1)), e.createCard(t, fanCard(2))
	require.NotEqual(t, first.Card.Fingerprint, second.Card.Fingerprint, "two fans' numbers are two cards")
	require.NotEqual(t, visa.Card.Fingerprint, first.Card.Fingerprint)

	firstAgain := e.createCard(t, fanCard(1))
	require.NotEqual(t, first.ID, firstAgain.ID, "each create is a new PaymentMethod")
	require.Equal(t, first.Card.Fingerprint, firstAgain.Card.Fingerprint, "of the same card")
}

func TestOneThousandFansGetOneThousandFingerprints(t *testing.T) {
	t.Parallel()
	seen := map[string]int{}
	for fan := range 1000 {
		c := cardForNumber(fanCard(fan))
		other, dup := seen[c.fingerprint()]
		require.False(t, dup, "fans %d and %d share a fingerprint", other, fan)
		seen[c.fingerprint()] = fan
	}
}

func TestAnyOtherNumberIsASuccessfulCardBrandedByItsPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, 0)
	tests := []struct {
		prefix string
		brand  stripe.PaymentMethodCardBrand
	}{
		{"411111111111111", "visa"},
		{"510000000000000", "mastercard"},
		{"550000000000000", "mastercard"},
		{"222100000000000", "mastercard"},
		{"272000000000000", "mastercard"},
		{"34000000000000", "amex"},
		{"37000000000000", "amex"},
		{"601100000000000", "discover"},
		{"650000000000000", "discover"},
		{"560000000000000", "unknown"},
		{"272100000000000", "unknown"},
		{"35280000000000", "unknown"},
		{"10000000000", "unknown"}, // 12 digits, the shortest number taken
	}
	for _, tc := range tests {
		number := withCheckDigit(tc.prefix)
		t.Run(number, func(t *testing.T) {
			t.Parallel()
			pm := e.createCard(t, number)
			require.Equal(t, tc.brand, pm.Card.Brand)
			require.Equal(t, number[len(number)-4:], pm.Card.Last4)
			require.Equal(t, stripe.CardFundingCredit, pm.Card.Funding)
			require.Equal(t, "US", pm.Card.Country)
			require.Equal(t, outcome{Status: stripe.PaymentIntentStatusRequiresCapture}, e.confirmOutcome(t, pm.ID))
		})
	}
}

// sandboxNow is the fixed time of the validation tests: June 2031.
var sandboxNow = time.Date(2031, time.June, 15, 12, 0, 0, 0, time.UTC)

func TestAnUnusableCardIsAStripeShapedErrorNamingItsParameter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Clock: func() time.Time { return sandboxNow }}, 0)
	type card struct {
		number, cvc     string
		month, year     int64
		typ             string
		noMonth, noYear bool
	}
	valid := card{number: "4242424242424242", cvc: "123", month: 12, year: 2034, typ: "card"}
	with := func(f func(*card)) card { c := valid; f(&c); return c }
	tests := []struct {
		name   string
		card   card
		status int
		typ    stripe.ErrorType
		code   stripe.ErrorCode
		param  string
	}{
		{"a number with letters", with(func(c *card) { c.number = "4242a24242424242" }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidNumber, "card[number]"},
		{"a number with spaces", with(func(c *card) { c.number = "4242 4242 4242 4242" }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidNumber, "card[number]"},
		{"a number of 11 digits", with(func(c *card) { c.number = withCheckDigit("4242424242") }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidNumber, "card[number]"},
		{"a number of 20 digits", with(func(c *card) { c.number = withCheckDigit("4242424242424242424") }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidNumber, "card[number]"},
		{"a number failing the Luhn check", with(func(c *card) { c.number = "4242424242424241" }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeIncorrectNumber, "card[number]"},
		{"month 0", with(func(c *card) { c.month = 0 }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidExpiryMonth, "card[exp_month]"},
		{"month 13", with(func(c *card) { c.month = 13 }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidExpiryMonth, "card[exp_month]"},
		{"last month", with(func(c *card) { c.month, c.year = 5, 2031 }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidExpiryMonth, "card[exp_month]"},
		{"last year", with(func(c *card) { c.year = 2030 }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidExpiryYear, "card[exp_year]"},
		{"last year in two digits", with(func(c *card) { c.year = 30 }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidExpiryYear, "card[exp_year]"},
		{"more than fifty years ahead", with(func(c *card) { c.year = 2082 }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidExpiryYear, "card[exp_year]"},
		{"a cvc of 2 digits", with(func(c *card) { c.cvc = "12" }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidCVC, "card[cvc]"},
		{"a cvc of 5 digits", with(func(c *card) { c.cvc = "12345" }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidCVC, "card[cvc]"},
		{"a cvc with a letter", with(func(c *card) { c.cvc = "12a" }), 402, stripe.ErrorTypeCard, stripe.ErrorCodeInvalidCVC, "card[cvc]"},
		{"no number", with(func(c *card) { c.number = "" }), 400, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeParameterMissing, "card[number]"},
		{"no expiry month", with(func(c *card) { c.noMonth = true }), 400, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeParameterMissing, "card[exp_month]"},
		{"no expiry year", with(func(c *card) { c.noYear = true }), 400, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeParameterMissing, "card[exp_year]"},
		{"no type", with(func(c *card) { c.typ = "" }), 400, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeParameterMissing, "type"},
		{"a type other than card", with(func(c *card) { c.typ = "sepa_debit" }), 400, stripe.ErrorTypeInvalidRequest, stripe.ErrorCode("parameter_invalid"), "type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &stripe.PaymentMethodCreateParams{Card: &stripe.PaymentMethodCreateCardParams{}}
			if tc.card.typ != "" {
				p.Type = stripe.String(tc.card.typ)
			}
			if tc.card.number != "" {
				p.Card.Number = stripe.String(tc.card.number)
			}
			if !tc.card.noMonth {
				p.Card.ExpMonth = stripe.Int64(tc.card.month)
			}
			if !tc.card.noYear {
				p.Card.ExpYear = stripe.Int64(tc.card.year)
			}
			p.Card.CVC = stripe.String(tc.card.cvc)
			_, err := e.sc.V1PaymentMethods.Create(ctxT(t), p)
			se := requireStripeError(t, err, tc.status)
			require.Equal(t, tc.typ, se.Type)
			require.Equal(t, tc.code, se.Code)
			require.Equal(t, tc.param, se.Param)
			require.NotEmpty(t, se.Msg)
		})
	}
}

func TestACardExpiringThisMonthOrInTwoDigitYearsIsTaken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Clock: func() time.Time { return sandboxNow }}, 0)
	tests := []struct {
		name             string
		month, year      int64
		wantMonth, wantY int64
	}{
		{"this month", 6, 2031, 6, 2031},
		{"two-digit year", 1, 32, 1, 2032},
		{"fifty years ahead", 12, 2081, 12, 2081},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := cardParams(fanCard(7))
			p.Card.ExpMonth, p.Card.ExpYear = stripe.Int64(tc.month), stripe.Int64(tc.year)
			pm, err := e.sc.V1PaymentMethods.Create(ctxT(t), p)
			require.NoError(t, err)
			require.Equal(t, tc.wantMonth, pm.Card.ExpMonth)
			require.Equal(t, tc.wantY, pm.Card.ExpYear)
		})
	}
}

func TestCreatingACardTwiceWithOneIdempotencyKeyReturnsTheSameMethod(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	create := func(number, key string) (*stripe.PaymentMethod, error) {
		p := cardParams(number)
		p.IdempotencyKey = stripe.String(key)
		return e.sc.V1PaymentMethods.Create(ctx, p)
	}
	first, err := create(fanCard(1), "fan-1:card")
	require.NoError(t, err)
	again, err := create(fanCard(1), "fan-1:card")
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, "true", again.LastResponse.Header.Get("Idempotent-Replayed"))

	_, err = create(fanCard(2), "fan-1:card")
	var se *stripe.Error
	require.ErrorAs(t, err, &se, "the same key with another card number is refused")
	require.Equal(t, stripe.ErrorTypeIdempotency, se.Type)

	other, err := create(fanCard(1), "fan-1:second-card")
	require.NoError(t, err)
	require.NotEqual(t, first.ID, other.ID)
}

func TestACreatedCardSurvivesARestartWithoutItsNumberBeingStored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "psp.json")
	cfg := Config{StatePath: path}
	number := fanCard(42)
	const cvc = "987"
	ctx := ctxT(t)

	e1 := newEnv(t, cfg, 0)
	// The same request before and after the restart, under one key.
	params := func() *stripe.PaymentMethodCreateParams {
		p := cardParams(number)
		p.Card.CVC = stripe.String(cvc)
		p.Card.ExpMonth, p.Card.ExpYear = stripe.Int64(7), stripe.Int64(2033)
		p.Metadata = map[string]string{"fan": "42"}
		return withKey(p, "fan-42:card")
	}
	pm, err := e1.sc.V1PaymentMethods.Create(ctx, params())
	require.NoError(t, err)

	// A crash copy: snapshot and journal as they are before shutdown.
	crash := filepath.Join(dir, "crash", "psp.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(crash), 0o755))
	for _, suffix := range []string{"", ".journal"} {
		b, err := os.ReadFile(path + suffix)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(crash+suffix, b, 0o600))
	}

	e1.ts.Close()
	require.NoError(t, e1.srv.Close())
	for _, file := range []string{path, path + ".journal", crash, crash + ".journal"} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		require.False(t, bytes.Contains(b, []byte(number)), "%s holds the card number", file)
		require.False(t, bytes.Contains(b, []byte(`"`+cvc+`"`)), "%s holds the CVC", file)
	}

	lives := []struct{ name, path string }{
		{"after a clean shutdown, from the snapshot", path},
		{"after a crash, from the journal", crash},
	}
	for _, life := range lives {
		t.Run(life.name, func(t *testing.T) {
			t.Parallel()
			e2 := newEnv(t, Config{StatePath: life.path}, 0)
			got, err := e2.sc.V1PaymentMethods.Retrieve(ctx, pm.ID, nil)
			require.NoError(t, err)
			require.Equal(t, pm.Card.Fingerprint, got.Card.Fingerprint)
			require.Equal(t, pm.Card.Last4, got.Card.Last4)
			require.EqualValues(t, 7, got.Card.ExpMonth)
			require.EqualValues(t, 2033, got.Card.ExpYear)
			require.Equal(t, pm.Created, got.Created)
			require.Equal(t, map[string]string{"fan": "42"}, got.Metadata)

			again, err := e2.sc.V1PaymentMethods.Create(ctx, params())
			require.NoError(t, err)
			require.Equal(t, pm.ID, again.ID, "the idempotency key outlives the restart")

			require.Equal(t, outcome{Status: stripe.PaymentIntentStatusRequiresCapture}, e2.confirmOutcome(t, pm.ID))
		})
	}
}

func TestIdempotencyParamsHashTheCardNumberAndCVC(t *testing.T) {
	t.Parallel()
	f := url.Values{"type": {"card"}, "card[number]": {"4242424242424242"}, "card[cvc]": {"123"}, "card[exp_month]": {"12"}}
	got := canonicalParams(f)
	require.NotContains(t, got, "4242424242424242")
	require.NotContains(t, got, "=123")
	require.Contains(t, got, "card%5Bexp_month%5D=12")
	require.Equal(t, "4242424242424242", f.Get("card[number]"), "the request's own form is left alone")
	other := url.Values{"type": {"card"}, "card[number]": {"4000000000000002"}, "card[cvc]": {"123"}, "card[exp_month]": {"12"}}
	require.NotEqual(t, got, canonicalParams(other))
}

// FuzzCreatePaymentMethod: any card parameters either give a Stripe-shaped
// error naming a parameter, or a card whose last4, fingerprint, brand and
// expiry follow from a valid number and a future expiry.
func FuzzCreatePaymentMethod(f *testing.F) {
	for _, c := range testCards {
		f.Add("card", c.Number, "12", "2034", "123")
	}
	f.Add("card", "4242424242424241", "12", "34", "")
	f.Add("card", "4242 4242 4242 4242", "1", "2031", "1234")
	f.Add("card", "42424242424242424242", "13", "2030", "12")
	f.Add("card", "000000000000", "0", "-1", "abcd")
	f.Add("card", "", "", "", "")
	f.Add("sepa_debit", "4242424242424242", "12", "2034", "123")
	f.Add("card", "4242424242424242", "6", "99999999999999999999", "123")
	f.Add("card", "4242424242424242", "+6", "2031", "123")
	f.Fuzz(func(t *testing.T, typ, number, month, year, cvc string) {
		form := url.Values{"type": {typ}, "card[number]": {number}, "card[exp_month]": {month}, "card[exp_year]": {year}, "card[cvc]": {cvc}}
		c, e := parseCardParams(form, sandboxNow)
		if e != nil {
			require.Contains(t, []int{400, 402}, e.Status)
			require.Contains(t, []string{"invalid_request_error", "card_error"}, e.Err.Type)
			require.NotEmpty(t, e.Err.Code)
			require.Contains(t, []string{"type", "card[token]", "card[number]", "card[exp_month]", "card[exp_year]", "card[cvc]"}, e.Err.Param)
			require.NotEmpty(t, e.Err.Message)
			return
		}
		require.Equal(t, "card", typ)
		require.True(t, allDigits(number) && len(number) >= 12 && len(number) <= 19 && luhnValid(number))
		require.Empty(t, c.Number, "the number is not kept")
		require.Equal(t, number[len(number)-4:], c.Last4)
		require.Equal(t, fingerprintOf(number), c.fingerprint())
		require.Regexp(t, fingerprintShape, c.fingerprint())
		require.Contains(t, []string{"visa", "mastercard", "amex", "discover", "diners", "jcb", "unionpay", "unknown"}, c.Brand)
		require.Contains(t, []string{"succeed", "decline", "3ds"}, c.Outcome)
		require.GreaterOrEqual(t, c.ExpMonth, int64(1))
		require.LessOrEqual(t, c.ExpMonth, int64(12))
		require.GreaterOrEqual(t, c.ExpYear*12+c.ExpMonth, int64(sandboxNow.Year())*12+int64(sandboxNow.Month()), "not expired")
		require.LessOrEqual(t, c.ExpYear, int64(sandboxNow.Year()+50))
		require.Equal(t, cvc == "", c.NoCVC)
		if cvc != "" {
			_, err := strconv.Atoi(cvc)
			require.NoError(t, err)
			require.True(t, allDigits(cvc))
		}
	})
}
