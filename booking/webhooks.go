package booking

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

// provider names the webhook source in the store.
const provider = "stripe"

// Webhook intake errors; the edge maps each to a problem type.
var (
	// ErrBadSignature: the body did not verify; nothing was stored.
	ErrBadSignature = errors.New("booking: webhook signature refused")
	// ErrWebhookConflict: an event ID arrived again with other content.
	ErrWebhookConflict = errors.New("booking: webhook event ID reused with other content")
	// ErrUnknownPayment: the event names a payment the authorisation step
	// has not recorded yet; the provider should redeliver it.
	ErrUnknownPayment = errors.New("booking: unknown payment")
	// ErrNotDelivered: stored, but its booking could not be signalled; the
	// provider's redelivery will.
	ErrNotDelivered = errors.New("booking: stored; delivery to the booking failed")
)

// SignatureError says why a webhook did not verify.
type SignatureError struct{ Reason string }

func (e *SignatureError) Error() string { return "booking: webhook refused: " + e.Reason }

// Unwrap makes every SignatureError an ErrBadSignature.
func (e *SignatureError) Unwrap() error { return ErrBadSignature }

// Receipt is how a webhook was taken in.
type Receipt struct {
	Received  bool `json:"received"`
	Duplicate bool `json:"duplicate"`
}

// SagaActsOn reports whether the booking workflow needs to hear of a provider
// event, given the payment status Encore recorded. Others are stored (and
// reconciled) but cost the workflow nothing: the intent's creation and its
// cancellation by our own void (the success of our own capture is not even
// stored: EchoOfOwnCapture).
func SagaActsOn(ev payments.WebhookEvent, recorded vocab.PaymentStatus) bool {
	if ev.Object != "payment_intent" {
		return false
	}
	switch ev.Type {
	case vocab.EventAuthorised, vocab.EventFailed:
		return true
	case vocab.EventSucceeded:
		// Captured by the saga itself (the capture's own metadata says so,
		// even before the saga has recorded it): nothing to do, and no
		// workflow task spent on it. Otherwise money moved that the saga did
		// not ask for, and it must refund it.
		return !ev.CapturedBySaga && recorded != vocab.PaymentCaptured && recorded != vocab.PaymentRefunded
	}
	return false
}

// EchoOfOwnCapture reports whether a provider event only echoes what the
// saga did and recorded itself: the success of its own capture (the
// capture's metadata says so). Such an event is answered and not stored,
// one row write fewer a paid booking; every other event is stored once,
// handled, so a redelivery costs nothing and the audit sees what arrived.
func EchoOfOwnCapture(ev payments.WebhookEvent) bool {
	return ev.Object == "payment_intent" && ev.Type == vocab.EventSucceeded && ev.CapturedBySaga
}

// ReceiveWebhook verifies a provider event, deduplicates it (by event ID
// plus a content fingerprint), signals the booking the database records for
// its payment, never the one the event claims, and then stores it handled,
// in one row write. It answers success only once the event is stored; an
// event for a payment Encore does not know yet is ErrUnknownPayment, so the
// provider redelivers it, once it has waited a little for the payment's
// record (paymentOf).
func (s *Service) ReceiveWebhook(ctx context.Context, body []byte, signature string) (Receipt, error) {
	ev, err := payments.ParseWebhook(body, signature, s.WebhookSecret)
	if err != nil {
		return Receipt{}, &SignatureError{Reason: err.Error()}
	}
	if EchoOfOwnCapture(ev) {
		// Nothing to do and nothing to keep: a redelivery finds nothing
		// to do either, and the saga's capture recorded the money.
		return Receipt{Received: true}, nil
	}
	var bookingID string
	var recorded vocab.PaymentStatus
	if ev.IntentID != "" {
		id, status, err := s.paymentOf(ctx, ev)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return Receipt{}, ErrUnknownPayment
		case err != nil:
			return Receipt{}, err
		}
		bookingID, recorded = id.String(), status
	}
	seen, err := s.Store.Bookings.StoredWebhookRecord(ctx, provider, ev.ID)
	if err != nil {
		return Receipt{}, err
	}
	if seen.Found && !bytes.Equal(seen.Fingerprint, ev.Fingerprint) {
		s.Log.Error("ALERT: webhook event ID reused with different content", "event", ev.ID, "type", ev.Type)
		if s.webhookConflicts != nil {
			s.webhookConflicts.Inc()
		}
		return Receipt{}, fmt.Errorf("event %s: %w", ev.ID, ErrWebhookConflict)
	}
	receipt := Receipt{Received: true, Duplicate: seen.Found}
	if seen.Signalled {
		return receipt, nil // handled before: nothing to do again
	}
	if bookingID != "" {
		// Disputes and outside refunds: recorded in the database whether or
		// not the booking's workflow still runs; a failure is answered as
		// one, so the provider redelivers.
		if err := s.applyMoneyEvent(ctx, ev, bookingID); err != nil {
			s.storeUnsignalled(ctx, ev)
			return Receipt{}, err
		}
	}
	if bookingID != "" && SagaActsOn(ev, recorded) {
		if ev.BookingID != bookingID {
			// The reference does not match: the booking the database names
			// hears of it and refuses to sell on it (money moves only on an
			// event whose reference, amount and currency all match). Alert
			// staff.
			s.Log.Error("ALERT: webhook reference mismatch", "event", ev.ID, "intent", ev.IntentID,
				"metadata_booking", ev.BookingID, "booking", bookingID)
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err = workflows.DeliverPayment(sctx, s.Temporal, workflows.PaymentEvent{EventID: ev.ID, Type: ev.Type,
			IntentID: ev.IntentID, Status: ev.Status, Amount: ev.Amount, BookingID: bookingID, ClaimedBookingID: ev.BookingID})
		if err != nil && !errors.Is(err, workflows.ErrNoBooking) {
			s.Log.Warn("deliver provider event", "event", ev.ID, "booking", bookingID, "err", err)
			s.storeUnsignalled(ctx, ev)
			return Receipt{}, ErrNotDelivered
		}
		if s.webhookLag != nil && !ev.Created.IsZero() {
			s.webhookLag.Observe(max(time.Since(ev.Created).Seconds(), 0))
		}
	}
	if err := s.storeHandled(ctx, ev); err != nil {
		return Receipt{}, err
	}
	return receipt, nil
}

// IntentRecordWait is how long an event for a payment the database does not
// know yet waits for its record before it is refused for redelivery. The
// provider sends the authorisation's event as it answers the saga's call,
// and the saga records the intent only once that answer is back, so the
// event often arrives first, by milliseconds. Refused at once, it waited
// for the provider's redelivery (a second in the sandbox, longer at Stripe)
// while the fan watched the page: every card payment was a second or more
// slower than its steps. Only an event naming one of Encore's bookings (its
// booking_id metadata) waits; the database's record still decides which
// booking hears of it.
const IntentRecordWait = 2 * time.Second

// paymentOf is the booking and payment status the database records for the
// event's intent. Not found, and the event names a booking, it watches that
// booking for a change (a payment's insert notifies it, migration 0044) and
// reads again, for at most IntentRecordWait; without notifications it reads
// again every 250 ms.
func (s *Service) paymentOf(ctx context.Context, ev payments.WebhookEvent) (uuid.UUID, vocab.PaymentStatus, error) {
	id, status, err := s.Store.Bookings.BookingByIntent(ctx, ev.IntentID)
	claimed, perr := uuid.Parse(ev.BookingID)
	if !errors.Is(err, store.ErrNotFound) || perr != nil {
		return id, status, err
	}
	var changed <-chan struct{}
	if s.Changes != nil {
		var stop func()
		changed, stop = s.Changes.Watch(claimed) // before the next read: a commit between them still wakes it
		defer stop()
	}
	start := time.Now()
	deadline := start.Add(IntentRecordWait)
	for {
		id, status, err = s.Store.Bookings.BookingByIntent(ctx, ev.IntentID)
		left := time.Until(deadline)
		if !errors.Is(err, store.ErrNotFound) || left <= 0 {
			s.waitedForRecord(start, err)
			return id, status, err
		}
		if changed == nil || !s.Changes.Listening() {
			left = min(left, 250*time.Millisecond)
		}
		t := time.NewTimer(left)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			s.waitedForRecord(start, err)
			return id, status, err
		}
		t.Stop()
	}
}

// waitedForRecord counts an event's wait for its payment's record, by
// whether the record came (err nil) or the event is refused.
func (s *Service) waitedForRecord(start time.Time, err error) {
	if s.recordWaits == nil {
		return
	}
	outcome := "recorded"
	if err != nil {
		outcome = "refused"
	}
	s.recordWaits.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
}

// storeHandled writes the event as handled: delivered to its booking, or one
// the booking needs not hear of. One row write a fresh event: the store's
// read above found it new, and the record of it is written only once it is
// handled. Failing to write it is answered as a failure: the provider
// redelivers, the redelivery is signalled again (the saga drops an event ID
// it has seen) and recorded then. Answered as success, the event would be
// missing from the books, or left unsignalled until the next reconciliation
// and counted lost by the audit (a PostgreSQL restart between the signal and
// this write). What was received is still kept unsignalled if it can be.
func (s *Service) storeHandled(ctx context.Context, ev payments.WebhookEvent) error {
	if err := s.Store.Bookings.StoreWebhook(ctx, provider, ev.ID, string(ev.Type), ev.IntentID, ev.Fingerprint, ev.Raw, true); err != nil {
		s.storeUnsignalled(ctx, ev)
		return fmt.Errorf("record event %s delivered: %w", ev.ID, err)
	}
	return nil
}

// storeUnsignalled keeps an event whose handling failed, unsignalled, for
// the reconciliation to deliver and the audit to count until then; the
// answer to the provider is a failure either way, so it redelivers.
func (s *Service) storeUnsignalled(ctx context.Context, ev payments.WebhookEvent) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.Store.Bookings.StoreWebhook(wctx, provider, ev.ID, string(ev.Type), ev.IntentID, ev.Fingerprint, ev.Raw, false); err != nil {
		s.Log.Warn("store undelivered provider event", "event", ev.ID, "err", err)
	}
}
