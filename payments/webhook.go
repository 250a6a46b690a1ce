package payments

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

// WebhookTolerance is how old a signed webhook may be.
const WebhookTolerance = 5 * time.Minute

// MaxWebhookBytes bounds a provider event body.
const MaxWebhookBytes = 256 << 10

// WebhookEvent is a verified provider event, reduced to what Encore uses.
type WebhookEvent struct {
	ID     string
	Type   vocab.ProviderEvent
	Object string
	// IntentID is the PaymentIntent the event is about (its own ID, or the
	// intent a refund or charge names).
	IntentID string
	Status   string
	// Amount is what the event says moved: the capturable amount of an
	// authorisation, the received amount of a success, else the intent's.
	Amount money.Money
	// BookingID is the reference the event carries (the intent's
	// booking_id metadata); the database's own record decides.
	BookingID string
	// CapturedBySaga says the intent carries the metadata the saga's own
	// capture sets (MetaCapturedBy): its success needs no answer.
	CapturedBySaga bool
	// Created is when the provider created the event.
	Created time.Time
	// IdempotencyKey is the Idempotency-Key of the API request that caused
	// the event (request.idempotency_key): Encore's own refunds carry its
	// step keys, so their charge.refunded is known as Encore's.
	IdempotencyKey string
	// Dispute is set for a charge.dispute.* event.
	Dispute *Dispute
	// Charge is set for an event about a charge (charge.refunded).
	Charge *Charge
	// Fingerprint identifies the content, so an event ID reused with other
	// content is caught.
	Fingerprint []byte
	Raw         []byte
}

// ParseWebhook verifies the Stripe-Signature header (signature and a
// 5-minute timestamp tolerance) with stripe-go's webhook package and decodes
// the event. Any failure is an error; it never panics on any input.
func ParseWebhook(body []byte, header, secret string) (WebhookEvent, error) {
	if secret == "" {
		return WebhookEvent{}, errors.New("no webhook secret configured")
	}
	ev, err := webhook.ConstructEventWithOptions(body, header, secret, webhook.ConstructEventOptions{
		Tolerance: WebhookTolerance, IgnoreAPIVersionMismatch: true})
	if err != nil {
		return WebhookEvent{}, err
	}
	return decodeEvent(ev, body)
}

// DecodeStoredWebhook reads an event that ParseWebhook verified and the
// database stored (its raw body): reconciliation re-signals such an event
// when it never reached its booking. It never verifies a signature, so it
// must only ever see what ParseWebhook accepted.
func DecodeStoredWebhook(body []byte) (WebhookEvent, error) {
	var ev stripe.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return WebhookEvent{}, errors.New("stored event is not JSON")
	}
	return decodeEvent(ev, body)
}

// Dispute is the dispute a charge.dispute.* event is about.
type Dispute struct {
	ID       string
	ChargeID string
	Status   vocab.DisputeStatus
	Reason   string
	Amount   money.Money
}

// Charge is the charge a charge.* event is about, with its refunds' total.
type Charge struct {
	ID             string
	AmountCaptured int64
	AmountRefunded int64
	Currency       string
	// Refunded: refunded in full.
	Refunded bool
}

func decodeEvent(ev stripe.Event, body []byte) (WebhookEvent, error) {
	if ev.ID == "" || ev.Type == "" || ev.Data == nil {
		return WebhookEvent{}, errors.New("event without id, type or data")
	}
	var obj struct {
		ID               string            `json:"id"`
		Object           string            `json:"object"`
		Status           string            `json:"status"`
		Amount           int64             `json:"amount"`
		AmountCapturable int64             `json:"amount_capturable"`
		AmountReceived   int64             `json:"amount_received"`
		Currency         string            `json:"currency"`
		PaymentIntent    json.RawMessage   `json:"payment_intent"`
		Metadata         map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(ev.Data.Raw, &obj); err != nil {
		return WebhookEvent{}, errors.New("event data is not an object")
	}
	sum := sha256.Sum256(append([]byte(string(ev.Type)+"\n"), ev.Data.Raw...))
	out := WebhookEvent{ID: ev.ID, Type: vocab.ProviderEvent(ev.Type), Object: obj.Object, Status: obj.Status,
		BookingID: obj.Metadata["booking_id"], CapturedBySaga: obj.Metadata[MetaCapturedBy] == CapturedBySaga,
		Fingerprint: sum[:], Raw: body, Created: time.Unix(ev.Created, 0)}
	if ev.Request != nil {
		out.IdempotencyKey = ev.Request.IdempotencyKey
	}
	switch obj.Object {
	case "dispute":
		// Decoded by stripe-go's own type, whose charge and payment_intent
		// are an ID or an expanded object alike.
		var d stripe.Dispute
		if err := json.Unmarshal(ev.Data.Raw, &d); err != nil {
			return WebhookEvent{}, errors.New("dispute is not a Stripe dispute")
		}
		if d.ID == "" || d.Status == "" {
			return WebhookEvent{}, errors.New("dispute without id or status")
		}
		out.Dispute = &Dispute{ID: d.ID, Status: vocab.DisputeStatus(d.Status), Reason: string(d.Reason),
			Amount: money.Money{Amount: d.Amount, Currency: strings.ToUpper(string(d.Currency))}}
		if d.Charge != nil {
			out.Dispute.ChargeID = d.Charge.ID
		}
		if d.PaymentIntent != nil {
			out.IntentID = d.PaymentIntent.ID
		}
		out.Amount = out.Dispute.Amount
		return out, nil
	case "charge":
		// Only the fields read here: a charge's other fields (outcome,
		// payment method details) vary with the API version and must not
		// make a refund unreadable.
		var ch struct {
			AmountCaptured int64 `json:"amount_captured"`
			AmountRefunded int64 `json:"amount_refunded"`
			Refunded       bool  `json:"refunded"`
		}
		if err := json.Unmarshal(ev.Data.Raw, &ch); err != nil {
			return WebhookEvent{}, errors.New("charge is not a Stripe charge")
		}
		out.Charge = &Charge{ID: obj.ID, AmountCaptured: ch.AmountCaptured, AmountRefunded: ch.AmountRefunded,
			Currency: strings.ToUpper(obj.Currency), Refunded: ch.Refunded}
		out.Amount = money.Money{Amount: ch.AmountRefunded, Currency: out.Charge.Currency}
	}
	switch obj.Object {
	case "payment_intent":
		out.IntentID = obj.ID
		amount := obj.Amount
		switch out.Type {
		case vocab.EventAuthorised:
			amount = obj.AmountCapturable
		case vocab.EventSucceeded:
			amount = obj.AmountReceived
		}
		out.Amount = money.Money{Amount: amount, Currency: strings.ToUpper(obj.Currency)}
	default:
		// Refunds and charges name their intent as a string (or an object).
		var id string
		if json.Unmarshal(obj.PaymentIntent, &id) != nil {
			var o struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(obj.PaymentIntent, &o)
			id = o.ID
		}
		out.IntentID = id
	}
	return out, nil
}
