// Package vocab is Encore's shared vocabulary: every typed state, decision and
// name that more than one package speaks, each with its full set in this one
// file. The SQL CHECK constraints in schema/migrations mirror the stored ones;
// nothing else in the tree spells these values as string literals.
package vocab

import "time"

// SeatStatus is the state of one seat.
type SeatStatus string

// Every seat status.
const (
	SeatAvailable SeatStatus = "AVAILABLE"
	SeatHeld      SeatStatus = "HELD"
	SeatSold      SeatStatus = "SOLD"
	SeatBlocked   SeatStatus = "BLOCKED"
)

// SeatStatuses is the full set, in bitmap code order (0 available .. 3 blocked).
var SeatStatuses = []SeatStatus{SeatAvailable, SeatHeld, SeatSold, SeatBlocked}

// ReservationStatus is the state of a hold. A reservation ends exactly one
// way: PAID, EXPIRED or CANCELLED, and every path that ends it locks its row.
type ReservationStatus string

// Every reservation status.
const (
	ReservationPending   ReservationStatus = "PENDING_PAYMENT"
	ReservationPaid      ReservationStatus = "PAID"
	ReservationExpired   ReservationStatus = "EXPIRED"
	ReservationCancelled ReservationStatus = "CANCELLED"
)

// ReservationStatuses is the full set.
var ReservationStatuses = []ReservationStatus{ReservationPending, ReservationPaid, ReservationExpired, ReservationCancelled}

// Live reports whether a reservation in this status owns its seats.
func (s ReservationStatus) Live() bool { return s == ReservationPending || s == ReservationPaid }

// SectionKind says how a section's inventory is counted.
type SectionKind string

// Every section kind.
const (
	SectionSeated  SectionKind = "seated"  // identified inventory: one row per seat
	SectionGeneral SectionKind = "general" // counted inventory: a capacity and a taken count
)

// SectionKinds is the full set.
var SectionKinds = []SectionKind{SectionSeated, SectionGeneral}

// EventStatus is an event's lifecycle as stored. A DRAFT is the organiser's
// alone (fans never see it); a PUBLISHED event is listed and sells between
// its on-sale and off-sale times; a CANCELLED one is listed no more and
// never sells again.
type EventStatus string

// Every stored event status.
const (
	EventDraft     EventStatus = "DRAFT"
	EventPublished EventStatus = "PUBLISHED"
	EventCancelled EventStatus = "CANCELLED"
)

// EventStatuses is the full stored set (the CHECK on events.status).
var EventStatuses = []EventStatus{EventDraft, EventPublished, EventCancelled}

// The statuses an organiser also sees, derived from a PUBLISHED event's sale
// window and never stored.
const (
	EventOnSale  EventStatus = "ON_SALE"  // published, on-sale time passed, off-sale time not yet
	EventOffSale EventStatus = "OFF_SALE" // published, off-sale time passed
)

// Phase is the status an organiser sees at now: a PUBLISHED event is ON_SALE
// from onsale until offsale (zero: no end), OFF_SALE after.
func (s EventStatus) Phase(now, onsale, offsale time.Time) EventStatus {
	if s != EventPublished {
		return s
	}
	switch {
	case !offsale.IsZero() && !now.Before(offsale):
		return EventOffSale
	case !now.Before(onsale):
		return EventOnSale
	}
	return s
}

// SeatAction is an entry of the seat block log.
type SeatAction string

// Every seat action.
const (
	SeatBlock   SeatAction = "block"
	SeatUnblock SeatAction = "unblock"
)

// MaxSeatsPerHold bounds one cart.
const MaxSeatsPerHold = 6

// BookingStatus is a booking as the fan sees it (GET /v1/bookings/{id}): the
// reservation's status refined by its payment.
type BookingStatus string

// Every booking status.
const (
	BookingPendingPayment BookingStatus = "PENDING_PAYMENT"
	BookingAuthorised     BookingStatus = "AUTHORISED"
	BookingPaid           BookingStatus = "PAID"
	BookingExpired        BookingStatus = "EXPIRED"
	BookingCancelled      BookingStatus = "CANCELLED"
	BookingRefunded       BookingStatus = "REFUNDED"
	BookingFailed         BookingStatus = "FAILED"
	// BookingDisputed: paid, and the fan's bank disputes the charge; the
	// tickets stay valid until the dispute is lost.
	BookingDisputed BookingStatus = "DISPUTED"
	// BookingChargedBack: a dispute was lost, the money went back to the
	// fan's bank (not refunded by Encore) and the tickets are revoked.
	BookingChargedBack BookingStatus = "CHARGED_BACK"
)

// BookingStatuses is the full set.
var BookingStatuses = []BookingStatus{BookingPendingPayment, BookingAuthorised, BookingPaid, BookingExpired,
	BookingCancelled, BookingRefunded, BookingFailed, BookingDisputed, BookingChargedBack}

// PaymentStatus is the state of a booking's payment as Encore records it.
type PaymentStatus string

// Every payment status (mirrors the CHECK on payments.status).
const (
	PaymentPending        PaymentStatus = "PENDING"
	PaymentRequiresAction PaymentStatus = "REQUIRES_ACTION"
	PaymentAuthorised     PaymentStatus = "AUTHORISED"
	PaymentCaptured       PaymentStatus = "CAPTURED"
	PaymentVoided         PaymentStatus = "VOIDED"
	PaymentRefunded       PaymentStatus = "REFUNDED"
	PaymentFailed         PaymentStatus = "FAILED"
)

// PaymentStatuses is the full set.
var PaymentStatuses = []PaymentStatus{PaymentPending, PaymentRequiresAction, PaymentAuthorised, PaymentCaptured,
	PaymentVoided, PaymentRefunded, PaymentFailed}

// IntentStatus is a PaymentIntent's state at the provider, spelt as Stripe
// spells it.
type IntentStatus string

// Every intent status.
const (
	IntentRequiresPaymentMethod IntentStatus = "requires_payment_method"
	IntentRequiresConfirmation  IntentStatus = "requires_confirmation"
	IntentRequiresAction        IntentStatus = "requires_action"
	IntentProcessing            IntentStatus = "processing"
	IntentRequiresCapture       IntentStatus = "requires_capture"
	IntentSucceeded             IntentStatus = "succeeded"
	IntentCanceled              IntentStatus = "canceled"
)

// IntentStatuses is the full set.
var IntentStatuses = []IntentStatus{IntentRequiresPaymentMethod, IntentRequiresConfirmation, IntentRequiresAction,
	IntentProcessing, IntentRequiresCapture, IntentSucceeded, IntentCanceled}

// RefundStatus is a refund's state at the provider.
type RefundStatus string

// Every refund status.
const (
	RefundPending   RefundStatus = "pending"
	RefundSucceeded RefundStatus = "succeeded"
	RefundFailed    RefundStatus = "failed"
	RefundCanceled  RefundStatus = "canceled"
)

// RefundStatuses is the full set.
var RefundStatuses = []RefundStatus{RefundPending, RefundSucceeded, RefundFailed, RefundCanceled}

// ProviderEvent is a webhook event type of the payment provider.
type ProviderEvent string

// Every provider event Encore subscribes to.
const (
	EventAuthorised ProviderEvent = "payment_intent.amount_capturable_updated"
	EventSucceeded  ProviderEvent = "payment_intent.succeeded"
	EventFailed     ProviderEvent = "payment_intent.payment_failed"
	EventCanceled   ProviderEvent = "payment_intent.canceled"
	EventRefunded   ProviderEvent = "charge.refunded"
	// EventDisputeCreated: the fan's bank disputes a charge (a chargeback
	// or an inquiry), data.object is the dispute.
	EventDisputeCreated ProviderEvent = "charge.dispute.created"
	// EventDisputeClosed: the dispute ended, won, lost or (an inquiry)
	// closed; data.object is the dispute.
	EventDisputeClosed ProviderEvent = "charge.dispute.closed"
)

// ProviderEvents is the full set: what the webhook endpoint is subscribed to
// (Stripe's enabled_events).
var ProviderEvents = []ProviderEvent{EventAuthorised, EventSucceeded, EventFailed, EventCanceled, EventRefunded,
	EventDisputeCreated, EventDisputeClosed}

// DisputeStatus is a dispute's state at the provider, spelt as Stripe spells
// it (mirrors the CHECK on payment_disputes.status).
type DisputeStatus string

// Every dispute status. The warning_ ones are an inquiry before a
// chargeback (no money moved yet).
const (
	DisputeWarningNeedsResponse DisputeStatus = "warning_needs_response"
	DisputeWarningUnderReview   DisputeStatus = "warning_under_review"
	DisputeWarningClosed        DisputeStatus = "warning_closed"
	DisputeNeedsResponse        DisputeStatus = "needs_response"
	DisputeUnderReview          DisputeStatus = "under_review"
	DisputePrevented            DisputeStatus = "prevented"
	DisputeWon                  DisputeStatus = "won"
	DisputeLost                 DisputeStatus = "lost"
)

// DisputeStatuses is the full set.
var DisputeStatuses = []DisputeStatus{DisputeWarningNeedsResponse, DisputeWarningUnderReview, DisputeWarningClosed,
	DisputeNeedsResponse, DisputeUnderReview, DisputePrevented, DisputeWon, DisputeLost}

// Closed reports whether the dispute has ended: no later status replaces a
// closed one, so events arriving out of order converge.
func (s DisputeStatus) Closed() bool {
	return s == DisputeWarningClosed || s == DisputePrevented || s == DisputeWon || s == DisputeLost
}

// FraudDecision is the outcome of scoring a checkout attempt.
type FraudDecision string

// Every fraud decision.
const (
	FraudAllow  FraudDecision = "allow"
	FraudReview FraudDecision = "review" // step up: 3-D Secure
	FraudDeny   FraudDecision = "deny"
)

// FraudDecisions is the full set.
var FraudDecisions = []FraudDecision{FraudAllow, FraudReview, FraudDeny}

// TicketStatus is the state of one issued ticket.
type TicketStatus string

// Every ticket status (mirrors the CHECK on tickets.status).
const (
	TicketValid   TicketStatus = "VALID"
	TicketRevoked TicketStatus = "REVOKED"
	// TicketTransferred: handed to another fan, who holds a new ticket for
	// the same place.
	TicketTransferred TicketStatus = "TRANSFERRED"
	// TicketListed: offered for resale; no gate admits it until the listing
	// is withdrawn or expires (VALID again) or sold (TRANSFERRED).
	TicketListed TicketStatus = "LISTED"
)

// TicketStatuses is the full set.
var TicketStatuses = []TicketStatus{TicketValid, TicketRevoked, TicketTransferred, TicketListed}

// ListingStatus is the state of a resale listing. A listing a buyer holds
// is still ACTIVE (the hold is its own row); one whose closing time passed
// unsold is EXPIRED.
type ListingStatus string

// Every listing status (mirrors the CHECK on resale_listings.status).
const (
	ListingActive    ListingStatus = "ACTIVE"
	ListingSold      ListingStatus = "SOLD"
	ListingWithdrawn ListingStatus = "WITHDRAWN"
	ListingExpired   ListingStatus = "EXPIRED"
)

// ListingStatuses is the full set.
var ListingStatuses = []ListingStatus{ListingActive, ListingSold, ListingWithdrawn, ListingExpired}

// PayoutStatus is how a sold listing's seller was paid: PAID when the
// whole payout went back to their card, OWED when some or all of it could
// not (they paid less than the payout, or hold the ticket by transfer) and
// is recorded as owed.
type PayoutStatus string

// Every payout status (mirrors the CHECK on resale_listings.payout_status);
// empty until the payout step ran.
const (
	PayoutPending PayoutStatus = "PENDING"
	PayoutPaid    PayoutStatus = "PAID"
	PayoutOwed    PayoutStatus = "OWED"
)

// PayoutStatuses is the full set.
var PayoutStatuses = []PayoutStatus{PayoutPending, PayoutPaid, PayoutOwed}

// TransferStatus is the state of a ticket transfer.
type TransferStatus string

// Every transfer status (mirrors the CHECK on ticket_transfers.status).
const (
	TransferPending   TransferStatus = "PENDING"
	TransferAccepted  TransferStatus = "ACCEPTED"
	TransferCancelled TransferStatus = "CANCELLED"
	TransferExpired   TransferStatus = "EXPIRED"
)

// TransferStatuses is the full set.
var TransferStatuses = []TransferStatus{TransferPending, TransferAccepted, TransferCancelled, TransferExpired}

// Direction is which way a scan at the door let someone through.
type Direction string

// Every direction (mirrors the CHECK on door_scans.direction).
const (
	DirectionIn  Direction = "in"
	DirectionOut Direction = "out"
)

// Directions is the full set.
var Directions = []Direction{DirectionIn, DirectionOut}

// Step is where a booking saga stands, as support staff see it (the
// workflow's step query).
type Step string

// Every step.
const (
	StepAdopting         Step = "adopting-hold"
	StepAwaitingCheckout Step = "awaiting-checkout"
	StepAuthorising      Step = "authorising"
	StepAwaitingPayment  Step = "awaiting-payment"
	StepConfirming       Step = "confirming"
	StepCapturing        Step = "capturing"
	StepIssuing          Step = "issuing-tickets"
	StepNotifying        Step = "notifying"
	StepPayingSellers    Step = "paying-sellers" // a resale's payout to each seller
	StepPaid             Step = "paid"
	StepCompensating     Step = "compensating"
	StepAwaitingLate     Step = "awaiting-late-events"
	StepCancelling       Step = "cancelling"
	StepDone             Step = "done"
)

// Steps is the full set.
var Steps = []Step{StepAdopting, StepAwaitingCheckout, StepAuthorising, StepAwaitingPayment, StepConfirming,
	StepCapturing, StepIssuing, StepPayingSellers, StepNotifying, StepPaid, StepCompensating, StepAwaitingLate, StepCancelling, StepDone}

// ProviderEventTypes is ProviderEvents as plain strings, for a provider
// client's subscription list.
func ProviderEventTypes() []string {
	out := make([]string, len(ProviderEvents))
	for i, e := range ProviderEvents {
		out[i] = string(e)
	}
	return out
}

// WaitlistStatus is the state of one fan's place on a sold-out event's
// waitlist.
type WaitlistStatus string

// Every waitlist status (mirrors the CHECK on waitlist_entries.status).
const (
	WaitlistWaiting WaitlistStatus = "WAITING" // in line for seats that come back
	WaitlistOffered WaitlistStatus = "OFFERED" // holds a time-limited pass for them
	WaitlistUsed    WaitlistStatus = "USED"    // held seats with the offer
	WaitlistExpired WaitlistStatus = "EXPIRED" // let the offer lapse; it passed on
	WaitlistLeft    WaitlistStatus = "LEFT"    // left the list
)

// WaitlistStatuses is the full set.
var WaitlistStatuses = []WaitlistStatus{WaitlistWaiting, WaitlistOffered, WaitlistUsed, WaitlistExpired, WaitlistLeft}

// QuestionKind is what an attendee question asks for.
type QuestionKind string

// Every question kind (mirrors the CHECK on event_questions.kind).
const (
	QuestionText   QuestionKind = "text"
	QuestionEmail  QuestionKind = "email"
	QuestionChoice QuestionKind = "choice"
	QuestionBool   QuestionKind = "bool"
)

// QuestionKinds is the full set.
var QuestionKinds = []QuestionKind{QuestionText, QuestionEmail, QuestionChoice, QuestionBool}

// QuestionPer says whether a question is asked for every ticket or once
// per order.
type QuestionPer string

// Every question scope (mirrors the CHECK on event_questions.per).
const (
	PerTicket QuestionPer = "ticket"
	PerOrder  QuestionPer = "order"
)

// QuestionPers is the full set.
var QuestionPers = []QuestionPer{PerTicket, PerOrder}

// RepairKind is a broken state that reconciliation repairs, each with its
// own step (and provider idempotency key).
type RepairKind string

// Every repair.
const (
	// RepairLeakedAuthorisation: an authorisation still holds the fan's
	// money although its booking ended (or is unknown): void it.
	RepairLeakedAuthorisation RepairKind = "leaked_authorisation"
	// RepairOrphanCapture: money captured without a PAID booking and not
	// refunded in full: refund the rest.
	RepairOrphanCapture RepairKind = "orphan_capture"
	// RepairUndeliveredWebhook: a verified provider event stored but never
	// signalled to its booking: signal it again.
	RepairUndeliveredWebhook RepairKind = "undelivered_webhook"
)

// RepairKinds is the full set.
var RepairKinds = []RepairKind{RepairLeakedAuthorisation, RepairOrphanCapture, RepairUndeliveredWebhook}

// PropertyNoticeKind is what a property is told about one of its bookings
// (mirrors the CHECK on property_notices.kind). Each is written in the
// transaction that made the change and emailed to the property once.
type PropertyNoticeKind string

// Every property notice.
const (
	// NoticeBooked: a paid booking has a stay at the property.
	NoticeBooked PropertyNoticeKind = "BOOKED"
	// NoticeChanged: a booking's stay changed at the property: a guest
	// walked in from another property for a night.
	NoticeChanged PropertyNoticeKind = "CHANGED"
	// NoticeCancelled: a paid booking with a stay at the property was
	// cancelled; its rooms are free again.
	NoticeCancelled PropertyNoticeKind = "CANCELLED"
	// NoticeWalked: a guest was walked off one of the property's nights to
	// another property.
	NoticeWalked PropertyNoticeKind = "WALKED"
)

// PropertyNoticeKinds is the full set.
var PropertyNoticeKinds = []PropertyNoticeKind{NoticeBooked, NoticeChanged, NoticeCancelled, NoticeWalked}
