package system

import (
	"strings"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/config"
)

// PaymentPage is what the web app's payment form loads: Stripe.js with the
// publishable key of a real account (ENCORE_STRIPE_KEY a live or test key
// of Stripe's), otherwise the payment sandbox's stand-in for it, served by
// the sandbox stripe-go talks to.
func PaymentPage(cfg config.Config) api.PaymentPage {
	if cfg.LiveStripe() && cfg.StripeAPIURL == "" {
		return api.PaymentPage{PublishableKey: cfg.StripePublishableKey, JSURL: api.StripeJSURL}
	}
	base := cfg.StripeAPIURL
	if base == "" {
		base = HTTPURL(cfg.PSPAddr)
	}
	return api.PaymentPage{PublishableKey: cfg.StripePublishableKey, JSURL: strings.TrimRight(base, "/") + "/js/v3/", Sandbox: true}
}
