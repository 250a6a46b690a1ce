package psp

import (
	"embed"
	"net/http"
	"path"
	"strings"
)

// The stand-in for Stripe.js: the part of Stripe.js v3 the Encore web app
// uses, served at /js/v3/ (the script) with the frames it opens (the card
// form, a hidden controller, the 3-D Secure modal), so the app's own
// payment code pays end to end in a browser without the internet. Card
// numbers are typed into the card frame, on the sandbox's origin, which
// creates the payment method here with the publishable key; the merchant's
// page only ever sees the payment method's ID. See stripejs/stripe.js for
// the calls it offers.

//go:embed stripejs
var stripeJS embed.FS

// stripeJSFiles are the files served below /js/v3/; "" is the script.
var stripeJSFiles = map[string]string{
	"":                "stripe.js",
	"frame.js":        "frame.js",
	"payment.html":    "payment.html",
	"payment.js":      "payment.js",
	"controller.html": "controller.html",
	"controller.js":   "controller.js",
	"challenge.html":  "challenge.html",
	"challenge.js":    "challenge.js",
	"elements.css":    "elements.css",
}

func serveStripeJS(w http.ResponseWriter, r *http.Request) {
	name, ok := stripeJSFiles[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := stripeJS.ReadFile("stripejs/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	switch path.Ext(name) {
	case ".js":
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		// The script is loaded by the merchant's page from this origin.
		h.Set("Access-Control-Allow-Origin", "*")
	case ".css":
		h.Set("Content-Type", "text/css; charset=utf-8")
	default:
		h.Set("Content-Type", "text/html; charset=utf-8")
		// The frames are meant to be framed by any merchant's page (as
		// Stripe's are), and run only their own files.
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'")
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}

// publishableAllowed admits a call made with the publishable key only where
// a browser may make it: creating a payment method, and reading one intent
// by its client secret (Stripe.js's retrievePaymentIntent). Everything else
// needs the secret key.
// A nil api (the fault switches) admits nothing.
func (s *Server) publishableAllowed(r *http.Request, api *http.ServeMux) *apiError {
	pattern := ""
	if api != nil {
		_, pattern = api.Handler(r)
	}
	switch pattern {
	case "POST /v1/payment_methods":
		return nil
	case "GET /v1/payment_intents/{id}":
		id := strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/")
		secret := r.URL.Query().Get("client_secret")
		s.mu.Lock()
		pi := s.intents[id]
		ok := pi != nil && secretOK(pi, secret)
		s.mu.Unlock()
		if ok {
			return nil
		}
		return &apiError{Status: 404, Err: jsonError{Type: "invalid_request_error", Code: "resource_missing", Param: "client_secret",
			Message: "No such payment_intent: '" + id + "' with this client_secret; a publishable key reads an intent only with its client secret."}}
	}
	return &apiError{Status: 401, Err: jsonError{Type: "invalid_request_error",
		Message: "This API call cannot be made with a publishable API key. Please use a secret API key."}}
}
