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
