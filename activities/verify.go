package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/vocab"
)

// EventClaim is what a provider event received by the saga's payment
// signal says: the signal is not the provider (anyone who reaches the
// Temporal UI can send one), so the saga asks the provider before acting
// on it (VerifyPaymentEvent).
type EventClaim struct {
	// BookingID is the booking whose saga received the event.
	BookingID string
	EventID   string
	Type      vocab.ProviderEvent
	IntentID  string
	// Amount is what the event says moved: the capturable amount of an
	// authorisation, the amount received of a success, the intent's amount
	// otherwise (payments.WebhookEvent).
	Amount money.Money
}

// EventCheck is the provider's answer to an EventClaim.
type EventCheck struct {
	// Confirmed: the intent exists, names the booking in its metadata, is in
	// the status the event's type leaves it in, and holds the amount and
	// currency the event claims.
	Confirmed bool
	// Owned: the intent exists and its metadata names the booking, whatever
	// its status or amount (enough to give its money back).
	Owned bool
	// Mismatch says why the event is not confirmed; empty when it is.
	Mismatch string
	// The provider's view of the intent (zero when it does not exist).
	Status    vocab.IntentStatus
	Amount    money.Money
	MetaOwner string
}

// VerifyPaymentEvent confirms a provider event with the provider before the
// saga acts on it: one retrieve of the intent the event names. An event
// the provider does not bear out is a result (Confirmed false, Mismatch
// says why), not an error; only a provider that does not answer is an
// error, retried by the saga.
func (a *Booking) VerifyPaymentEvent(ctx context.Context, in EventClaim) (EventCheck, error) {
	if in.IntentID == "" {
		return EventCheck{Mismatch: "the event names no payment intent"}, nil
	}
	it, err := a.Payments.Retrieve(ctx, in.IntentID)
	var rejected *payments.RejectedError
	if errors.As(err, &rejected) {
		// No such intent (404), or one this account cannot read.
		return EventCheck{Mismatch: "the provider does not know intent " + in.IntentID + ": " + rejected.Message}, nil
	}
	if err != nil {
		return EventCheck{}, err
	}
	return checkEvent(in, it), nil
}

// checkEvent compares what an event claims with the intent the provider
// holds (VerifyPaymentEvent).
func checkEvent(in EventClaim, it payments.Intent) EventCheck {
	out := EventCheck{Status: it.Status, Amount: it.Amount, MetaOwner: it.BookingID}
	if it.BookingID != in.BookingID {
		out.Mismatch = fmt.Sprintf("intent %s belongs to booking %q at the provider", it.ID, it.BookingID)
		return out
	}
	out.Owned = true
	var want vocab.IntentStatus
	amount := it.Amount
	switch in.Type {
	case vocab.EventAuthorised:
		want = vocab.IntentRequiresCapture
	case vocab.EventSucceeded:
		want = vocab.IntentSucceeded
		amount.Amount = it.AmountReceived
	case vocab.EventFailed:
		want = vocab.IntentRequiresPaymentMethod
	default:
		out.Mismatch = "event type " + string(in.Type) + " is not one the saga acts on"
		return out
	}
	switch {
	case it.Status != want:
		out.Mismatch = fmt.Sprintf("intent %s is %s at the provider, not %s", it.ID, it.Status, want)
	case amount != in.Amount:
		out.Mismatch = fmt.Sprintf("intent %s holds %d %s at the provider, the event claims %d %s",
			it.ID, amount.Amount, amount.Currency, in.Amount.Amount, in.Amount.Currency)
	default:
		out.Confirmed = true
	}
	return out
}
