package psp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
)

func TestVisaManualCaptureFlow(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)

	pi := e.create(t, ctx, manualIntent(4200, map[string]string{"booking_id": "b-1"}))
	require.True(t, strings.HasPrefix(pi.ID, "pi_"))
	require.Equal(t, stripe.PaymentIntentStatusRequiresPaymentMethod, pi.Status)
	require.Equal(t, pi.ID+"_secret_", pi.ClientSecret[:len(pi.ID)+8])
	require.Equal(t, stripe.Currency("eur"), pi.Currency)
	require.Equal(t, stripe.PaymentIntentCaptureMethodManual, pi.CaptureMethod)
	require.Equal(t, "b-1", pi.Metadata["booking_id"])
	require.NotEmpty(t, pi.LastResponse.RequestID)

	pi, err := e.sc.V1PaymentIntents.Confirm(ctx, pi.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")})
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, pi.Status)
	require.EqualValues(t, 4200, pi.AmountCapturable)
	require.EqualValues(t, 0, pi.AmountReceived)
	require.Equal(t, "pm_card_visa", pi.PaymentMethod.ID)
	require.NotNil(t, pi.LatestCharge)
	require.Nil(t, pi.NextAction)

	pi, err = e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, pi.Status)
	require.EqualValues(t, 4200, pi.AmountReceived)
	require.EqualValues(t, 0, pi.AmountCapturable)

	got, err := e.sc.V1PaymentIntents.Retrieve(ctx, pi.ID, &stripe.PaymentIntentRetrieveParams{Expand: []*string{stripe.String("latest_charge"), stripe.String("payment_method")}})
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, got.Status)
	require.True(t, got.LatestCharge.Captured)
	require.EqualValues(t, 4200, got.LatestCharge.AmountCaptured)
	require.Equal(t, "4242", got.PaymentMethod.Card.Last4)

	ch, err := e.sc.V1Charges.Retrieve(ctx, got.LatestCharge.ID, nil)
	require.NoError(t, err)
	require.Equal(t, pi.ID, ch.PaymentIntent.ID)

	// Capturing twice is a state error, as at Stripe.
	_, err = e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
	se := requireStripeError(t, err, 400)
	require.Equal(t, stripe.ErrorCodePaymentIntentUnexpectedState, se.Code)
}

func TestCreateConfirmInOneCallAndAutomaticCapture(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	pi := e.create(t, ctx, confirmedIntent(1500, nil, "pm_card_visa"))
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, pi.Status)

	// Default capture method captures at once.
	pi, err := e.sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{
		Amount: stripe.Int64(900), Currency: stripe.String("EUR"),
		PaymentMethod: stripe.String("pm_card_mastercard"), Confirm: stripe.Bool(true),
	})
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, pi.Status)
	require.EqualValues(t, 900, pi.AmountReceived)
	require.Equal(t, stripe.Currency("eur"), pi.Currency)

	// Partial capture.
	pi = e.create(t, ctx, confirmedIntent(1000, nil, "pm_card_visa"))
	_, err = e.sc.V1PaymentIntents.Capture(ctx, pi.ID, &stripe.PaymentIntentCaptureParams{AmountToCapture: stripe.Int64(2000)})
	require.Error(t, err)
	pi, err = e.sc.V1PaymentIntents.Capture(ctx, pi.ID, &stripe.PaymentIntentCaptureParams{AmountToCapture: stripe.Int64(600)})
	require.NoError(t, err)
	require.EqualValues(t, 600, pi.AmountReceived)
}

func TestDeclines(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	for _, tc := range []struct {
		pm, code, decline string
	}{
		{"pm_card_chargeDeclined", "card_declined", "generic_decline"},
		{"pm_card_chargeDeclinedInsufficientFunds", "card_declined", "insufficient_funds"},
		{"pm_card_chargeDeclinedExpiredCard", "expired_card", "expired_card"},
	} {
		t.Run(tc.pm, func(t *testing.T) {
			t.Parallel()
			pi := e.create(t, ctx, manualIntent(2500, nil))
			_, err := e.sc.V1PaymentIntents.Confirm(ctx, pi.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String(tc.pm)})
			require.Error(t, err)
			se := requireStripeError(t, err, 402)
			require.Equal(t, stripe.ErrorTypeCard, se.Type)
			require.Equal(t, stripe.ErrorCode(tc.code), se.Code)
			require.Equal(t, stripe.DeclineCode(tc.decline), se.DeclineCode)
			var ce *stripe.CardError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, stripe.DeclineCode(tc.decline), ce.DeclineCode)
			require.NotNil(t, se.PaymentIntent)
			require.Equal(t, pi.ID, se.PaymentIntent.ID)
			require.Equal(t, stripe.PaymentIntentStatusRequiresPaymentMethod, se.PaymentIntent.Status)
			require.True(t, strings.HasPrefix(se.ChargeID, "ch_"))

			got, err := e.sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
			require.NoError(t, err)
			require.Equal(t, stripe.PaymentIntentStatusRequiresPaymentMethod, got.Status)
			require.NotNil(t, got.LastPaymentError)
			require.Equal(t, stripe.DeclineCode(tc.decline), got.LastPaymentError.DeclineCode)
			require.Equal(t, stripe.ErrorTypeCard, got.LastPaymentError.Type)
			require.Nil(t, got.PaymentMethod)

			// The fan may retry with another card on the same intent.
			got, err = e.sc.V1PaymentIntents.Confirm(ctx, pi.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")})
			require.NoError(t, err)
			require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, got.Status)
			require.Nil(t, got.LastPaymentError)
		})
	}
	_, err := e.sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(100), Currency: stripe.String("eur"), PaymentMethod: stripe.String("pm_card_bogus")})
	se := requireStripeError(t, err, 404)
	require.Equal(t, stripe.ErrorCodeResourceMissing, se.Code)
}

func TestThreeDSecure(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)

	for _, action := range []string{"complete", "fail"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			p := confirmedIntent(3000, nil, "pm_card_threeDSecure2Required")
			p.ReturnURL = stripe.String("http://127.0.0.1:1/return")
			pi := e.create(t, ctx, p)
			require.Equal(t, stripe.PaymentIntentStatusRequiresAction, pi.Status)
			require.NotNil(t, pi.NextAction)
			require.Equal(t, stripe.PaymentIntentNextActionTypeRedirectToURL, pi.NextAction.Type)
			challenge := pi.NextAction.RedirectToURL.URL
			require.Equal(t, e.ts.URL+"/checkout/"+pi.ID+"/challenge", challenge)
			require.Equal(t, "http://127.0.0.1:1/return", pi.NextAction.RedirectToURL.ReturnURL)

			// Capturing before authentication is refused.
			_, err := e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
			require.Error(t, err)

			code, page := getBody(t, challenge)
			require.Equal(t, 200, code)
			require.Contains(t, page, `value="complete"`)
			require.Contains(t, page, `value="fail"`)

			code, body := postForm(t, challenge, url.Values{"action": {action}})
			require.Equal(t, 200, code, string(body))

			got, err := e.sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
			require.NoError(t, err)
			if action == "complete" {
				require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, got.Status)
				require.EqualValues(t, 3000, got.AmountCapturable)
				require.Nil(t, got.NextAction)
			} else {
				require.Equal(t, stripe.PaymentIntentStatusRequiresPaymentMethod, got.Status)
				require.Equal(t, stripe.ErrorCodePaymentIntentAuthenticationFailure, got.LastPaymentError.Code)
			}
			// A second submission finds nothing pending.
			code, _ = postForm(t, challenge, url.Values{"action": {"complete"}})
			require.Equal(t, 400, code)
		})
	}
}

func TestHostedCheckoutPage(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	p := manualIntent(12345, nil)
	p.Description = stripe.String("2 seats, Encore Demo Night")
	pi := e.create(t, ctx, p)

	page := e.ts.URL + "/checkout/" + pi.ID
	code, _ := getBody(t, page+"?client_secret=wrong")
	require.Equal(t, 404, code)
	code, html := getBody(t, page+"?client_secret="+url.QueryEscape(pi.ClientSecret))
	require.Equal(t, 200, code)
	require.Contains(t, html, "123.45 EUR")
	require.Contains(t, html, "pm_card_visa")
	require.Contains(t, html, "Encore Demo Night")

	code, body := postForm(t, page, url.Values{"client_secret": {pi.ClientSecret}, "payment_method": {"pm_card_chargeDeclined"}})
	require.Equal(t, 402, code, string(body))
	code, body = postForm(t, page, url.Values{"client_secret": {pi.ClientSecret}, "payment_method": {"pm_card_visa"}})
	require.Equal(t, 200, code, string(body))
	var got stripe.PaymentIntent
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, got.Status)

	// A browser following a 3-D Secure card lands on the challenge page.
	pi = e.create(t, ctx, manualIntent(500, nil))
	form := url.Values{"client_secret": {pi.ClientSecret}, "payment_method": {"pm_card_threeDSecure2Required"}}
	resp, err := http.PostForm(e.ts.URL+"/checkout/"+pi.ID, form)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, resp.Request.URL.Path, "/challenge")
	require.Contains(t, string(b), "Complete")
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	pi := e.create(t, ctx, confirmedIntent(2000, nil, "pm_card_visa"))

	pi, err := e.sc.V1PaymentIntents.Cancel(ctx, pi.ID, &stripe.PaymentIntentCancelParams{CancellationReason: stripe.String("abandoned")})
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusCanceled, pi.Status)
	require.Equal(t, stripe.PaymentIntentCancellationReasonAbandoned, pi.CancellationReason)
	require.NotZero(t, pi.CanceledAt)
	require.EqualValues(t, 0, pi.AmountCapturable)

	_, err = e.sc.V1PaymentIntents.Cancel(ctx, pi.ID, nil)
	var se *stripe.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, stripe.ErrorCodePaymentIntentUnexpectedState, se.Code)
	_, err = e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
	require.ErrorAs(t, err, &se)
	require.Equal(t, stripe.ErrorCodePaymentIntentUnexpectedState, se.Code)

	// Unconfirmed intents can be canceled too; succeeded ones cannot.
	pi2 := e.create(t, ctx, manualIntent(100, nil))
	pi2, err = e.sc.V1PaymentIntents.Cancel(ctx, pi2.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusCanceled, pi2.Status)
}

func TestRefunds(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	pi := e.create(t, ctx, confirmedIntent(5000, nil, "pm_card_visa"))

	// Uncaptured: refund is an error (cancel instead).
	_, err := e.sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID)})
	se := requireStripeError(t, err, 400)
	require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type)
	var ire *stripe.InvalidRequestError
	require.ErrorAs(t, err, &ire)

	_, err = e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
	require.NoError(t, err)

	part, err := e.sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID), Amount: stripe.Int64(1000),
		Reason: stripe.String("requested_by_customer"), Metadata: map[string]string{"booking_id": "b-9"}})
	require.NoError(t, err)
	require.Equal(t, stripe.RefundStatusSucceeded, part.Status)
	require.EqualValues(t, 1000, part.Amount)
	require.Equal(t, pi.ID, part.PaymentIntent.ID)
	require.Equal(t, "b-9", part.Metadata["booking_id"])

	_, err = e.sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID), Amount: stripe.Int64(4001)})
	require.ErrorAs(t, err, &se)
	require.Equal(t, stripe.ErrorCodeAmountTooLarge, se.Code)

	full, err := e.sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID)})
	require.NoError(t, err)
	require.EqualValues(t, 4000, full.Amount)

	_, err = e.sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID)})
	require.ErrorAs(t, err, &se)
	require.Equal(t, stripe.ErrorCodeChargeAlreadyRefunded, se.Code)

	got, err := e.sc.V1Refunds.Retrieve(ctx, part.ID, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1000, got.Amount)

	var ids []string
	for rf, err := range e.sc.V1Refunds.List(ctx, &stripe.RefundListParams{PaymentIntent: stripe.String(pi.ID)}).All(ctx) {
		require.NoError(t, err)
		ids = append(ids, rf.ID)
	}
	require.Equal(t, []string{full.ID, part.ID}, ids)

	ch, err := e.sc.V1Charges.Retrieve(ctx, full.Charge.ID, nil)
	require.NoError(t, err)
	require.True(t, ch.Refunded)
	require.EqualValues(t, 5000, ch.AmountRefunded)

	// Full refund of a fresh captured intent in one call.
	pi2 := e.create(t, ctx, confirmedIntent(700, nil, "pm_card_visa"))
	_, err = e.sc.V1PaymentIntents.Capture(ctx, pi2.ID, nil)
	require.NoError(t, err)
	rf, err := e.sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi2.ID)})
	require.NoError(t, err)
	require.EqualValues(t, 700, rf.Amount)
}

func countIntents(t *testing.T, e *env) int {
	t.Helper()
	ctx := ctxT(t)
	n := 0
	for _, err := range e.sc.V1PaymentIntents.List(ctx, &stripe.PaymentIntentListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(3)}}).All(ctx) {
		require.NoError(t, err)
		n++
	}
	return n
}

func TestARepeatedIdempotencyKeyReplaysTheFirstAnswer(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	p := withKey(confirmedIntent(4000, map[string]string{"booking_id": "b-2"}, "pm_card_visa"), "b-2:authorise")
	first := e.create(t, ctx, p)
	require.Empty(t, first.LastResponse.Header.Get("Idempotent-Replayed"))
	require.Equal(t, "b-2:authorise", first.LastResponse.IdempotencyKey)

	p2 := withKey(confirmedIntent(4000, map[string]string{"booking_id": "b-2"}, "pm_card_visa"), "b-2:authorise")
	again := e.create(t, ctx, p2)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, "true", again.LastResponse.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first.LastResponse.RequestID, again.LastResponse.Header.Get("Original-Request"))
	require.Equal(t, 1, countIntents(t, e))

	// A replayed decline is the same decline.
	d := withKey(confirmedIntent(100, nil, "pm_card_chargeDeclined"), "decline-key")
	_, err1 := e.sc.V1PaymentIntents.Create(ctx, d)
	_, err2 := e.sc.V1PaymentIntents.Create(ctx, d)
	var s1, s2 *stripe.Error
	require.ErrorAs(t, err1, &s1)
	require.ErrorAs(t, err2, &s2)
	require.Equal(t, s1.PaymentIntent.ID, s2.PaymentIntent.ID)
	require.Equal(t, "true", s2.LastResponse.Header.Get("Idempotent-Replayed"))
	require.Equal(t, 2, countIntents(t, e))
}

func TestAnIdempotencyKeyReusedWithOtherParamsIsRefused(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	p := withKey(manualIntent(1000, nil), "same-key")
	e.create(t, ctx, p)

	p2 := withKey(manualIntent(2000, nil), "same-key")
	_, err := e.sc.V1PaymentIntents.Create(ctx, p2)
	se := requireStripeError(t, err, 400)
	require.Equal(t, stripe.ErrorTypeIdempotency, se.Type)
	var ie *stripe.IdempotencyError
	require.ErrorAs(t, err, &ie)

	// Same key on another endpoint is also refused.
	pi := e.create(t, ctx, manualIntent(300, nil))
	_, err = e.sc.V1PaymentIntents.Cancel(ctx, pi.ID, &stripe.PaymentIntentCancelParams{Params: stripe.Params{IdempotencyKey: stripe.String("same-key")}})
	require.ErrorAs(t, err, &se)
	require.Equal(t, stripe.ErrorTypeIdempotency, se.Type)
	require.Equal(t, 2, countIntents(t, e))
}

func TestAKeyStillInFlightIsRefusedWithARetryableConflict(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	slow := withKey(manualIntent(1000, nil), "in-flight")
	slow.Headers = faultHeader("latency=400ms")
	done := make(chan *stripe.PaymentIntent, 1)
	go func() {
		pi, err := e.sc.V1PaymentIntents.Create(ctx, slow)
		if err != nil {
			pi = nil
		}
		done <- pi
	}()
	eventually(t, func() bool { return e.idemInFlight("in-flight") }, "the slow request holds the key")
	p := withKey(manualIntent(1000, nil), "in-flight")
	_, err := e.sc.V1PaymentIntents.Create(ctx, p)
	se := requireStripeError(t, err, 409)
	require.Equal(t, stripe.ErrorCodeIdempotencyKeyInUse, se.Code)
	require.Equal(t, "true", se.LastResponse.Header.Get("Stripe-Should-Retry"))

	first := <-done
	require.NotNil(t, first)
	again := e.create(t, ctx, p)
	require.Equal(t, first.ID, again.ID)
}

func TestTimeoutAfterSuccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, 2)
	ctx := ctxT(t)
	pi := e.create(t, ctx, manualIntent(6500, map[string]string{"booking_id": "b-77"}))

	// The confirm succeeds at the provider but the answer never comes: the
	// client gives up (its deadline), stripe-go does not retry that.
	cp := withKey(&stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")}, "b-77:authorise")
	cp.Headers = faultHeader("timeout_after_success")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	_, err := e.sc.V1PaymentIntents.Confirm(short, pi.ID, cp)
	cancel()
	require.Error(t, err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)

	// The provider did act.
	e.awaitStatus(t, pi.ID, stripe.PaymentIntentStatusRequiresCapture)
	got, err := e.sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, got.Status)

	var found []*stripe.PaymentIntent
	search := e.sc.V1PaymentIntents.Search(ctx, &stripe.PaymentIntentSearchParams{SearchParams: stripe.SearchParams{Query: "metadata['booking_id']:'b-77'"}})
	for x, err := range search.All(ctx) {
		require.NoError(t, err)
		found = append(found, x)
	}
	require.Len(t, found, 1)
	require.Equal(t, pi.ID, found[0].ID)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, found[0].Status)

	// Retrying with the same key (and the same parameters) replays the result.
	retry := withKey(&stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")}, "b-77:authorise")
	again, err := e.sc.V1PaymentIntents.Confirm(ctx, pi.ID, retry)
	require.NoError(t, err)
	require.Equal(t, pi.ID, again.ID)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, again.Status)
	require.Equal(t, "true", again.LastResponse.Header.Get("Idempotent-Replayed"))

	// Drop mode: the connection closes at once; stripe-go's own network
	// retry (same Idempotency-Key) receives the replayed response.
	capt := &stripe.PaymentIntentCaptureParams{}
	capt.Headers = faultHeader("timeout_after_success=drop")
	capt.IdempotencyKey = stripe.String("b-77:capture")
	done, err := e.sc.V1PaymentIntents.Capture(ctx, pi.ID, capt)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, done.Status)
	require.Equal(t, "true", done.LastResponse.Header.Get("Idempotent-Replayed"))
}

func TestTimeoutAfterSuccessRateAndMetadata(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	lost := func(call func(ctx context.Context) error) {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, call(short), context.DeadlineExceeded)
	}
	// A fault set in the intent's metadata applies to its later calls.
	p := manualIntent(800, map[string]string{FaultMetadataKey: "timeout_after_success", "booking_id": "b-m"})
	created := e.create(t, ctx, p)
	id := created.ID
	lost(func(ctx context.Context) error {
		_, err := e.sc.V1PaymentIntents.Confirm(ctx, id, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")})
		return err
	})
	e.awaitStatus(t, id, stripe.PaymentIntentStatusRequiresCapture)
	list := e.sc.V1PaymentIntents.Search(ctx, &stripe.PaymentIntentSearchParams{SearchParams: stripe.SearchParams{Query: `metadata["booking_id"]:"b-m"`}})
	require.NoError(t, list.Err())
	require.Len(t, list.Data(), 1)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, list.Data()[0].Status)
	// The update endpoint ignores the fault, so it can be cleared.
	up := &stripe.PaymentIntentUpdateParams{Metadata: map[string]string{FaultMetadataKey: ""}}
	got, err := e.sc.V1PaymentIntents.Update(ctx, id, up)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, got.Status)
	_, ok := got.Metadata[FaultMetadataKey]
	require.False(t, ok)
	_, err = e.sc.V1PaymentIntents.Capture(ctx, id, nil)
	require.NoError(t, err)

	// Configured rate: every confirm and capture loses its response.
	e2 := newEnv(t, Config{Faults: FaultConfig{TimeoutAfterSuccessRate: 1}}, 0)
	pi, err := e2.sc.V1PaymentIntents.Create(ctx, manualIntent(100, nil))
	require.NoError(t, err, "a create without confirm is not subject to the rate")
	lost(func(ctx context.Context) error {
		_, err := e2.sc.V1PaymentIntents.Confirm(ctx, pi.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")})
		return err
	})
	e2.awaitStatus(t, pi.ID, stripe.PaymentIntentStatusRequiresCapture)
	e2.requireStatus(t, ctx, pi.ID, stripe.PaymentIntentStatusRequiresCapture)
	lost(func(ctx context.Context) error { _, err := e2.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil); return err })
	e2.awaitStatus(t, pi.ID, stripe.PaymentIntentStatusSucceeded)
	e2.requireStatus(t, ctx, pi.ID, stripe.PaymentIntentStatusSucceeded)
}

func TestServerError(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	p := withKey(manualIntent(1000, map[string]string{"booking_id": "b-500"}), "k-500")
	p.Headers = faultHeader("server_error")
	_, err := e.sc.V1PaymentIntents.Create(ctx, p)
	se := requireStripeError(t, err, 500)
	require.Equal(t, stripe.ErrorTypeAPI, se.Type)
	require.Equal(t, 0, countIntents(t, e), "a 500 fault happens before acting")

	p.Headers = nil
	pi, err := e.sc.V1PaymentIntents.Create(ctx, p)
	require.NoError(t, err, "the retry with the same key executes")
	require.Empty(t, pi.LastResponse.Header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, countIntents(t, e))

	// Reads can fail too.
	_, err = e.sc.V1PaymentIntents.Retrieve(ctx, pi.ID, &stripe.PaymentIntentRetrieveParams{Params: stripe.Params{Headers: faultHeader("server_error")}})
	se = requireStripeError(t, err, 500)

	// Configured rate.
	e2 := newEnv(t, Config{Faults: FaultConfig{ServerErrorRate: 1}}, 0)
	_, err = e2.sc.V1PaymentIntents.Create(ctx, manualIntent(100, nil))
	se = requireStripeError(t, err, 500)

	// A typo in the fault header is reported, not ignored.
	p = manualIntent(100, nil)
	p.Headers = faultHeader("sever_error")
	_, err = e.sc.V1PaymentIntents.Create(ctx, p)
	se = requireStripeError(t, err, 400)
}

func TestInjectedLatencyDelaysTheAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Faults: FaultConfig{Latency: 50 * time.Millisecond}}, 0)
	ctx := ctxT(t)
	start := time.Now()
	p := manualIntent(100, nil)
	p.Headers = faultHeader("latency=150ms")
	pi := e.create(t, ctx, p)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	start = time.Now()
	_, err := e.sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{APIKey: "sk_test_right_key_123"}, 0)
	ctx := ctxT(t)
	bad := newClient(e.ts.URL, "sk_test_wrong_key_456", 0)
	_, err := bad.V1PaymentIntents.Create(ctx, manualIntent(100, nil))
	se := requireStripeError(t, err, 401)
	require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type)
	require.NotContains(t, se.Msg, "wrong_key")

	e.create(t, ctx, manualIntent(100, nil))

	resp, err := http.Get(e.ts.URL + "/v1/payment_intents")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 401, resp.StatusCode)

	_, err = e.sc.V1PaymentIntents.Retrieve(ctx, "pi_missing", nil)
	se = requireStripeError(t, err, 404)
	require.Equal(t, stripe.ErrorCodeResourceMissing, se.Code)
}

func TestListAndSearch(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	var ids []string
	for i := 0; i < 7; i++ {
		booking := "b-" + string(rune('a'+i))
		p := manualIntent(int64(1000+i), map[string]string{"booking_id": booking, "event": "demo"})
		if i%2 == 0 {
			p.PaymentMethod = stripe.String("pm_card_visa")
			p.Confirm = stripe.Bool(true)
		}
		pi := e.create(t, ctx, p)
		ids = append(ids, pi.ID)
	}
	var listed []string
	for pi, err := range e.sc.V1PaymentIntents.List(ctx, &stripe.PaymentIntentListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(2)}}).All(ctx) {
		require.NoError(t, err)
		listed = append(listed, pi.ID)
	}
	want := append([]string(nil), ids...)
	for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
		want[i], want[j] = want[j], want[i]
	}
	require.Equal(t, want, listed, "newest first, across pages")

	// ending_before walks towards newer intents.
	var newer []string
	for pi, err := range e.sc.V1PaymentIntents.List(ctx, &stripe.PaymentIntentListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(2), EndingBefore: stripe.String(ids[2])}}).All(ctx) {
		require.NoError(t, err)
		newer = append(newer, pi.ID)
	}
	require.Equal(t, ids[3:], newer)

	search := func(q string) []string {
		var out []string
		for pi, err := range e.sc.V1PaymentIntents.Search(ctx, &stripe.PaymentIntentSearchParams{SearchParams: stripe.SearchParams{Query: q, Limit: stripe.Int64(2)}}).All(ctx) {
			require.NoError(t, err)
			out = append(out, pi.ID)
		}
		return out
	}
	require.Equal(t, []string{ids[3]}, search("metadata['booking_id']:'b-d'"))
	require.Equal(t, []string{ids[6], ids[4], ids[2], ids[0]}, search("metadata['event']:'demo' AND status:'requires_capture'"))
	require.Equal(t, []string{ids[6], ids[5]}, search("amount>=1005"))
	require.Equal(t, []string{ids[1], ids[0]}, search("metadata['booking_id']:'b-a' OR metadata['booking_id']:'b-b'"))
	require.Len(t, search("-status:'requires_capture'"), 3)
	require.Empty(t, search("metadata['booking_id']:'nope'"))

	bad := e.sc.V1PaymentIntents.Search(ctx, &stripe.PaymentIntentSearchParams{SearchParams: stripe.SearchParams{Query: "status:'x' AND amount>1 OR currency:'eur'"}})
	require.Error(t, bad.Err())
	bad = e.sc.V1PaymentIntents.Search(ctx, &stripe.PaymentIntentSearchParams{SearchParams: stripe.SearchParams{Query: "customer:'cus_1'"}})
	require.Error(t, bad.Err())
}

func TestUnknownRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, 0)
	req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/v1/customers", nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode)
	var body struct {
		Error struct{ Type, Message string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "invalid_request_error", body.Error.Type)

	resp2, err := http.Get(e.ts.URL + "/healthz")
	require.NoError(t, err)
	resp2.Body.Close()
	require.Equal(t, 200, resp2.StatusCode)
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	_, err := New(Config{WebhookURL: "not a url"})
	require.Error(t, err)
	_, err = New(Config{Faults: FaultConfig{ServerErrorRate: 2}})
	require.Error(t, err)
	_, err = New(Config{Faults: FaultConfig{TimeoutMode: "explode"}})
	require.Error(t, err)
}

func TestParseFaults(t *testing.T) {
	t.Parallel()
	f, err := parseFaults("timeout_after_success=drop, latency=200ms;duplicate_webhook out_of_order_webhook,delay_webhook=2s,server_error")
	require.NoError(t, err)
	require.True(t, f.timeout)
	require.Equal(t, TimeoutDrop, f.timeoutMode)
	require.Equal(t, 200*time.Millisecond, f.latency)
	require.True(t, f.duplicate && f.outOfOrder && f.serverError && f.hasDelay)
	require.Equal(t, 2*time.Second, f.delay)
	f, err = parseFaults("timeout_after_success=3s")
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, f.timeoutHold)
	for _, bad := range []string{"latency", "latency=fast", "delay_webhook=-1s", "explode", "timeout_after_success=maybe"} {
		_, err := parseFaults(bad)
		require.Error(t, err, bad)
	}
}

func TestAnExpiredIdempotencyKeyMayBeReused(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	e := newEnv(t, Config{Clock: clock}, 0)
	ctx := ctxT(t)
	p := withKey(manualIntent(100, nil), "old-key")
	first := e.create(t, ctx, p)
	offset.Store(int64(IdempotencyTTL + time.Hour))
	p2 := withKey(manualIntent(200, nil), "old-key")
	second, err := e.sc.V1PaymentIntents.Create(ctx, p2)
	require.NoError(t, err, "an expired key may be reused")
	require.NotEqual(t, first.ID, second.ID)
}

// TestConcurrentBookingsUnderFaults runs many bookings in parallel against
// injected server errors, retrying each step with its step key, and checks
// that every booking maps to exactly one captured intent.
func TestConcurrentBookingsUnderFaults(t *testing.T) {
	t.Parallel()
	e, rc := webhookEnv(t, Config{Faults: FaultConfig{ServerErrorRate: 0.3, DuplicateWebhookRate: 0.2, Seed: 42}})
	ctx := ctxT(t)
	const bookings = 40
	retry := func(call func() error) error {
		for {
			err := call()
			var se *stripe.Error
			if errors.As(err, &se) && se.HTTPStatusCode == 500 {
				continue
			}
			return err
		}
	}
	var wg sync.WaitGroup
	ids := make([]string, bookings)
	errs := make(chan error, bookings)
	for i := 0; i < bookings; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b := "bk-" + strconv.Itoa(i)
			var pi *stripe.PaymentIntent
			err := retry(func() error {
				p := withKey(confirmedIntent(int64(1000+i), map[string]string{"booking_id": b}, "pm_card_visa"), b+":authorise")
				var err error
				pi, err = e.sc.V1PaymentIntents.Create(ctx, p)
				return err
			})
			if err != nil {
				errs <- err
				return
			}
			err = retry(func() error {
				cp := withKey(&stripe.PaymentIntentCaptureParams{}, b+":capture")
				_, err := e.sc.V1PaymentIntents.Capture(ctx, pi.ID, cp)
				return err
			})
			if err != nil {
				errs <- err
				return
			}
			ids[i] = pi.ID
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	e.srv.mu.Lock()
	require.Len(t, e.srv.intents, bookings)
	for _, pi := range e.srv.intents {
		require.Equal(t, StatusSucceeded, pi.Status)
	}
	e.srv.mu.Unlock()
	eventually(t, func() bool {
		seen := map[string]bool{}
		for _, r := range rc.events() {
			if r.Event.Type == stripe.EventTypePaymentIntentSucceeded {
				seen[r.Event.Data.Object["id"].(string)] = true
			}
		}
		return len(seen) == bookings
	}, "a succeeded event per booking")
	rc.requireClean()
}
