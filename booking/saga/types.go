package saga

import (
	"time"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

// BookingInput starts a booking for a committed hold.
type BookingInput struct {
	ReservationID string
	EventID       string
	UserID        string
	// ExpiresAt is the hold's absolute expiry as the database set it; the
	// timer fires at this instant however late the workflow started.
	ExpiresAt time.Time
	// LateEventGrace is how long the booking keeps listening for provider
	// events after its hold ended without a sale (to void or refund late
	// money). Zero means DefaultLateEventGrace.
	LateEventGrace time.Duration
	// MaxAttempts bounds checkout attempts (cards tried). Zero: 3.
	MaxAttempts int
}

// DefaultLateEventGrace is the default LateEventGrace.
const DefaultLateEventGrace = 15 * time.Minute

// BookingResult is how the booking ended.
type BookingResult struct {
	Status    vocab.BookingStatus
	IntentID  string
	TicketIDs []string
	Flagged   string
}

// CheckoutRequest is the fan's checkout. It is written to the booking's
// history (encrypted, but kept for the namespace's retention), so it carries
// a reference to the fan's address, never the address.
type CheckoutRequest struct {
	PaymentMethod string // empty: pay on the provider's hosted page
	ReturnURL     string
	// IP is the raw address that checkouts sent before IPRef existed; it is
	// kept so their recorded histories still decode. Never set it.
	IP string
	// IPRef stands for the fan's address (fraud.IPRef, computed before the
	// saga is called); "" for an address the IP rule does not count.
	IPRef    string
	DeviceID string
}

// PaymentView is the payment part of a checkout answer.
type PaymentView struct {
	IntentID     string             `json:"intent_id"`
	ClientSecret string             `json:"client_secret"`
	Status       vocab.IntentStatus `json:"status"`
	NextAction   string             `json:"next_action"`
}

// CheckoutResult is the checkout Update's answer.
type CheckoutResult struct {
	BookingID string              `json:"booking_id"`
	Status    vocab.BookingStatus `json:"status"`
	Payment   PaymentView         `json:"payment"`
	ExpiresAt time.Time           `json:"expires_at"`
}

// PaymentEvent is a verified provider event for this booking.
type PaymentEvent struct {
	EventID  string
	Type     vocab.ProviderEvent
	IntentID string
	Status   string
	// Amount is the intent's amount (authorised, or captured for
	// payment_intent.succeeded) in minor units with its currency.
	Amount money.Money
	// BookingID is the booking the database records for the intent: the
	// event is delivered to it. ClaimedBookingID is the reference the event
	// itself carries (the intent's booking_id metadata); the two must match.
	BookingID        string
	ClaimedBookingID string
}

// AuthoriseInput asks for one authorisation attempt.
type AuthoriseInput struct {
	BookingID     string
	Attempt       int
	IntentID      string // empty on the first attempt
	PaymentMethod string
	ReturnURL     string
	Amount        money.Money
	StepUp        bool // fraud review: ask for 3-D Secure
}

// AuthoriseResult is an attempt's outcome. A decline is a result, not an
// error: the fan may try another card.
type AuthoriseResult struct {
	IntentID      string
	ClientSecret  string
	Status        vocab.IntentStatus
	NextActionURL string
	Declined      bool
	DeclineCode   string
}

// CaptureResult is a capture's outcome.
type CaptureResult struct{ Status vocab.IntentStatus }

// FraudInput is one checkout attempt to score. IP is set only for a
// checkout sent before IPRef existed (see CheckoutRequest).
type FraudInput struct {
	BookingID, UserID, EventID, IP, IPRef, DeviceID, Card string
	Attempt                                               int
}

// FraudResult is the decision.
type FraudResult struct {
	Decision vocab.FraudDecision
	Score    int
	Reasons  []string
}

// HoldInfo is what the saga adopts from the committed hold.
type HoldInfo struct {
	Status    vocab.BookingStatus
	UserID    string
	EventID   string
	ExpiresAt time.Time
	Total     money.Money
	CancelBy  time.Time
	// StayFreeUntil and StayPenalty are the stays' cancellation terms
	// (store.BookingInfo); zero without stays.
	StayFreeUntil time.Time
	StayPenalty   int64
}

// ReconcileReport lists captured payments without exactly one booking or
// refund, and the repairs reconciliation makes.
type ReconcileReport struct {
	Checked    int
	Captured   int
	Mismatches []string
	// Repairs are the broken states found that reconciliation repairs on
	// its own, each in its own step.
	Repairs []Repair
	// Repaired counts the repairs made, by kind.
	Repaired map[vocab.RepairKind]int
}

// Repair is one broken state to put right.
type Repair struct {
	Kind      vocab.RepairKind
	IntentID  string
	BookingID string
	// Amount is what a refund gives back (minor units).
	Amount int64
	// Provider and EventID name a stored webhook event to signal again.
	Provider, EventID string
}

// StepKey is the repair's idempotency key at the provider: a repair run
// twice (a retried activity, the next scheduled run) moves money once.
func (r Repair) StepKey() string {
	if r.Kind == vocab.RepairUndeliveredWebhook {
		return "reconcile:" + string(r.Kind) + ":" + r.EventID
	}
	return "reconcile:" + string(r.Kind) + ":" + r.IntentID
}
