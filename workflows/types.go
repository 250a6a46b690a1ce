package workflows

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
	// Total and Seats describe the hold to support (the workflow's summary,
	// EncoreAmount); zero in bookings started before they existed.
	Total money.Money
	Seats int
	// EmailHash is the fan's e-mail keyed-hashed (EmailHash), for the
	// EncoreEmailHash search attribute; empty without an e-mail.
	EmailHash string
	// Email is the fan's address for the workflow's static details, which
	// the payload codec encrypts like every payload. It is never part of
	// the recorded input (json:"-"): the start request alone carries it.
	Email string `json:"-"`
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

// SettledOutside is the settled-outside signal's payload: the booking's
// status as the database now has it.
type SettledOutside struct {
	Status vocab.BookingStatus
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
