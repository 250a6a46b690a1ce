package psp

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
)

// keyed sends a request with a key as Stripe.js and stripe-go send it.
func keyed(t *testing.T, method, target, key string, form url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, body := do(t, req)
	return resp.StatusCode, string(body)
}

func TestThePublishableKeyCreatesCardsAndReadsAnIntentByItsClientSecretAndNothingElse(t *testing.T) {
	t.Parallel()
	e, ctx := newDefaultEnv(t)
	pi, err := e.sc.V1PaymentIntents.Create(ctx, manualIntent(4000, nil))
	require.NoError(t, err)
	pk := DefaultPublishableKey
	card := url.Values{"type": {"card"}, "card[number]": {"4242424242424242"}, "card[exp_month]": {"12"},
		"card[exp_year]": {strconv.Itoa(time.Now().Year() + 3)}, "card[cvc]": {"123"}}

	for _, tc := range []struct {
		name, method, path string
		form               url.Values
		status             int
		says               string
	}{
		{"a card payment method", http.MethodPost, "/v1/payment_methods", card, 200, `"last4": "4242"`},
		{"the intent with its client secret", http.MethodGet, "/v1/payment_intents/" + pi.ID + "?client_secret=" + url.QueryEscape(pi.ClientSecret), nil, 200, `"id": "` + pi.ID + `"`},
		{"the intent with another's secret", http.MethodGet, "/v1/payment_intents/" + pi.ID + "?client_secret=" + url.QueryEscape(pi.ID+"_secret_x"), nil, 404, "only with its client secret"},
		{"the intent without a secret", http.MethodGet, "/v1/payment_intents/" + pi.ID, nil, 404, "only with its client secret"},
		{"a new intent", http.MethodPost, "/v1/payment_intents", url.Values{"amount": {"100"}, "currency": {"eur"}}, 401, "cannot be made with a publishable API key"},
		{"a capture", http.MethodPost, "/v1/payment_intents/" + pi.ID + "/capture", url.Values{}, 401, "cannot be made with a publishable API key"},
		{"a refund", http.MethodPost, "/v1/refunds", url.Values{"payment_intent": {pi.ID}}, 401, "cannot be made with a publishable API key"},
		{"the list of intents", http.MethodGet, "/v1/payment_intents", nil, 401, "cannot be made with a publishable API key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := keyed(t, tc.method, e.ts.URL+tc.path, pk, tc.form)
			require.Equal(t, tc.status, status, body)
			require.Contains(t, strings.ReplaceAll(body, `":"`, `": "`), tc.says)
		})
	}

	// A card the publishable key made pays an intent the secret key
	// confirms: the server-side confirmation of the Payment Element flow.
	status, body := keyed(t, http.MethodPost, e.ts.URL+"/v1/payment_methods", pk, card)
	require.Equal(t, 200, status)
	id := body[strings.Index(body, `"id":"`)+6:]
	id = id[:strings.Index(id, `"`)]
	confirmed, err := e.sc.V1PaymentIntents.Confirm(ctx, pi.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String(id)})
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, confirmed.Status)
}

func TestTheStandInForStripeJSIsServedWithItsFramesAndNothingElse(t *testing.T) {
	t.Parallel()
	e, _ := newDefaultEnv(t)
	for _, tc := range []struct{ path, ctype, says string }{
		{"/js/v3/", "text/javascript", "window.Stripe = function Stripe(key)"},
		{"/js/v3/payment.html", "text/html", `autocomplete="cc-number"`},
		{"/js/v3/payment.js", "text/javascript", "/v1/payment_methods"},
		{"/js/v3/challenge.html", "text/html", "3-D Secure"},
		{"/js/v3/controller.html", "text/html", "controller.js"},
	} {
		resp, body := do(t, mustRequest(t, e.ts.URL+tc.path))
		require.Equal(t, 200, resp.StatusCode, tc.path)
		require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype), tc.path)
		require.Contains(t, string(body), tc.says, tc.path)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	}
	resp, _ := do(t, mustRequest(t, e.ts.URL+"/js/v3/../server.go"))
	require.Equal(t, 404, resp.StatusCode)
	resp, _ = do(t, mustRequest(t, e.ts.URL+"/js/v3/stripejs.go"))
	require.Equal(t, 404, resp.StatusCode)
}

func mustRequest(t *testing.T, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	require.NoError(t, err)
	return req
}
