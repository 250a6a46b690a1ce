package activities

import (
	"context"
	"errors"
	"time"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

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
	// Resale: the booking buys resale listings; after its tickets the saga
	// pays each seller (PaySellers).
	Resale bool `json:",omitempty"`
}

// HoldInfoOf is the saga's view of a committed hold.
func HoldInfoOf(b store.BookingInfo) HoldInfo {
	return HoldInfo{Status: vocab.BookingStatus(b.Status), UserID: b.UserID, EventID: b.EventID,
		ExpiresAt: b.ExpiresAt, Total: b.Total, CancelBy: b.CancelBy, StayFreeUntil: b.StayFreeUntil, StayPenalty: b.StayPenalty, Resale: b.Resale}
}

// FanCanCancel says a fan may still cancel the paid booking at now: until
// its CancelBy (the event's deadline, or the first check-in).
func (h HoldInfo) FanCanCancel(now time.Time) bool { return now.Before(h.CancelBy) }

// FanRefund is what a fan's cancellation at now gives back: everything,
// or, past the stays' free window, everything but the first night of each
// stay (StayPenalty). Staff cancels refund everything. The saga refunds by
// it and the booking's page shows it before the fan confirms.
func (h HoldInfo) FanRefund(now time.Time) money.Money {
	if h.StayPenalty > 0 && !now.Before(h.StayFreeUntil) {
		return money.Money{Amount: h.Total.Amount - h.StayPenalty, Currency: h.Total.Currency}
	}
	return h.Total
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

// Sagas is how an activity reaches a running booking saga. Package
// workflows implements it over a Temporal client (workflows.Sagas); the
// interface keeps activities free of workflow code.
type Sagas interface {
	// StaffCancel runs the booking saga's staff-cancel Update under
	// updateID. It returns ErrNoSaga when no saga runs for the booking,
	// and ErrSettled when the saga no longer holds a paid or pending sale.
	StaffCancel(ctx context.Context, bookingID, updateID, staff, reason string) error
	// DeliverPayment hands a verified provider event to the booking's saga;
	// ErrNoSaga when none runs.
	DeliverPayment(ctx context.Context, bookingID string, ev payments.WebhookEvent) error
}

// ErrNoSaga: no booking saga runs for the booking (never started, or ended).
var ErrNoSaga = errors.New("no running booking saga")

// ErrSettled: the booking's saga has already ended its sale (cancelled,
// refunded or released), so there is nothing left to cancel.
var ErrSettled = errors.New("the booking is already settled")
