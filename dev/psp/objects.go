package psp

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
)

// PaymentIntent statuses, as Stripe spells them.
const (
	StatusRequiresPaymentMethod = "requires_payment_method"
	StatusRequiresConfirmation  = "requires_confirmation"
	StatusRequiresAction        = "requires_action"
	StatusProcessing            = "processing"
	StatusRequiresCapture       = "requires_capture"
	StatusCanceled              = "canceled"
	StatusSucceeded             = "succeeded"
)

// Event types emitted by the sandbox.
const (
	EventPaymentIntentCreated                 = "payment_intent.created"
	EventPaymentIntentRequiresAction          = "payment_intent.requires_action"
	EventPaymentIntentAmountCapturableUpdated = "payment_intent.amount_capturable_updated"
	EventPaymentIntentSucceeded               = "payment_intent.succeeded"
	EventPaymentIntentPaymentFailed           = "payment_intent.payment_failed"
	EventPaymentIntentCanceled                = "payment_intent.canceled"
	EventRefundCreated                        = "refund.created"
	EventChargeRefunded                       = "charge.refunded"
)

// intent is the stored form of a PaymentIntent.
type intent struct {
	ID                 string            `json:"id"`
	Seq                int64             `json:"seq"`
	ClientSecret       string            `json:"client_secret"`
	Amount             int64             `json:"amount"`
	AmountCapturable   int64             `json:"amount_capturable"`
	AmountReceived     int64             `json:"amount_received"`
	Currency           string            `json:"currency"`
	CaptureMethod      string            `json:"capture_method"`
	ConfirmationMethod string            `json:"confirmation_method"`
	Status             string            `json:"status"`
	PaymentMethod      string            `json:"payment_method,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	Description        string            `json:"description,omitempty"`
	ReturnURL          string            `json:"return_url,omitempty"`
	ReceiptEmail       string            `json:"receipt_email,omitempty"`
	Created            int64             `json:"created"`
	CanceledAt         int64             `json:"canceled_at,omitempty"`
	CancellationReason string            `json:"cancellation_reason,omitempty"`
	LastPaymentError   *paymentError     `json:"last_payment_error,omitempty"`
	NextActionURL      string            `json:"next_action_url,omitempty"`
	LatestCharge       string            `json:"latest_charge,omitempty"`
	// RequestThreeDSecure is payment_method_options[card][request_three_d_secure]:
	// "any" makes every card go through the challenge (a fraud step-up).
	RequestThreeDSecure string `json:"request_three_d_secure,omitempty"`
}

func (pi *intent) manual() bool { return pi.CaptureMethod == "manual" }

// paymentError is the stored last_payment_error of an intent.
type paymentError struct {
	Type          string `json:"type"`
	Code          string `json:"code,omitempty"`
	DeclineCode   string `json:"decline_code,omitempty"`
	Message       string `json:"message"`
	Charge        string `json:"charge,omitempty"`
	PaymentMethod string `json:"payment_method,omitempty"`
}

// charge is the stored form of a Charge (one per confirmation attempt).
type charge struct {
	ID             string `json:"id"`
	Seq            int64  `json:"seq"`
	PaymentIntent  string `json:"payment_intent"`
	PaymentMethod  string `json:"payment_method"`
	Amount         int64  `json:"amount"`
	AmountCaptured int64  `json:"amount_captured"`
	AmountRefunded int64  `json:"amount_refunded"`
	Captured       bool   `json:"captured"`
	Paid           bool   `json:"paid"`
	Refunded       bool   `json:"refunded"`
	Status         string `json:"status"` // succeeded | failed
	Currency       string `json:"currency"`
	Created        int64  `json:"created"`
	FailureCode    string `json:"failure_code,omitempty"`
	FailureMessage string `json:"failure_message,omitempty"`
	DeclineCode    string `json:"decline_code,omitempty"`
	Description    string `json:"description,omitempty"`
}

// refund is the stored form of a Refund.
type refund struct {
	ID            string            `json:"id"`
	Seq           int64             `json:"seq"`
	Amount        int64             `json:"amount"`
	Charge        string            `json:"charge"`
	PaymentIntent string            `json:"payment_intent"`
	Currency      string            `json:"currency"`
	Created       int64             `json:"created"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	Reason        string            `json:"reason,omitempty"`
	Status        string            `json:"status"`
}

// testCard describes the card behind a payment method and what it does when
// confirmed: a fixed test method from testCards, or the card of a method
// created with POST /v1/payment_methods (stored in paymentMethod.Card, hence
// the JSON tags).
type testCard struct {
	// Number is the card number Stripe documents for the test method. It is
	// never rendered nor stored; it only feeds the fingerprint, so that two
	// test methods for the same number (pm_card_visa and pm_card_us) are one
	// card, as at Stripe.
	Number      string `json:"-"`
	Brand       string `json:"brand"`
	Last4       string `json:"last4"`
	Funding     string `json:"funding"`
	Country     string `json:"country,omitempty"` // ISO 3166-1 alpha-2; empty means US
	Outcome     string `json:"outcome"`           // "succeed", "decline", "3ds"
	Code        string `json:"code,omitempty"`
	DeclineCode string `json:"decline_code,omitempty"`
	Message     string `json:"message,omitempty"`

	// Set on created methods only, whose number is not kept: the
	// fingerprint computed from it, the expiry sent, and whether a CVC was.
	Fingerprint string `json:"fingerprint,omitempty"`
	ExpMonth    int64  `json:"exp_month,omitempty"`
	ExpYear     int64  `json:"exp_year,omitempty"`
	NoCVC       bool   `json:"no_cvc,omitempty"`
}

// fingerprintSalt keys the fingerprint hash. It is fixed rather than per
// server so fingerprints stay stable across restarts and sandbox instances:
// fraud counters and load-test fixtures outlive one sandbox process.
const fingerprintSalt = "encore-sandbox-card-fingerprint/v1"

// fingerprint is the card's Stripe-style fingerprint: 16 alphanumeric
// characters, the same for every payment method of the same card number and
// different across numbers. Stripe derives it from the number too, which is
// why it, not the PaymentMethod ID, is what says "the same card".
func (c testCard) fingerprint() string {
	if c.Fingerprint != "" {
		return c.Fingerprint
	}
	return fingerprintOf(c.Number)
}

// fingerprintOf is the fingerprint of a card number, for fixed test methods
// and created ones alike.
func fingerprintOf(number string) string {
	sum := sha256.Sum256([]byte(fingerprintSalt + ":" + number))
	buf := make([]byte, 16)
	for i := range buf {
		buf[i] = idAlphabet[int(sum[i])%len(idAlphabet)]
	}
	return string(buf)
}

// expiry is the card's expiry: the one sent for a created method, 12/2034
// for a fixed test method.
func (c testCard) expiry() (month, year int64) {
	if c.ExpMonth == 0 || c.ExpYear == 0 {
		return 12, 2034
	}
	return c.ExpMonth, c.ExpYear
}

func (c testCard) country() string { return cmp.Or(c.Country, "US") }

// renderCard is the card hash of a PaymentMethod; a charge's
// payment_method_details.card carries the same brand, last4 and fingerprint.
func (c testCard) renderCard() map[string]any {
	month, year := c.expiry()
	var cvcCheck any = "pass"
	if c.NoCVC {
		cvcCheck = nil
	}
	return map[string]any{
		"brand":                c.Brand,
		"display_brand":        c.Brand,
		"country":              c.country(),
		"exp_month":            month,
		"exp_year":             year,
		"fingerprint":          c.fingerprint(),
		"funding":              c.Funding,
		"last4":                c.Last4,
		"checks":               map[string]any{"address_line1_check": nil, "address_postal_code_check": nil, "cvc_check": cvcCheck},
		"networks":             map[string]any{"available": []string{c.Brand}, "preferred": nil},
		"three_d_secure_usage": map[string]any{"supported": true},
		"generated_from":       nil,
		"wallet":               nil,
	}
}

// testCards are the test payment methods the sandbox understands, with the
// card numbers Stripe documents for them.
var testCards = map[string]testCard{
	// Successful cards by brand.
	"pm_card_visa":               {Number: "4242424242424242", Brand: "visa", Last4: "4242", Funding: "credit", Outcome: "succeed"},
	"pm_card_visa_debit":         {Number: "4000056655665556", Brand: "visa", Last4: "5556", Funding: "debit", Outcome: "succeed"},
	"pm_card_mastercard":         {Number: "5555555555554444", Brand: "mastercard", Last4: "4444", Funding: "credit", Outcome: "succeed"},
	"pm_card_mastercard_debit":   {Number: "5200828282828210", Brand: "mastercard", Last4: "8210", Funding: "debit", Outcome: "succeed"},
	"pm_card_mastercard_prepaid": {Number: "5105105105105100", Brand: "mastercard", Last4: "5100", Funding: "prepaid", Outcome: "succeed"},
	"pm_card_amex":               {Number: "371449635398431", Brand: "amex", Last4: "8431", Funding: "credit", Outcome: "succeed"},
	"pm_card_discover":           {Number: "6011111111111117", Brand: "discover", Last4: "1117", Funding: "credit", Outcome: "succeed"},
	"pm_card_diners":             {Number: "3056930009020004", Brand: "diners", Last4: "0004", Funding: "credit", Outcome: "succeed"},
	"pm_card_jcb":                {Number: "3566002020360505", Brand: "jcb", Last4: "0505", Funding: "credit", Outcome: "succeed"},
	"pm_card_unionpay":           {Number: "6200000000000005", Brand: "unionpay", Last4: "0005", Funding: "credit", Outcome: "succeed"},

	// Successful cards by issuing country. pm_card_us is Stripe's 4242 card,
	// so it is the same card as pm_card_visa, fingerprint included.
	"pm_card_us": {Number: "4242424242424242", Brand: "visa", Last4: "4242", Funding: "credit", Country: "US", Outcome: "succeed"},
	"pm_card_ca": {Number: "4000001240000000", Brand: "visa", Last4: "0000", Funding: "credit", Country: "CA", Outcome: "succeed"},
	"pm_card_mx": {Number: "4000004840008001", Brand: "visa", Last4: "8001", Funding: "credit", Country: "MX", Outcome: "succeed"},
	"pm_card_br": {Number: "4000000760000002", Brand: "visa", Last4: "0002", Funding: "credit", Country: "BR", Outcome: "succeed"},
	"pm_card_gb": {Number: "4000008260000000", Brand: "visa", Last4: "0000", Funding: "credit", Country: "GB", Outcome: "succeed"},
	"pm_card_ie": {Number: "4000003720000005", Brand: "visa", Last4: "0005", Funding: "credit", Country: "IE", Outcome: "succeed"},
	"pm_card_de": {Number: "4000002760000016", Brand: "visa", Last4: "0016", Funding: "credit", Country: "DE", Outcome: "succeed"},
	"pm_card_fr": {Number: "4000002500000003", Brand: "visa", Last4: "0003", Funding: "credit", Country: "FR", Outcome: "succeed"},
	"pm_card_nl": {Number: "4000005280000002", Brand: "visa", Last4: "0002", Funding: "credit", Country: "NL", Outcome: "succeed"},
	"pm_card_be": {Number: "4000000560000004", Brand: "visa", Last4: "0004", Funding: "credit", Country: "BE", Outcome: "succeed"},
	"pm_card_at": {Number: "4000000400000008", Brand: "visa", Last4: "0008", Funding: "credit", Country: "AT", Outcome: "succeed"},
	"pm_card_lu": {Number: "4000004420000006", Brand: "visa", Last4: "0006", Funding: "credit", Country: "LU", Outcome: "succeed"},
	"pm_card_es": {Number: "4000007240000007", Brand: "visa", Last4: "0007", Funding: "credit", Country: "ES", Outcome: "succeed"},
	"pm_card_it": {Number: "4000003800000008", Brand: "visa", Last4: "0008", Funding: "credit", Country: "IT", Outcome: "succeed"},
	"pm_card_pt": {Number: "4000006200000007", Brand: "visa", Last4: "0007", Funding: "credit", Country: "PT", Outcome: "succeed"},
	"pm_card_dk": {Number: "4000002080000001", Brand: "visa", Last4: "0001", Funding: "credit", Country: "DK", Outcome: "succeed"},
	"pm_card_se": {Number: "4000007520000008", Brand: "visa", Last4: "0008", Funding: "credit", Country: "SE", Outcome: "succeed"},
	"pm_card_fi": {Number: "4000002460000001", Brand: "visa", Last4: "0001", Funding: "credit", Country: "FI", Outcome: "succeed"},
	"pm_card_no": {Number: "4000005780000007", Brand: "visa", Last4: "0007", Funding: "credit", Country: "NO", Outcome: "succeed"},
	"pm_card_ch": {Number: "4000007560000009", Brand: "visa", Last4: "0009", Funding: "credit", Country: "CH", Outcome: "succeed"},
	"pm_card_pl": {Number: "4000006160000005", Brand: "visa", Last4: "0005", Funding: "credit", Country: "PL", Outcome: "succeed"},
	"pm_card_jp": {Number: "4000003920000003", Brand: "visa", Last4: "0003", Funding: "credit", Country: "JP", Outcome: "succeed"},
	"pm_card_au": {Number: "4000000360000006", Brand: "visa", Last4: "0006", Funding: "credit", Country: "AU", Outcome: "succeed"},
	"pm_card_nz": {Number: "4000005540000008", Brand: "visa", Last4: "0008", Funding: "credit", Country: "NZ", Outcome: "succeed"},
	"pm_card_sg": {Number: "4000007020000003", Brand: "visa", Last4: "0003", Funding: "credit", Country: "SG", Outcome: "succeed"},
	"pm_card_hk": {Number: "4000003440000004", Brand: "visa", Last4: "0004", Funding: "credit", Country: "HK", Outcome: "succeed"},

	// Declines and 3-D Secure.
	"pm_card_chargeDeclined":                  {Number: "4000000000000002", Brand: "visa", Last4: "0002", Funding: "credit", Outcome: "decline", Code: "card_declined", DeclineCode: "generic_decline", Message: "Your card was declined."},
	"pm_card_chargeDeclinedInsufficientFunds": {Number: "4000000000009995", Brand: "visa", Last4: "9995", Funding: "credit", Outcome: "decline", Code: "card_declined", DeclineCode: "insufficient_funds", Message: "Your card has insufficient funds."},
	"pm_card_chargeDeclinedFraudulent":        {Number: "4100000000000019", Brand: "visa", Last4: "0019", Funding: "credit", Outcome: "decline", Code: "card_declined", DeclineCode: "fraudulent", Message: "Your card was declined."},
	"pm_card_chargeDeclinedExpiredCard":       {Number: "4000000000000069", Brand: "visa", Last4: "0069", Funding: "credit", Outcome: "decline", Code: "expired_card", DeclineCode: "expired_card", Message: "Your card has expired."},
	"pm_card_chargeDeclinedIncorrectCvc":      {Number: "4000000000000127", Brand: "visa", Last4: "0127", Funding: "credit", Outcome: "decline", Code: "incorrect_cvc", DeclineCode: "incorrect_cvc", Message: "Your card's security code is incorrect."},
	"pm_card_chargeDeclinedProcessingError":   {Number: "4000000000000119", Brand: "visa", Last4: "0119", Funding: "credit", Outcome: "decline", Code: "processing_error", DeclineCode: "processing_error", Message: "An error occurred while processing your card. Try again in a little bit."},
	"pm_card_threeDSecure2Required":           {Number: "4000000000003220", Brand: "visa", Last4: "3220", Funding: "credit", Outcome: "3ds"},
	"pm_card_authenticationRequired":          {Number: "4000002500003155", Brand: "visa", Last4: "3155", Funding: "credit", Outcome: "3ds"},
}

// checkoutCards is the order in which the hosted page lists test cards.
var checkoutCards = []struct{ ID, Label string }{
	{"pm_card_visa", "Visa 4242: succeeds"},
	{"pm_card_threeDSecure2Required", "Visa 3220: needs 3-D Secure"},
	{"pm_card_chargeDeclined", "Visa 0002: declined (generic_decline)"},
	{"pm_card_chargeDeclinedInsufficientFunds", "Visa 9995: declined (insufficient_funds)"},
	{"pm_card_chargeDeclinedExpiredCard", "Visa 0069: declined (expired_card)"},
	{"pm_card_mastercard", "Mastercard 4444: succeeds"},
}

// ---- JSON rendering in Stripe's shapes ----

type jsonNextAction struct {
	Type          string             `json:"type"`
	RedirectToURL *jsonRedirectToURL `json:"redirect_to_url,omitempty"`
}

type jsonRedirectToURL struct {
	URL       string  `json:"url"`
	ReturnURL *string `json:"return_url"`
}

type jsonIntent struct {
	ID                        string            `json:"id"`
	Object                    string            `json:"object"`
	Amount                    int64             `json:"amount"`
	AmountCapturable          int64             `json:"amount_capturable"`
	AmountReceived            int64             `json:"amount_received"`
	Application               *string           `json:"application"`
	ApplicationFeeAmount      *int64            `json:"application_fee_amount"`
	AutomaticPaymentMethods   any               `json:"automatic_payment_methods"`
	CanceledAt                *int64            `json:"canceled_at"`
	CancellationReason        *string           `json:"cancellation_reason"`
	CaptureMethod             string            `json:"capture_method"`
	ClientSecret              string            `json:"client_secret"`
	ConfirmationMethod        string            `json:"confirmation_method"`
	Created                   int64             `json:"created"`
	Currency                  string            `json:"currency"`
	Customer                  *string           `json:"customer"`
	Description               *string           `json:"description"`
	LastPaymentError          *jsonError        `json:"last_payment_error"`
	LatestCharge              any               `json:"latest_charge"`
	Livemode                  bool              `json:"livemode"`
	Metadata                  map[string]string `json:"metadata"`
	NextAction                *jsonNextAction   `json:"next_action"`
	OnBehalfOf                *string           `json:"on_behalf_of"`
	PaymentMethod             any               `json:"payment_method"`
	PaymentMethodOptions      map[string]any    `json:"payment_method_options"`
	PaymentMethodTypes        []string          `json:"payment_method_types"`
	Processing                any               `json:"processing"`
	ReceiptEmail              *string           `json:"receipt_email"`
	Review                    any               `json:"review"`
	SetupFutureUsage          *string           `json:"setup_future_usage"`
	Shipping                  any               `json:"shipping"`
	Source                    any               `json:"source"`
	StatementDescriptor       *string           `json:"statement_descriptor"`
	StatementDescriptorSuffix *string           `json:"statement_descriptor_suffix"`
	Status                    string            `json:"status"`
	TransferData              any               `json:"transfer_data"`
	TransferGroup             *string           `json:"transfer_group"`
}

// jsonError is Stripe's error object, used both for API errors and for
// last_payment_error.
type jsonError struct {
	Type          string          `json:"type"`
	Code          string          `json:"code,omitempty"`
	DeclineCode   string          `json:"decline_code,omitempty"`
	DocURL        string          `json:"doc_url,omitempty"`
	Message       string          `json:"message"`
	Param         string          `json:"param,omitempty"`
	Charge        string          `json:"charge,omitempty"`
	PaymentIntent json.RawMessage `json:"payment_intent,omitempty"`
	PaymentMethod any             `json:"payment_method,omitempty"`
	RequestLogURL string          `json:"request_log_url,omitempty"`
}

type jsonCharge struct {
	ID                   string            `json:"id"`
	Object               string            `json:"object"`
	Amount               int64             `json:"amount"`
	AmountCaptured       int64             `json:"amount_captured"`
	AmountRefunded       int64             `json:"amount_refunded"`
	BalanceTransaction   *string           `json:"balance_transaction"`
	BillingDetails       any               `json:"billing_details"`
	Captured             bool              `json:"captured"`
	Created              int64             `json:"created"`
	Currency             string            `json:"currency"`
	Customer             *string           `json:"customer"`
	Description          *string           `json:"description"`
	Disputed             bool              `json:"disputed"`
	FailureCode          *string           `json:"failure_code"`
	FailureMessage       *string           `json:"failure_message"`
	Livemode             bool              `json:"livemode"`
	Metadata             map[string]string `json:"metadata"`
	Outcome              map[string]any    `json:"outcome"`
	Paid                 bool              `json:"paid"`
	PaymentIntent        string            `json:"payment_intent"`
	PaymentMethod        string            `json:"payment_method"`
	PaymentMethodDetails map[string]any    `json:"payment_method_details"`
	Refunded             bool              `json:"refunded"`
	Status               string            `json:"status"`
}

type jsonRefund struct {
	ID                     string            `json:"id"`
	Object                 string            `json:"object"`
	Amount                 int64             `json:"amount"`
	BalanceTransaction     *string           `json:"balance_transaction"`
	Charge                 string            `json:"charge"`
	Created                int64             `json:"created"`
	Currency               string            `json:"currency"`
	Metadata               map[string]string `json:"metadata"`
	PaymentIntent          string            `json:"payment_intent"`
	Reason                 *string           `json:"reason"`
	ReceiptNumber          *string           `json:"receipt_number"`
	SourceTransferReversal *string           `json:"source_transfer_reversal"`
	Status                 string            `json:"status"`
	TransferReversal       *string           `json:"transfer_reversal"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func copyMeta(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// renderPaymentMethod renders a payment method as a Stripe PaymentMethod.
// created stands in for the creation time of a fixed test method, which has
// none of its own.
func (s *Server) renderPaymentMethod(id string, created int64) map[string]any {
	c, ok := s.card(id)
	if !ok {
		return map[string]any{"id": id, "object": "payment_method"}
	}
	meta := map[string]string{}
	if m := s.methods[id]; m != nil {
		created = m.Created
		meta = copyMeta(m.Metadata)
	}
	return map[string]any{
		"id":              id,
		"object":          "payment_method",
		"type":            "card",
		"created":         created,
		"customer":        nil,
		"livemode":        false,
		"metadata":        meta,
		"allow_redisplay": "unspecified",
		"billing_details": map[string]any{"address": nil, "email": nil, "name": nil, "phone": nil},
		"card":            c.renderCard(),
	}
}

type expandSet map[string]bool

func (s *Server) renderIntent(pi *intent, expand expandSet) jsonIntent {
	out := jsonIntent{
		ID:                 pi.ID,
		Object:             "payment_intent",
		Amount:             pi.Amount,
		AmountCapturable:   pi.AmountCapturable,
		AmountReceived:     pi.AmountReceived,
		CaptureMethod:      pi.CaptureMethod,
		ClientSecret:       pi.ClientSecret,
		ConfirmationMethod: pi.ConfirmationMethod,
		Created:            pi.Created,
		Currency:           pi.Currency,
		Description:        strPtr(pi.Description),
		Metadata:           copyMeta(pi.Metadata),
		CancellationReason: strPtr(pi.CancellationReason),
		ReceiptEmail:       strPtr(pi.ReceiptEmail),
		PaymentMethodOptions: map[string]any{
			"card": map[string]any{"request_three_d_secure": cmp.Or(pi.RequestThreeDSecure, "automatic"), "installments": nil, "mandate_options": nil, "network": nil},
		},
		PaymentMethodTypes: []string{"card"},
		Status:             pi.Status,
	}
	if pi.CanceledAt != 0 {
		v := pi.CanceledAt
		out.CanceledAt = &v
	}
	if pi.LastPaymentError != nil {
		out.LastPaymentError = s.renderPaymentError(pi.LastPaymentError, pi.Created)
	}
	if pi.LatestCharge != "" {
		if expand["latest_charge"] {
			if ch := s.charges[pi.LatestCharge]; ch != nil {
				out.LatestCharge = s.renderCharge(ch)
			} else {
				out.LatestCharge = pi.LatestCharge
			}
		} else {
			out.LatestCharge = pi.LatestCharge
		}
	}
	if pi.PaymentMethod != "" {
		if expand["payment_method"] {
			out.PaymentMethod = s.renderPaymentMethod(pi.PaymentMethod, pi.Created)
		} else {
			out.PaymentMethod = pi.PaymentMethod
		}
	}
	if pi.Status == StatusRequiresAction && pi.NextActionURL != "" {
		out.NextAction = &jsonNextAction{
			Type:          "redirect_to_url",
			RedirectToURL: &jsonRedirectToURL{URL: pi.NextActionURL, ReturnURL: strPtr(pi.ReturnURL)},
		}
	}
	return out
}

func (s *Server) renderPaymentError(pe *paymentError, created int64) *jsonError {
	e := &jsonError{
		Type:        pe.Type,
		Code:        pe.Code,
		DeclineCode: pe.DeclineCode,
		Message:     pe.Message,
		Charge:      pe.Charge,
	}
	if pe.PaymentMethod != "" {
		e.PaymentMethod = s.renderPaymentMethod(pe.PaymentMethod, created)
	}
	return e
}

func (s *Server) renderCharge(ch *charge) jsonCharge {
	out := jsonCharge{
		ID:             ch.ID,
		Object:         "charge",
		Amount:         ch.Amount,
		AmountCaptured: ch.AmountCaptured,
		AmountRefunded: ch.AmountRefunded,
		BillingDetails: map[string]any{"address": nil, "email": nil, "name": nil, "phone": nil},
		Captured:       ch.Captured,
		Created:        ch.Created,
		Currency:       ch.Currency,
		Description:    strPtr(ch.Description),
		FailureCode:    strPtr(ch.FailureCode),
		FailureMessage: strPtr(ch.FailureMessage),
		Metadata:       map[string]string{},
		Paid:           ch.Paid,
		PaymentIntent:  ch.PaymentIntent,
		PaymentMethod:  ch.PaymentMethod,
		Refunded:       ch.Refunded,
		Status:         ch.Status,
	}
	if pi := s.intents[ch.PaymentIntent]; pi != nil {
		out.Metadata = copyMeta(pi.Metadata)
	}
	if ch.Status == "succeeded" {
		out.Outcome = map[string]any{"network_status": "approved_by_network", "reason": nil, "risk_level": "normal", "seller_message": "Payment complete.", "type": "authorized"}
	} else {
		out.Outcome = map[string]any{"network_status": "declined_by_network", "reason": ch.DeclineCode, "risk_level": "normal", "seller_message": "The bank did not return any further details with this decline.", "type": "issuer_declined"}
	}
	if c, ok := s.card(ch.PaymentMethod); ok {
		month, year := c.expiry()
		out.PaymentMethodDetails = map[string]any{
			"type": "card",
			"card": map[string]any{"brand": c.Brand, "last4": c.Last4, "funding": c.Funding, "country": c.country(),
				"exp_month": month, "exp_year": year, "fingerprint": c.fingerprint(), "network": c.Brand},
		}
	}
	return out
}

func (s *Server) renderRefund(rf *refund) jsonRefund {
	return jsonRefund{
		ID:            rf.ID,
		Object:        "refund",
		Amount:        rf.Amount,
		Charge:        rf.Charge,
		Created:       rf.Created,
		Currency:      rf.Currency,
		Metadata:      copyMeta(rf.Metadata),
		PaymentIntent: rf.PaymentIntent,
		Reason:        strPtr(rf.Reason),
		Status:        rf.Status,
	}
}

// ---- identifiers ----

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func randomString(n int) string {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		panic(err)
	}
	for i, c := range buf {
		buf[i] = idAlphabet[int(c)%len(idAlphabet)]
	}
	return string(buf)
}

func newID(prefix string) string { return prefix + "_" + randomString(24) }
