package api

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/encore-tickets/encore/booking/saga"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// WebhookTolerance is how old a signed webhook may be.
const WebhookTolerance = 5 * time.Minute

// maxWebhookBytes bounds a provider event body.
const maxWebhookBytes = 256 << 10

// WebhookEvent is a verified provider event, reduced to what Encore uses.
type WebhookEvent struct {
	ID          string
	Type        vocab.ProviderEvent
	Object      string
	IntentID    string
	Status      string
	Amount      money.Money
	BookingID   string
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
		BookingID: obj.Metadata["booking_id"], Fingerprint: sum[:], Raw: body}
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

// stripeWebhook stores a verified event (answering 2xx only once stored) and
// then signals its booking. An event for a payment Encore does not know yet
// gets a retryable answer, so the provider redelivers it.
func (s *Server) stripeWebhook(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxWebhookBytes))
	if err != nil {
		s.problem(c, Invalid(FieldError{"body", "unreadable or larger than 256 KiB"}))
		return
	}
	ev, err := ParseWebhook(body, c.GetHeader("Stripe-Signature"), s.WebhookSecret)
	if err != nil {
		s.problem(c, Invalid(FieldError{"Stripe-Signature", "refused: " + err.Error()}))
		return
	}
	ctx := c.Request.Context()
	var bookingID string
	var paymentStatus vocab.PaymentStatus
	if ev.IntentID != "" {
		id, status, err := s.Holds.Store.BookingByIntent(ctx, ev.IntentID)
		paymentStatus = status
		switch {
		case errors.Is(err, store.ErrNotFound):
			// The authorisation step has not recorded the intent yet.
			s.problem(c, NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "unknown payment; retry").RetryAfter(5*time.Second))
			return
		case err != nil:
			s.problem(c, s.problemFor(err))
			return
		}
		bookingID = id.String()
	}
	dup, signalled, err := s.Holds.Store.StoreWebhook(ctx, "stripe", ev.ID, string(ev.Type), ev.IntentID, ev.Fingerprint, ev.Raw)
	if errors.Is(err, store.ErrWebhookConflict) {
		s.Log.Error("ALERT: webhook event ID reused with different content", "event", ev.ID, "type", ev.Type)
		if s.webhookConflicts != nil {
			s.webhookConflicts.Inc()
		}
		s.problem(c, NewProblem(http.StatusConflict, ProbWebhookConflict, "event "+ev.ID+" was already received with other content"))
		return
	}
	if err != nil {
		s.problem(c, s.problemFor(err))
		return
	}
	if (dup && signalled) || bookingID == "" || !sagaActsOn(ev, paymentStatus) {
		_ = s.Holds.Store.MarkWebhookSignalled(ctx, "stripe", ev.ID)
		c.JSON(http.StatusOK, gin.H{"received": true, "duplicate": dup})
		return
	}
	if ev.BookingID != bookingID {
		// The reference does not match: the booking the database names
		// hears of it and refuses to sell on it (rule 4). Alert staff.
		s.Log.Error("ALERT: webhook reference mismatch", "event", ev.ID, "intent", ev.IntentID,
			"metadata_booking", ev.BookingID, "booking", bookingID)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Delivered to the booking the database records for the intent, never
	// to the one the event claims.
	err = saga.DeliverPayment(sctx, s.Temporal, saga.PaymentEvent{EventID: ev.ID, Type: ev.Type,
		IntentID: ev.IntentID, Status: ev.Status, Amount: ev.Amount, BookingID: bookingID, ClaimedBookingID: ev.BookingID})
	if err != nil && !errors.Is(err, saga.ErrNoBooking) {
		// Stored but not delivered: the redelivery will signal it.
		s.problem(c, NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "stored; delivery to the booking failed, retry").RetryAfter(5*time.Second))
		return
	}
	_ = s.Holds.Store.MarkWebhookSignalled(ctx, "stripe", ev.ID)
	c.JSON(http.StatusOK, gin.H{"received": true, "duplicate": dup})
}

// sagaActsOn reports whether the booking needs to hear of the event. Others
// are stored (and reconciled) but cost the workflow nothing: the intent's
// creation, its cancellation by our own void, and the success of our own
// capture.
func sagaActsOn(ev WebhookEvent, recorded vocab.PaymentStatus) bool {
	if ev.Object != "payment_intent" {
		return false
	}
	switch ev.Type {
	case vocab.EventAuthorised, vocab.EventFailed:
		return true
	case vocab.EventSucceeded:
		// Captured by the saga itself: nothing to do. Otherwise money moved
		// that the saga did not ask for, and it must refund it.
		return recorded != vocab.PaymentCaptured && recorded != vocab.PaymentRefunded
	}
	return false
}

// paymentReturn is where the provider sends the fan's browser after a 3-D
// Secure challenge or the hosted page. It proves nothing (anyone can open
// it): the sale happens only on the provider's signed event, so the page
// only tells the fan to watch the booking.
func (s *Server) paymentReturn(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{
		"payment_intent":  c.Query("payment_intent"),
		"redirect_status": c.Query("redirect_status"),
		"message":         "Payment submitted. Your booking updates as soon as the payment provider confirms it.",
	})
}
