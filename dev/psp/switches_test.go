package psp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
)

// setFaults sets the sandbox's runtime switches through the Go client and
// requires them in force.
func (e *env) setFaults(t *testing.T, ctx context.Context, f Faults) {
	t.Helper()
	got, err := SetFaults(ctx, e.ts.URL, f)
	require.NoError(t, err)
	require.Equal(t, f, got)
}

// requireUnavailable requires err to be the 503 api_error an unavailable
// API answers, as stripe-go surfaces it.
func requireUnavailable(t *testing.T, err error, switchName string) {
	t.Helper()
	se := requireStripeError(t, err, http.StatusServiceUnavailable)
	require.Equal(t, stripe.ErrorTypeAPI, se.Type)
	var apiErr *stripe.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Contains(t, se.Msg, switchName)
}

// postFaults sends body to the fault switches with the content type and
// returns the status, the content type and the decoded answer.
func postFaults(t *testing.T, ctx context.Context, base, contentType, body string) (int, string, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+FaultsPath, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, answer := do(t, req)
	var out map[string]any
	require.NoError(t, json.Unmarshal(answer, &out))
	return resp.StatusCode, resp.Header.Get("Content-Type"), out
}

func TestWithCaptureUnavailableACaptureFailsAndSucceedsOnceTheSwitchIsOff(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	pi := e.create(t, ctx, confirmedIntent(4500, nil, "pm_card_visa"))
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, pi.Status)

	e.setFaults(t, ctx, Faults{CaptureUnavailable: true})
	capture := withKey(&stripe.PaymentIntentCaptureParams{}, "booking-1:capture")
	_, err := e.sc.V1PaymentIntents.Capture(ctx, pi.ID, capture)
	requireUnavailable(t, err, "capture_unavailable")
	_, err = e.sc.V1PaymentIntents.Capture(ctx, pi.ID, capture)
	requireUnavailable(t, err, "capture_unavailable")
	e.requireStatus(t, ctx, pi.ID, stripe.PaymentIntentStatusRequiresCapture)

	e.setFaults(t, ctx, Faults{})
	captured, err := e.sc.V1PaymentIntents.Capture(ctx, pi.ID, capture)
	require.NoError(t, err, "the same capture, same key, acts once the switch is off")
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, captured.Status)
	require.Empty(t, captured.LastResponse.Header.Get("Idempotent-Replayed"), "the 503s stored nothing under the key")
	require.EqualValues(t, 4500, captured.AmountReceived)
}

func TestWithAuthoriseUnavailableNoIntentIsCreatedOrConfirmedUntilTheSwitchIsOff(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	unconfirmed := e.create(t, ctx, manualIntent(1200, nil))

	e.setFaults(t, ctx, Faults{AuthoriseUnavailable: true})
	create := withKey(confirmedIntent(3000, map[string]string{"booking_id": "b-auth"}, "pm_card_visa"), "b-auth:authorise")
	_, err := e.sc.V1PaymentIntents.Create(ctx, create)
	requireUnavailable(t, err, "authorise_unavailable")
	require.Equal(t, 1, countIntents(t, e), "the unavailable create made no intent")

	confirm := &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")}
	_, err = e.sc.V1PaymentIntents.Confirm(ctx, unconfirmed.ID, confirm)
	requireUnavailable(t, err, "authorise_unavailable")
	e.requireStatus(t, ctx, unconfirmed.ID, unconfirmed.Status)

	// Other calls go on: reads, updates and captures are not authorisations.
	_, err = e.sc.V1PaymentIntents.Update(ctx, unconfirmed.ID, &stripe.PaymentIntentUpdateParams{Description: stripe.String("still here")})
	require.NoError(t, err)

	e.setFaults(t, ctx, Faults{})
	pi, err := e.sc.V1PaymentIntents.Create(ctx, create)
	require.NoError(t, err, "the same create, same key, acts once the switch is off")
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, pi.Status)
	pi, err = e.sc.V1PaymentIntents.Confirm(ctx, unconfirmed.ID, confirm)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, pi.Status)
}

func TestWithAuthoriseUnavailableTheHostedCheckoutPageCannotPayEither(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	pi := e.create(t, ctx, manualIntent(800, nil))
	pay := func() int {
		code, _ := postForm(t, e.ts.URL+"/checkout/"+pi.ID, url.Values{"client_secret": {pi.ClientSecret}, "payment_method": {"pm_card_visa"}})
		return code
	}

	e.setFaults(t, ctx, Faults{AuthoriseUnavailable: true})
	require.Equal(t, http.StatusServiceUnavailable, pay())
	e.requireStatus(t, ctx, pi.ID, pi.Status)

	e.setFaults(t, ctx, Faults{})
	require.Equal(t, http.StatusOK, pay())
	e.requireStatus(t, ctx, pi.ID, stripe.PaymentIntentStatusRequiresCapture)
}

func TestWithRefundUnavailableARefundFailsAndSucceedsOnceTheSwitchIsOff(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	pi := e.create(t, ctx, confirmedIntent(6000, nil, "pm_card_visa"))
	_, err := e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
	require.NoError(t, err)

	e.setFaults(t, ctx, Faults{RefundUnavailable: true})
	refund := withKey(&stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID)}, "b-refund:refund")
	_, err = e.sc.V1Refunds.Create(ctx, refund)
	requireUnavailable(t, err, "refund_unavailable")
	for _, err := range e.sc.V1Refunds.List(ctx, &stripe.RefundListParams{PaymentIntent: stripe.String(pi.ID)}).All(ctx) {
		require.NoError(t, err)
		require.Fail(t, "the unavailable refund made a refund")
	}
	e.requireStatus(t, ctx, pi.ID, stripe.PaymentIntentStatusSucceeded)

	e.setFaults(t, ctx, Faults{})
	rf, err := e.sc.V1Refunds.Create(ctx, refund)
	require.NoError(t, err, "the same refund, same key, acts once the switch is off")
	require.Equal(t, stripe.RefundStatusSucceeded, rf.Status)
	require.EqualValues(t, 6000, rf.Amount)
}

func TestVoidingIsNotARefundAndHasASwitchOfItsOwn(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	a := e.create(t, ctx, confirmedIntent(1000, nil, "pm_card_visa"))
	b := e.create(t, ctx, confirmedIntent(1000, nil, "pm_card_visa"))

	e.setFaults(t, ctx, Faults{RefundUnavailable: true})
	voided, err := e.sc.V1PaymentIntents.Cancel(ctx, a.ID, nil)
	require.NoError(t, err, "refund_unavailable leaves voiding alone")
	require.Equal(t, stripe.PaymentIntentStatusCanceled, voided.Status)

	e.setFaults(t, ctx, Faults{VoidUnavailable: true})
	void := withKey(&stripe.PaymentIntentCancelParams{}, "b-void:void")
	_, err = e.sc.V1PaymentIntents.Cancel(ctx, b.ID, void)
	requireUnavailable(t, err, "void_unavailable")
	e.requireStatus(t, ctx, b.ID, stripe.PaymentIntentStatusRequiresCapture)

	e.setFaults(t, ctx, Faults{})
	voided, err = e.sc.V1PaymentIntents.Cancel(ctx, b.ID, void)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusCanceled, voided.Status)
}

func TestStripeGoDoesNotRetryAnUnavailableAPIByItselfSoTheCallerSeesEvery503(t *testing.T) {
	t.Parallel()
	srv, err := New(Config{Logger: testLogger()})
	require.NoError(t, err)
	var captures atomic.Int32
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/capture") {
			captures.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		require.NoError(t, srv.Close())
	})
	// A client that would retry network errors and untyped 5xx answers.
	sc := newClient(ts.URL, DefaultAPIKey, 3)
	ctx := ctxT(t)
	pi, err := sc.V1PaymentIntents.Create(ctx, confirmedIntent(900, nil, "pm_card_visa"))
	require.NoError(t, err)

	_, err = SetFaults(ctx, ts.URL, Faults{CaptureUnavailable: true})
	require.NoError(t, err)
	_, err = sc.V1PaymentIntents.Capture(ctx, pi.ID, withKey(&stripe.PaymentIntentCaptureParams{}, "k-once"))
	requireUnavailable(t, err, "capture_unavailable")
	require.EqualValues(t, 1, captures.Load(), "stripe-go sent the capture once: the 503 is the caller's to retry")
}

func TestTheFaultSwitchesAnswerTheirStateAndChangeOnlyWhatAPostNames(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	got, err := GetFaults(ctx, e.ts.URL)
	require.NoError(t, err)
	require.Equal(t, Faults{}, got, "every switch starts off")

	st, ct, body := postFaults(t, ctx, e.ts.URL, "application/json", `{"capture_unavailable":true}`)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "application/json", ct)
	require.Equal(t, true, body["capture_unavailable"])
	require.Equal(t, false, body["refund_unavailable"])

	// The drill's body names only its rate: the capture switch stays on.
	st, _, body = postFaults(t, ctx, e.ts.URL, "application/json; charset=utf-8", `{"timeout_after_success_rate":0.25}`)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, 0.25, body["timeout_after_success_rate"])
	got, err = GetFaults(ctx, e.ts.URL)
	require.NoError(t, err)
	require.Equal(t, Faults{CaptureUnavailable: true, TimeoutAfterSuccessRate: 0.25}, got)
	require.Equal(t, 0.25, e.srv.lossOverride())

	// SetFaults sets them all.
	e.setFaults(t, ctx, Faults{RefundUnavailable: true})
	require.Zero(t, e.srv.lossOverride())
}

func TestTheFaultSwitchesRefuseWhatIsNotAJSONObjectOfKnownSwitches(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
	}{
		{"bad JSON", "application/json", `{"capture_unavailable":`, http.StatusBadRequest},
		{"a switch that is not a boolean", "application/json", `{"capture_unavailable":"yes"}`, http.StatusBadRequest},
		{"a misspelt switch", "application/json", `{"capture_unavailible":true}`, http.StatusBadRequest},
		{"a rate above one", "application/json", `{"timeout_after_success_rate":2}`, http.StatusBadRequest},
		{"a negative duplicate rate", "application/json", `{"duplicate_webhook_rate":-0.1}`, http.StatusBadRequest},
		{"an out-of-order rate above one", "application/json", `{"out_of_order_webhook_rate":1.5}`, http.StatusBadRequest},
		{"a delay beyond a minute", "application/json", `{"webhook_delay_ms":60001}`, http.StatusBadRequest},
		{"two objects", "application/json", `{} {}`, http.StatusBadRequest},
		{"text/plain", "text/plain", `{"capture_unavailable":true}`, http.StatusUnsupportedMediaType},
		{"a form", "application/x-www-form-urlencoded", `capture_unavailable=true`, http.StatusUnsupportedMediaType},
		{"no content type", "", `{"capture_unavailable":true}`, http.StatusUnsupportedMediaType},
	} {
		st, ct, body := postFaults(t, ctx, e.ts.URL, tc.contentType, tc.body)
		require.Equal(t, tc.status, st, tc.name)
		require.Equal(t, "application/problem+json", ct, tc.name)
		require.EqualValues(t, tc.status, body["status"], tc.name)
		require.NotEmpty(t, body["detail"], tc.name)
	}
	got, err := GetFaults(ctx, e.ts.URL)
	require.NoError(t, err)
	require.Equal(t, Faults{}, got, "a refused request changes nothing")
}

func TestTheFaultSwitchesAnswerOnlyLoopbackOrTheSandboxKey(t *testing.T) {
	t.Parallel()
	e, _ := newDefaultEnv(t)
	post := func(auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, FaultsPath, strings.NewReader(`{"void_unavailable":true}`))
		req.RemoteAddr = "192.0.2.7:40000"
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	require.Equal(t, http.StatusForbidden, post("").Code)
	require.Equal(t, http.StatusForbidden, post("sk_test_wrong").Code)
	require.False(t, e.srv.switches.load().VoidUnavailable)
	require.Equal(t, http.StatusOK, post(e.key).Code)
	require.True(t, e.srv.switches.load().VoidUnavailable)
}

func TestConcurrentPartialUpdatesAllTakeEffect(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	names := []string{"authorise_unavailable", "capture_unavailable", "refund_unavailable", "void_unavailable"}
	statuses := make([]int, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(2)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.ts.URL+FaultsPath, strings.NewReader(`{"`+name+`":true}`))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
		go func() { // a request deciding meanwhile reads one whole snapshot
			defer wg.Done()
			_ = e.srv.unavailable("POST /v1/payment_intents/{id}/capture")
		}()
	}
	wg.Wait()
	for i := range names {
		require.NoError(t, errs[i], names[i])
		require.Equal(t, http.StatusOK, statuses[i], names[i])
	}
	got, err := GetFaults(ctx, e.ts.URL)
	require.NoError(t, err)
	require.Equal(t, Faults{AuthoriseUnavailable: true, CaptureUnavailable: true, RefundUnavailable: true, VoidUnavailable: true}, got)
}
