// Package payments is Encore's payment client: stripe-go in every mode, aimed
// at the built-in sandbox by default and at Stripe itself when a real key is
// configured. Every call that moves money carries the saga step's key as the
// provider's idempotency key, and a call whose answer was lost is reported as
// ErrUnknown so the saga looks the payment up before deciding.
package payments

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

// ErrUnknown means the provider may or may not have acted: a timeout or a
// lost connection. Never treat it as a failure; look the payment up.
var ErrUnknown = errors.New("payments: outcome unknown")

// DeclinedError is a card decline: the fan may try another card. IntentID
// names the intent the decline left behind (Stripe returns it with the
// error), so the next card confirms that intent.
type DeclinedError struct {
	Code, DeclineCode, Message string
	IntentID                   string
}

func (e *DeclinedError) Error() string {
	return "payments: declined: " + e.DeclineCode + ": " + e.Message
}

// RejectedError is a request the provider refused for good (a 4xx other than
// a decline): retrying it unchanged cannot succeed.
type RejectedError struct {
	Status  int
	Message string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("payments: refused by the provider (%d): %s", e.Status, e.Message)
}

// Intent is the part of a PaymentIntent the saga uses.
type Intent struct {
	ID             string             `json:"id"`
	ClientSecret   string             `json:"client_secret"`
	Status         vocab.IntentStatus `json:"status"`
	Amount         money.Money        `json:"amount"`
	AmountReceived int64              `json:"amount_received"`
	BookingID      string             `json:"booking_id"`
	NextActionURL  string             `json:"next_action_url,omitempty"`
	DeclineCode    string             `json:"decline_code,omitempty"`
	// Created is when the provider created the intent.
	Created time.Time `json:"created,omitzero"`
	// CardBrand ("visa") and CardLast4 name the card that paid, when the
	// answer carries the latest charge (Capture asks for it); empty
	// otherwise, and for methods that are not cards.
	CardBrand string `json:"card_brand,omitempty"`
	CardLast4 string `json:"card_last4,omitempty"`
}

// ErrNotACard means the payment method exists but is not a card (a bank
// debit, a wallet without a card), so it has no card fingerprint: the caller
// decides what "the same card" means for it.
var ErrNotACard = errors.New("payments: payment method is not a card")

// Refund is a refund's outcome.
type Refund struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Amount int64  `json:"amount"`
}

// Config aims the client.
type Config struct {
	APIKey  string
	BaseURL string        // empty: Stripe itself
	Timeout time.Duration // per call, default 10s
	// Fault, when set, is sent as the sandbox's Encore-Sandbox-Fault header
	// on every call (tests and chaos runs only).
	Fault string
	// HostedPage is the base URL of the provider's hosted test checkout page
	// (the sandbox's); a checkout without a payment method answers with a
	// link to it. Empty with Stripe itself, where Stripe.js takes the client
	// secret instead.
	HostedPage string
}

// Client calls the provider.
type Client struct {
	sc     *stripe.Client
	fault  string
	hosted string
}

// New builds a client. stripe-go's own network retries are off: the saga's
// activities retry with the same idempotency key, and a lost answer must
// surface as ErrUnknown rather than be hidden.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	bc := &stripe.BackendConfig{
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		HTTPClient: &http.Client{Timeout: cfg.Timeout, Transport: &http.Transport{
			// No transparent re-send of a POST on a reused connection: that
			// would hide a lost answer (the idempotency key makes it safe, but
			// the saga must know the first try is in doubt).
			DisableKeepAlives:   false,
			MaxIdleConnsPerHost: 64,
		}},
	}
	if cfg.BaseURL != "" {
		bc.URL = stripe.String(strings.TrimRight(cfg.BaseURL, "/"))
	}
	return &Client{sc: stripe.NewClient(cfg.APIKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc))), fault: cfg.Fault,
		hosted: strings.TrimRight(cfg.HostedPage, "/")}
}

func (c *Client) params(p *stripe.Params, key string) {
	if key != "" {
		p.SetIdempotencyKey(key)
	}
	if c.fault != "" {
		p.Headers = http.Header{"Encore-Sandbox-Fault": {c.fault}}
	}
}

// Authorise creates the booking's intent (manual capture) and confirms it with
// the payment method. key is the step key; the same key returns the same
// intent. An empty payment method creates the intent for the hosted page.
//
// stepUp asks for 3-D Secure whatever the card (a fraud "review").
func (c *Client) Authorise(ctx context.Context, key, bookingID string, amount money.Money, paymentMethod, returnURL string, stepUp bool) (Intent, error) {
	p := &stripe.PaymentIntentCreateParams{
		Amount:        stripe.Int64(amount.Amount),
		Currency:      stripe.String(strings.ToLower(amount.Currency)),
		CaptureMethod: stripe.String(string(stripe.PaymentIntentCaptureMethodManual)),
		Description:   stripe.String("Encore booking " + bookingID),
	}
	p.AddMetadata("booking_id", bookingID)
	if stepUp {
		p.PaymentMethodOptions = &stripe.PaymentIntentCreatePaymentMethodOptionsParams{
			Card: &stripe.PaymentIntentCreatePaymentMethodOptionsCardParams{RequestThreeDSecure: stripe.String("any")}}
	}
	if paymentMethod != "" {
		p.PaymentMethod = stripe.String(paymentMethod)
		p.Confirm = stripe.Bool(true)
		if returnURL != "" {
			p.ReturnURL = stripe.String(returnURL)
		}
	}
	c.params(&p.Params, key)
	pi, err := c.sc.V1PaymentIntents.Create(ctx, p)
	in, err := c.result(pi, err)
	if err == nil && paymentMethod == "" {
		c.linkHostedPage(&in)
	}
	return in, err
}

// linkHostedPage points an intent awaiting a payment method at the hosted
// test page (sandbox only).
func (c *Client) linkHostedPage(in *Intent) {
	if c.hosted != "" && in.Status == vocab.IntentRequiresPaymentMethod {
		in.NextActionURL = c.hosted + "/checkout/" + url.PathEscape(in.ID) + "?client_secret=" + url.QueryEscape(in.ClientSecret)
	}
}

// Hosted reads an existing intent for a fan who will pay on the hosted page
// (a retry without a card after a decline).
func (c *Client) Hosted(ctx context.Context, intentID string) (Intent, error) {
	in, err := c.Retrieve(ctx, intentID)
	if err == nil {
		c.linkHostedPage(&in)
	}
	return in, err
}

// Confirm retries an existing intent with another payment method.
func (c *Client) Confirm(ctx context.Context, key, intentID, paymentMethod, returnURL string, stepUp bool) (Intent, error) {
	p := &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String(paymentMethod)}
	if stepUp {
		p.PaymentMethodOptions = &stripe.PaymentIntentPaymentMethodOptionsParams{
			Card: &stripe.PaymentIntentPaymentMethodOptionsCardParams{RequestThreeDSecure: stripe.String("any")}}
	}
	if returnURL != "" {
		p.ReturnURL = stripe.String(returnURL)
	}
	c.params(&p.Params, key)
	pi, err := c.sc.V1PaymentIntents.Confirm(ctx, intentID, p)
	return c.result(pi, err)
}

// Capture takes the authorised money.
func (c *Client) Capture(ctx context.Context, key, intentID string) (Intent, error) {
	p := &stripe.PaymentIntentCaptureParams{}
	c.params(&p.Params, key)
	p.AddMetadata(MetaCapturedBy, CapturedBySaga)
	// The charge names the card: the confirmation needs no read of its own.
	p.AddExpand("latest_charge")
	pi, err := c.sc.V1PaymentIntents.Capture(ctx, intentID, p)
	return c.result(pi, err)
}

// The metadata Capture sets on the intent, so the provider's success event
// for a capture the saga asked for is known as such from the signed event
// alone, even when it overtakes the saga's own record of the capture.
const (
	MetaCapturedBy = "captured_by"
	CapturedBySaga = "encore-saga"
)

// Void cancels an uncaptured intent (releases the authorisation).
func (c *Client) Void(ctx context.Context, key, intentID string) (Intent, error) {
	p := &stripe.PaymentIntentCancelParams{}
	c.params(&p.Params, key)
	pi, err := c.sc.V1PaymentIntents.Cancel(ctx, intentID, p)
	return c.result(pi, err)
}

// Refund returns captured money; key makes a retried refund the same refund.
func (c *Client) Refund(ctx context.Context, key, intentID string) (Refund, error) {
	return c.RefundAmount(ctx, key, intentID, 0)
}

// RefundAmount returns amount (minor units) of the captured money, or all
// that is left of it when amount is 0; key makes a retried refund the same
// refund, so each part is refunded once.
func (c *Client) RefundAmount(ctx context.Context, key, intentID string, amount int64) (Refund, error) {
	p := &stripe.RefundCreateParams{PaymentIntent: stripe.String(intentID)}
	if amount > 0 {
		p.Amount = stripe.Int64(amount)
	}
	c.params(&p.Params, key)
	r, err := c.sc.V1Refunds.Create(ctx, p)
	if err != nil {
		return Refund{}, classify(err)
	}
	return Refund{ID: r.ID, Status: string(r.Status), Amount: r.Amount}, nil
}

// Retrieve reads an intent.
func (c *Client) Retrieve(ctx context.Context, intentID string) (Intent, error) {
	p := &stripe.PaymentIntentRetrieveParams{}
	c.params(&p.Params, "")
	pi, err := c.sc.V1PaymentIntents.Retrieve(ctx, intentID, p)
	return c.result(pi, err)
}

// CardFingerprint returns the fingerprint of the card behind a payment
// method. The provider gives the same fingerprint to every payment method of
// the same card number, so it, unlike the payment method ID, says whether two
// accounts pay with one card. An unknown payment method is a *RejectedError
// (404); a payment method without a card is ErrNotACard.
func (c *Client) CardFingerprint(ctx context.Context, paymentMethod string) (string, error) {
	p := &stripe.PaymentMethodRetrieveParams{}
	c.params(&p.Params, "")
	pm, err := c.sc.V1PaymentMethods.Retrieve(ctx, paymentMethod, p)
	if err != nil {
		return "", classify(err)
	}
	if pm.Card == nil || pm.Card.Fingerprint == "" {
		return "", fmt.Errorf("%w: %s (%s)", ErrNotACard, paymentMethod, pm.Type)
	}
	return pm.Card.Fingerprint, nil
}

// FindByBooking looks the booking's intent up by its metadata: how a lost
// answer to Authorise is resolved. ok is false when none exists.
func (c *Client) FindByBooking(ctx context.Context, bookingID string) (Intent, bool, error) {
	p := &stripe.PaymentIntentSearchParams{}
	p.Query = fmt.Sprintf("metadata['booking_id']:'%s'", bookingID)
	for pi, err := range c.sc.V1PaymentIntents.Search(ctx, p).All(ctx) {
		if err != nil {
			return Intent{}, false, classify(err)
		}
		in, _ := c.result(pi, nil)
		return in, true, nil
	}
	return Intent{}, false, nil
}

// Each lists intents created at or after since, newest first, for
// reconciliation, and the refunds of each.
func (c *Client) Each(ctx context.Context, since time.Time, fn func(Intent, []Refund) error) error {
	p := &stripe.PaymentIntentListParams{}
	p.CreatedRange = &stripe.RangeQueryParams{GreaterThanOrEqual: since.Unix()}
	p.Limit = stripe.Int64(100)
	for pi, err := range c.sc.V1PaymentIntents.List(ctx, p).All(ctx) {
		if err != nil {
			return classify(err)
		}
		in, _ := c.result(pi, nil)
		var refunds []Refund
		if in.AmountReceived > 0 {
			rp := &stripe.RefundListParams{PaymentIntent: stripe.String(in.ID)}
			for r, err := range c.sc.V1Refunds.List(ctx, rp).All(ctx) {
				if err != nil {
					return classify(err)
				}
				refunds = append(refunds, Refund{ID: r.ID, Status: string(r.Status), Amount: r.Amount})
			}
		}
		if err := fn(in, refunds); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) result(pi *stripe.PaymentIntent, err error) (Intent, error) {
	if err != nil {
		return Intent{}, classify(err)
	}
	in := Intent{ID: pi.ID, ClientSecret: pi.ClientSecret, Status: vocab.IntentStatus(pi.Status),
		Amount:         money.Money{Amount: pi.Amount, Currency: strings.ToUpper(string(pi.Currency))},
		AmountReceived: pi.AmountReceived, BookingID: pi.Metadata["booking_id"], Created: time.Unix(pi.Created, 0)}
	if pi.NextAction != nil && pi.NextAction.RedirectToURL != nil {
		in.NextActionURL = pi.NextAction.RedirectToURL.URL
	}
	if pi.LastPaymentError != nil {
		in.DeclineCode = string(pi.LastPaymentError.DeclineCode)
	}
	in.CardBrand, in.CardLast4 = cardOf(pi.LatestCharge)
	return in, nil
}

// classify turns provider errors into the saga's three cases: declined (the
// fan may retry), unknown (look it up), or an error to retry as is.
func classify(err error) error {
	var se *stripe.Error
	if errors.As(err, &se) {
		if se.Type == stripe.ErrorTypeCard {
			d := &DeclinedError{Code: string(se.Code), DeclineCode: string(se.DeclineCode), Message: se.Msg}
			if se.PaymentIntent != nil {
				d.IntentID = se.PaymentIntent.ID
			}
			return d
		}
		if se.HTTPStatusCode >= 500 || se.HTTPStatusCode == http.StatusConflict || se.HTTPStatusCode == http.StatusTooManyRequests {
			return fmt.Errorf("payments: provider busy (%d): %w", se.HTTPStatusCode, err)
		}
		if se.HTTPStatusCode >= 400 {
			return &RejectedError{Status: se.HTTPStatusCode, Message: se.Msg}
		}
		return fmt.Errorf("payments: %s", se.Msg)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "EOF") ||
		strings.Contains(err.Error(), "connection reset") {
		return fmt.Errorf("%w: %v", ErrUnknown, err)
	}
	return fmt.Errorf("%w: %v", ErrUnknown, err)
}
