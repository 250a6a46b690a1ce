package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/fraud"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/vocab"
)

// Activities are the booking saga's side effects, each a method, with the
// dependencies they share. Every exported method is an activity (Register
// lists them); helpers stay unexported.
type Booking struct {
	Store    *store.Store
	Payments *payments.Client
	Keyring  *tickets.Keyring
	Mailer   notify.Mailer
	Log      *slog.Logger
	// ReturnURL is where the provider sends the fan after a 3-D Secure
	// challenge or the hosted page.
	ReturnURL string
	// NoLoopbackReturn refuses a requested return page on a loopback host
	// (production: the API checks it first, this guards a saga started
	// before that check).
	NoLoopbackReturn bool
	// IPSecret keys fraud.IPRef, for checkouts that still carry a raw
	// address (sent before the edge hashed it).
	IPSecret []byte
	// PublicURL is the API's base URL as fans reach it (ENCORE_PUBLIC_URL):
	// the base of links in emails. Empty: emails carry no link.
	PublicURL string
	// Sagas reach running booking sagas: support's cancel goes through the
	// booking's own saga, and reconciliation hands it the provider events
	// it finds undelivered.
	Sagas Sagas
	// RepairGrace is how old a payment must be before reconciliation
	// repairs it (0: 15 minutes; negative: at once, for tests).
	RepairGrace time.Duration
	// Metrics publish reconciliation's and the audit's findings (nil:
	// none).
	Metrics *Metrics

	// fingerprints remembers each payment method's card fingerprint: a
	// payment method never changes its card, so each costs one provider
	// call per process.
	fpMu         sync.Mutex
	fingerprints map[string]string
}

// maxFingerprints bounds the fingerprint memory; past it, it starts over.
const maxFingerprints = 100_000

// cardKey is what the card velocity rule counts for a payment method: its
// card's fingerprint, which every payment method of the same card number
// shares, so one card is one card however many tokens it hides behind.
// Without a payment method (the hosted page) or a card behind it there is
// nothing to count; an unknown payment method is refused by the
// authorisation, not here.
func (a *Booking) cardKey(ctx context.Context, paymentMethod string) (string, error) {
	if paymentMethod == "" {
		return "", nil
	}
	a.fpMu.Lock()
	fp, ok := a.fingerprints[paymentMethod]
	a.fpMu.Unlock()
	if ok {
		return fraud.CardKey(fp), nil
	}
	fp, err := a.Payments.CardFingerprint(ctx, paymentMethod)
	var rejected *payments.RejectedError
	switch {
	case errors.Is(err, payments.ErrNotACard), errors.As(err, &rejected):
		return "", nil
	case err != nil:
		return "", err
	}
	a.fpMu.Lock()
	if a.fingerprints == nil || len(a.fingerprints) >= maxFingerprints {
		a.fingerprints = map[string]string{}
	}
	a.fingerprints[paymentMethod] = fp
	a.fpMu.Unlock()
	return fraud.CardKey(fp), nil
}

func parseID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.UUID{}, temporal.NewNonRetryableApplicationError("bad booking ID", ErrTypeInvalidID, err)
	}
	return id, nil
}

// LoadBooking adopts the committed hold: the database's expiry and total are
// the truth the saga runs on.
func (a *Booking) LoadBooking(ctx context.Context, bookingID string) (HoldInfo, error) {
	id, err := parseID(bookingID)
	if err != nil {
		return HoldInfo{}, err
	}
	b, err := a.Store.Bookings.LoadBooking(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return HoldInfo{}, temporal.NewNonRetryableApplicationError("no such hold", ErrTypeNotFound, err)
	}
	if err != nil {
		return HoldInfo{}, err
	}
	return HoldInfoOf(b), nil
}

// ExtendHold extends the hold once for a 3-D Secure challenge.
func (a *Booking) ExtendHold(ctx context.Context, bookingID string, d time.Duration) (time.Time, error) {
	id, err := parseID(bookingID)
	if err != nil {
		return time.Time{}, err
	}
	return a.Store.Holds.ExtendHold(ctx, id, d)
}

// FraudCheck scores the attempt and records the decision.
func (a *Booking) FraudCheck(ctx context.Context, in FraudInput) (FraudResult, error) {
	id, err := parseID(in.BookingID)
	if err != nil {
		return FraudResult{}, err
	}
	card, err := a.cardKey(ctx, in.Card)
	if err != nil {
		return FraudResult{}, err
	}
	ip := in.IPRef
	if ip == "" && in.IP != "" {
		ip = fraud.IPRef(a.IPSecret, in.IP)
	}
	sig, err := a.Store.Bookings.FraudSignals(ctx, in.UserID, in.EventID, ip, in.DeviceID, card)
	if err != nil {
		return FraudResult{}, err
	}
	r := fraud.Score(sig)
	if err := a.Store.Bookings.RecordFraud(ctx, id, in.Attempt, r.Decision, r.Score, r.Reasons, in.UserID, ip, in.DeviceID, card); err != nil {
		return FraudResult{}, err
	}
	return FraudResult{Decision: r.Decision, Score: r.Score, Reasons: r.Reasons}, nil
}

// Authorise creates the booking's intent (first attempt) or confirms it with
// another card, under the attempt's step key. A lost answer is resolved by
// looking the payment up before deciding.
func (a *Booking) Authorise(ctx context.Context, in AuthoriseInput) (AuthoriseResult, error) {
	id, err := parseID(in.BookingID)
	if err != nil {
		return AuthoriseResult{}, err
	}
	var intent payments.Intent
	switch {
	case in.IntentID == "":
		intent, err = a.Payments.Authorise(ctx, StepKey(in.BookingID, StepKeyAuthorise), in.BookingID, in.Amount, in.PaymentMethod, a.returnTo(in.ReturnURL), in.StepUp)
	case in.PaymentMethod == "":
		// Another try on the hosted page: the existing intent, linked.
		intent, err = a.Payments.Hosted(ctx, in.IntentID)
	default:
		intent, err = a.Payments.Confirm(ctx, AttemptStepKey(in.BookingID, in.Attempt), in.IntentID, in.PaymentMethod, a.returnTo(in.ReturnURL), in.StepUp)
	}
	var declined *payments.DeclinedError
	var rejected *payments.RejectedError
	switch {
	case errors.As(err, &declined):
		// The intent exists and needs another card; the provider named it
		// with the decline (a lookup by booking is the fallback).
		intentID := declined.IntentID
		if intentID == "" {
			intentID = in.IntentID
		}
		if intentID == "" {
			found, ok, ferr := a.Payments.FindByBooking(ctx, in.BookingID)
			if ferr != nil {
				return AuthoriseResult{}, ferr
			}
			if ok {
				intentID = found.ID
			}
		}
		res := AuthoriseResult{IntentID: intentID, Declined: true, DeclineCode: declined.DeclineCode, Status: vocab.IntentRequiresPaymentMethod}
		if intentID != "" {
			if err := a.Store.Bookings.SavePayment(ctx, id, intentID, in.Amount, vocab.PaymentPending, in.Attempt); err != nil {
				return AuthoriseResult{}, err
			}
		}
		return res, nil
	case errors.As(err, &rejected):
		return AuthoriseResult{}, temporal.NewNonRetryableApplicationError(rejected.Error(), ErrTypeRejected, err)
	case errors.Is(err, payments.ErrUnknown):
		found, ok, ferr := a.lookup(ctx, in)
		if ferr != nil {
			return AuthoriseResult{}, ferr
		}
		if !ok {
			// Nothing happened at the provider: the retry (same key) is safe.
			return AuthoriseResult{}, err
		}
		if found.Status == vocab.IntentRequiresPaymentMethod && in.PaymentMethod != "" {
			// Created but the confirm's outcome is still unknown: retry it.
			return AuthoriseResult{}, err
		}
		intent = found
	case err != nil:
		return AuthoriseResult{}, err
	}
	if intent.BookingID != "" && intent.BookingID != in.BookingID {
		return AuthoriseResult{}, temporal.NewNonRetryableApplicationError("intent belongs to another booking", ErrTypeIntentMismatch, nil)
	}
	status := vocab.PaymentPending
	switch intent.Status {
	case vocab.IntentRequiresAction:
		status = vocab.PaymentRequiresAction
	case vocab.IntentRequiresCapture:
		status = vocab.PaymentAuthorised
	}
	if err := a.Store.Bookings.SavePayment(ctx, id, intent.ID, in.Amount, status, in.Attempt); err != nil {
		return AuthoriseResult{}, err
	}
	return AuthoriseResult{IntentID: intent.ID, ClientSecret: intent.ClientSecret, Status: intent.Status,
		NextActionURL: intent.NextActionURL}, nil
}

// lookup finds the intent after a lost answer: by ID when known, else by the
// booking it names.
func (a *Booking) lookup(ctx context.Context, in AuthoriseInput) (payments.Intent, bool, error) {
	if in.IntentID != "" {
		it, err := a.Payments.Retrieve(ctx, in.IntentID)
		return it, err == nil, err
	}
	return a.Payments.FindByBooking(ctx, in.BookingID)
}

// ConfirmSale turns the hold into a sale (false: the hold ended first). A
// hold whose nights are no longer held fails without retrying
// (ErrTypeUnsellable): nothing was sold and no retry can sell it.
func (a *Booking) ConfirmSale(ctx context.Context, bookingID string) (bool, error) {
	id, err := parseID(bookingID)
	if err != nil {
		return false, err
	}
	ok, waited, err := a.Store.Bookings.ConfirmSaleTimed(ctx, id)
	if errors.Is(err, store.ErrUnsellable) {
		return false, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeUnsellable, err)
	}
	if ok && err == nil && waited > 0 && a.Metrics != nil {
		a.Metrics.checkoutToPaid.Observe(waited.Seconds())
	}
	return ok, err
}

// Capture takes the authorised money under the capture step key; a lost
// answer is resolved by reading the intent.
func (a *Booking) Capture(ctx context.Context, bookingID, intentID string) (CaptureResult, error) {
	id, err := parseID(bookingID)
	if err != nil {
		return CaptureResult{}, err
	}
	it, err := a.Payments.Capture(ctx, StepKey(bookingID, StepKeyCapture), intentID)
	if err != nil {
		got, rerr := a.Payments.Retrieve(ctx, intentID)
		if rerr != nil || got.Status != vocab.IntentSucceeded {
			var rejected *payments.RejectedError
			if errors.As(err, &rejected) {
				// An authorisation that can no longer be captured: retrying
				// for an hour with the seats SOLD helps nobody.
				return CaptureResult{}, temporal.NewNonRetryableApplicationError(rejected.Error(), ErrTypeRejected, err)
			}
			return CaptureResult{}, err
		}
		it = got
	}
	if it.Status != vocab.IntentSucceeded {
		return CaptureResult{}, fmt.Errorf("capture left the intent %s", it.Status)
	}
	return CaptureResult{Status: it.Status}, a.Store.Bookings.RecordCapture(ctx, id, it.CardBrand, it.CardLast4)
}

// Void releases an uncaptured authorisation; money already captured is
// refunded instead. Idempotent.
func (a *Booking) Void(ctx context.Context, bookingID, intentID string) error {
	id, err := parseID(bookingID)
	if err != nil {
		return err
	}
	if intentID == "" {
		// An authorisation whose answer was lost: find it by booking (the
		// provider's search can lag, so an empty answer is retried).
		found, ok, err := a.Payments.FindByBooking(ctx, bookingID)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("no intent found for the booking yet")
		}
		intentID = found.ID
	}
	it, err := a.Payments.Retrieve(ctx, intentID)
	if err != nil {
		return err
	}
	switch it.Status {
	case vocab.IntentCanceled:
		return a.Store.Bookings.SetPaymentStatus(ctx, id, vocab.PaymentVoided, "")
	case vocab.IntentSucceeded:
		return a.Refund(ctx, bookingID, intentID)
	}
	if _, err := a.Payments.Void(ctx, StepKey(bookingID, StepKeyVoid), intentID); err != nil {
		if got, rerr := a.Payments.Retrieve(ctx, intentID); rerr != nil || got.Status != vocab.IntentCanceled {
			return err
		}
	}
	return a.Store.Bookings.SetPaymentStatus(ctx, id, vocab.PaymentVoided, "")
}

// Refund returns captured money under the refund step key (an uncaptured
// authorisation is voided instead).
func (a *Booking) Refund(ctx context.Context, bookingID, intentID string) error {
	id, captured, err := a.captured(ctx, bookingID, intentID)
	if err != nil || !captured {
		return err
	}
	r, err := a.Payments.Refund(ctx, StepKey(bookingID, StepKeyRefund), intentID)
	if err != nil {
		return err
	}
	return a.refunded(ctx, id, bookingID, r)
}

// refunded records the provider's refund r on the booking and tells the fan
// what came back.
func (a *Booking) refunded(ctx context.Context, id uuid.UUID, bookingID string, r payments.Refund) error {
	if err := a.Store.Bookings.SetPaymentStatus(ctx, id, vocab.PaymentRefunded, r.ID); err != nil {
		return err
	}
	// A refund of an invoiced booking has its credit note.
	if _, err := a.Store.Bookings.IssueCreditNote(ctx, id, r.Amount); err != nil && !errors.Is(err, store.ErrNoInvoice) {
		return err
	}
	a.tellCancelled(ctx, id, bookingID, r.Amount)
	return nil
}

// captured reports whether the booking's intent was captured, so there is
// money to refund; an uncaptured authorisation is voided here instead.
func (a *Booking) captured(ctx context.Context, bookingID, intentID string) (uuid.UUID, bool, error) {
	id, err := parseID(bookingID)
	if err != nil {
		return id, false, err
	}
	it, err := a.Payments.Retrieve(ctx, intentID)
	if err != nil {
		return id, false, err
	}
	if it.Status != vocab.IntentSucceeded {
		return id, false, a.Void(ctx, bookingID, intentID)
	}
	return id, true, nil
}

// CancelSale undoes a sale: tickets revoked, seats back.
func (a *Booking) CancelSale(ctx context.Context, bookingID string) error {
	id, err := parseID(bookingID)
	if err != nil {
		return err
	}
	_, err = a.Store.Bookings.CancelPaid(ctx, id)
	if errors.Is(err, store.ErrNotPending) {
		return nil
	}
	return err
}

// IssueTickets creates one ticket per seat (or general-admission unit), each
// with its own sealed QR secret. A retry adds nothing: the unique key absorbs
// it, and the stored tickets are returned. A booking that is not PAID when
// the tickets are written gets none (ErrTypeNotPaid, not retried): the sale
// was undone before its tickets, and no retry can make them right.
func (a *Booking) IssueTickets(ctx context.Context, bookingID string) ([]string, error) {
	id, err := parseID(bookingID)
	if err != nil {
		return nil, err
	}
	b, err := a.Store.Bookings.LoadBooking(ctx, id)
	if err != nil {
		return nil, err
	}
	if b.Resale {
		return a.issueResold(ctx, id)
	}
	units, err := a.Store.Bookings.BookingUnits(ctx, id)
	if err != nil {
		return nil, err
	}
	rows := make([]store.TicketRow, 0, len(units))
	for _, u := range units {
		tid, sealed, err := a.Keyring.Mint()
		if err != nil {
			return nil, err
		}
		rows = append(rows, store.TicketRow{ID: tid, ReservationID: id, EventID: b.EventID, SectionID: u.SectionID,
			SeatID: u.SeatID, Unit: u.Unit, UserID: b.UserID, SecretSealed: sealed})
	}
	// The tickets and the organisation's invoice, numbered now that the sale
	// stands, in one transaction; a retry writes neither twice.
	if err := a.Store.Tickets.IssueSale(ctx, id, rows); err != nil {
		if errors.Is(err, store.ErrNotPaid) {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNotPaid, err)
		}
		return nil, err
	}
	issued, err := a.Store.Tickets.TicketsOfReservation(ctx, id)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(issued))
	for i, t := range issued {
		ids[i] = t.ID
	}
	return ids, nil
}

// Notify sends the fan one message of kind for the booking, once.
func (a *Booking) Notify(ctx context.Context, bookingID, kind string) error {
	id, err := parseID(bookingID)
	if err != nil {
		return err
	}
	if done, err := a.Store.Bookings.Notified(ctx, id, kind); err != nil || done {
		return err
	}
	return a.sendConfirmation(ctx, id, bookingID, kind)
}

// sendConfirmation sends the booking's confirmation (kind says why: the
// sale, or a resend by support staff) and logs it.
func (a *Booking) sendConfirmation(ctx context.Context, id uuid.UUID, bookingID, kind string) error {
	b, err := a.Store.Bookings.Booking(ctx, id, "")
	if err != nil {
		return err
	}
	// The address is read here, not carried by the workflow: personal data
	// stays out of its history.
	to, err := a.recipient(ctx, id)
	if err != nil {
		return err
	}
	key := store.BookingMailKey(id, kind)
	if kind != NotifyConfirmation {
		key += "-" + uuid.NewString() // a resend is a new message
	}
	c := a.confirmation(ctx, id, bookingID, b)
	c.Resent = kind != NotifyConfirmation
	m, err := notify.ConfirmationMessage(to, key, c)
	if err != nil {
		return err
	}
	if kind == NotifyConfirmation {
		if q, ok := a.Mailer.(retriedSender); ok {
			// The queue's row, by the message's key, is the message's record
			// (support reads it; SendRetried finds it on a retry and sends
			// nothing): one row write for the message, sent or not.
			return q.SendRetried(ctx, m)
		}
	}
	if err := a.Mailer.Send(ctx, m); err != nil {
		return err
	}
	if kind == NotifyConfirmation {
		return a.Store.Bookings.RecordSentOnce(ctx, id, kind, to)
	}
	return a.Store.Bookings.LogNotification(ctx, id, kind, to) // every resend is logged
}

// retriedSender is a mailer that sends for a caller retried until it
// succeeds and records the message itself (outbox.Mail.SendRetried). Only
// the Notify activity, which Temporal retries, sends through it: a message
// sent from a path that gives up after one try goes through Send, queued
// before it is tried.
type retriedSender interface {
	SendRetried(ctx context.Context, m notify.Message) error
}

// FlagPayment records a reason for staff to look at the payment.
func (a *Booking) FlagPayment(ctx context.Context, bookingID, reason string) error {
	id, err := parseID(bookingID)
	if err != nil {
		return err
	}
	a.Log.Warn("payment flagged", "booking", bookingID, "reason", reason)
	return a.Store.Bookings.FlagPayment(ctx, id, reason)
}

// returnTo is where the provider sends the fan back after its page: the
// page the fan asked for (the web app's booking page) when it is on the
// API's own origin (PublicURL), or on a loopback host (a development
// stack), else the configured ReturnURL. Anything else would make the
// provider's redirect an open redirect to another site.
func (a *Booking) returnTo(requested string) string {
	if requested == "" {
		return a.ReturnURL
	}
	u, err := url.Parse(requested)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return a.ReturnURL
	}
	if pub, err := url.Parse(a.PublicURL); err == nil && a.PublicURL != "" && strings.EqualFold(pub.Scheme, u.Scheme) && strings.EqualFold(pub.Host, u.Host) {
		return requested
	}
	if ip := net.ParseIP(u.Hostname()); !a.NoLoopbackReturn && ((ip != nil && ip.IsLoopback()) || strings.EqualFold(u.Hostname(), "localhost")) {
		return requested
	}
	return a.ReturnURL
}

// ProviderPayment is what the provider and Encore's database say of the
// payment a provider event names: the saga acts on this, never on what a
// signal says (anyone who may signal a workflow could otherwise sell seats
// on a payment that never happened, or refund another booking's money).
type ProviderPayment struct {
	// Known: the provider has the intent. Unknown, nothing else is set.
	Known  bool
	Status vocab.IntentStatus
	Amount money.Money
	// ClaimedBookingID is the booking the intent's own metadata names.
	ClaimedBookingID string
	// BookingID is the booking the database records for the intent ("" when
	// none does).
	BookingID string
}

// CheckPayment reads the intent from the provider and the booking the
// database records for it. An intent the provider refuses to show (404 and
// the like) is unknown, not an error: no retry will find it.
func (a *Booking) CheckPayment(ctx context.Context, intentID string) (ProviderPayment, error) {
	it, err := a.Payments.Retrieve(ctx, intentID)
	var rejected *payments.RejectedError
	if errors.As(err, &rejected) {
		return ProviderPayment{}, nil
	}
	if err != nil {
		return ProviderPayment{}, err
	}
	p := ProviderPayment{Known: true, Status: it.Status, Amount: it.Amount, ClaimedBookingID: it.BookingID}
	id, _, err := a.Store.Bookings.BookingByIntent(ctx, intentID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return ProviderPayment{}, err
	default:
		p.BookingID = id.String()
	}
	return p, nil
}
