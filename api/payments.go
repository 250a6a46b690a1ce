package api

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/webapp"
)

// PaymentPage is what the web app's payment form needs to load the
// provider's script: Stripe.js with a real account's publishable key, or
// the payment sandbox's stand-in for it in development.
type PaymentPage struct {
	// PublishableKey is the provider's publishable key (never a secret).
	PublishableKey string `json:"publishable_key"`
	// JSURL is the script's address: https://js.stripe.com/v3/, or the
	// sandbox's /js/v3/.
	JSURL string `json:"js_url"`
	// Sandbox is true when payments go to the payment sandbox: the app
	// then also offers its test payment methods as a development shortcut.
	Sandbox bool `json:"sandbox"`
}

// StripeJSURL is where Stripe.js is loaded from with a real key.
const StripeJSURL = "https://js.stripe.com/v3/"

// sources are the origins the app's pages must allow for the page's
// script: exactly Stripe's documented ones for Stripe.js, the sandbox's
// origin (script and frames) for its stand-in.
func (p PaymentPage) sources() webapp.Sources {
	if p.JSURL == "" {
		return webapp.Sources{}
	}
	if p.JSURL == StripeJSURL {
		return webapp.StripeSources
	}
	u, err := url.Parse(p.JSURL)
	if err != nil || u.Host == "" {
		return webapp.Sources{}
	}
	origin := u.Scheme + "://" + u.Host
	return webapp.Sources{Script: []string{origin}, Frame: []string{origin}}
}

// paymentsConfig answers GET /v1/payments/config. Nothing in it is secret.
func paymentsConfig(p PaymentPage) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Header("Cache-Control", "no-cache")
		c.JSON(http.StatusOK, p)
	}
}
