// Package booking is the booking use case of the buy plane: checkout of a
// committed hold, a fan's release and cancellation, the booking as the fan
// sees it, and the intake of the payment provider's webhooks. It decides what
// a booking's status is and which provider events the saga must hear of; the
// HTTP edge only decodes, calls and encodes.
//
// The saga itself (one Temporal workflow per booking) lives in workflows,
// its side effects in activities;
// this package starts it, updates it and signals it, and turns its
// typed failures into the domain errors below.
package booking

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/backpressure"
	"github.com/encore-tickets/encore/fraud"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

// Service runs the booking use case.
type Service struct {
	Holds    *holds.Service
	Store    *store.Store
	Temporal client.Client
	Log      *slog.Logger
	// WebhookSecret verifies the provider's signatures.
	WebhookSecret string
	// Saga is the saga's shared load: a checkout past its bounds is refused
	// before it starts anything, and every checkout is measured. Nil admits
	// every checkout.
	Saga *backpressure.Monitor
	// LateEventGrace is how long a finished booking keeps listening for
	// provider events (zero: the saga's default).
	LateEventGrace time.Duration
	// IPSecret keys the reference (fraud.IPRef) that stands for the fan's
	// address in the saga: the raw address never reaches its history.
	IPSecret []byte
	// CancelRate is how many bookings a second an event cancellation
	// refunds (zero: the job's default).
	CancelRate int
	// Changes wakes a fan's page waiting on its booking (Watch); nil, a
	// waiter reads again every second instead.
	Changes *store.BookingChanges

	webhookConflicts prometheus.Counter
	webhookLag       prometheus.Histogram
	recordWaits      *prometheus.HistogramVec
}

// Register creates the use case's metrics on reg.
func (s *Service) Register(reg prometheus.Registerer) {
	s.webhookConflicts = prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_webhook_conflicts_total",
		Help: "Provider events whose ID arrived again with other content (alert on any)."})
	s.webhookLag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "encore_webhook_lag_seconds",
		Help:    "Time from the provider creating an event to its booking hearing of it (redeliveries included).",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)})
	s.recordWaits = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "encore_webhook_record_wait_seconds",
		Help: "Provider events that arrived before their payment was recorded, by how long they waited for it: " +
			"outcome recorded (then handled) or refused (redelivery asked for after IntentRecordWait).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 12)}, []string{"outcome"})
	reg.MustRegister(s.webhookConflicts, s.webhookLag, s.recordWaits)
}

// Errors of the use case; the edge maps each to a problem type.
var (
	// ErrRefused: the fraud check refused the payment.
	ErrRefused = errors.New("booking: the payment was refused")
	// ErrNotCancellable: outside the event's cancellation policy, or the
	// booking can no longer change.
	ErrNotCancellable = errors.New("booking: the booking cannot be cancelled")
	// ErrBusy: another checkout of this booking is still running.
	ErrBusy = errors.New("booking: another request for this booking is in progress")
	// ErrUnavailable: the saga could not answer now; retry. Nothing was
	// started or the start was rolled back: the hold stands as it was.
	ErrUnavailable = errors.New("booking: the booking service is unavailable")
)

// DeclinedError is a card decline; the fan may try another card while
// attempts are left.
type DeclinedError struct {
	Message string
	Code    string
	// AttemptsLeft is nil when the saga did not say.
	AttemptsLeft *int
}

func (e *DeclinedError) Error() string { return "booking: " + e.Message }

// CheckoutRequest is the fan's checkout of a hold.
type CheckoutRequest struct {
	PaymentMethod string // empty: pay on the provider's hosted page
	ReturnURL     string
	// IP and DeviceID are fraud signals of the caller.
	IP       string
	DeviceID string
	// Answers answer the event's questions; checked and kept before the
	// payment starts (store.SaveAnswers).
	Answers []store.Answer
}

// View is a booking as the fan sees it.
type View struct {
	BookingID string              `json:"booking_id"`
	HoldID    string              `json:"hold_id"`
	EventID   string              `json:"event_id"`
	Status    vocab.BookingStatus `json:"status"`
	Total     money.Money         `json:"total"`
	SeatIDs   []string            `json:"seat_ids"`
	// PromoCode is the promotion the hold was priced with ("" without).
	PromoCode string `json:"promo_code,omitempty"`
	// Event is the booked event, omitted for a hotel-only booking.
	Event *EventView `json:"event,omitempty"`
	// Items are the booking's seats and general-admission places with the
	// prices frozen at hold time, each labelled for people.
	Items   []ItemView   `json:"items"`
	Tickets []TicketView `json:"tickets"`
	// Vouchers are the hotel vouchers of a paid package or stay.
	Vouchers []VoucherView `json:"vouchers"`
	// Stays are the booking's hotel rooms night by night with their frozen
	// prices, as its hold shows them, whatever its state: a fan's list of
	// bookings names and dates a hotel-only stay (which has no event) and
	// a package's rooms before any voucher exists. Omitted without stays.
	Stays   []holds.ViewStay `json:"stays,omitempty"`
	Payment *PaymentView     `json:"payment,omitempty"`
	// Dispute is the booking's latest dispute (booking/disputes.go).
	Dispute *DisputeView `json:"dispute,omitempty"`
	// ExpiresAt is when a hold still waiting for payment ends.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Cancellation is what the fan's cancellation of a paid booking would
	// do now: shown on the booking's own page before the fan confirms
	// (not in lists).
	Cancellation *CancellationView `json:"cancellation,omitempty"`
}

// CancellationView is a paid booking's cancellation terms: whether the fan
// may still cancel, until when, and what would be refunded.
type CancellationView struct {
	Allowed  bool        `json:"allowed"`
	Deadline time.Time   `json:"deadline"`
	Refund   money.Money `json:"refund"`
}

// TicketView names one ticket of a booking.
type TicketView struct {
	ID     string `json:"id"`
	SeatID string `json:"seat_id,omitempty"`
	Status string `json:"status"`
	// Label is the ticket's place for people ("Lower 7, Row P, Seat 16").
	Label string `json:"label"`
}

// EventView is the booked event as the fan's pages show it: the start in
// the venue's time zone (IANA), where the fan will be.
type EventView struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	StartsAt time.Time `json:"starts_at"`
	Timezone string    `json:"timezone"`
	Venue    VenueRef  `json:"venue"`
}

// EventOf is the event as a booking or a ticket shows it; nil for none (a
// hotel-only booking).
func EventOf(e store.EventRef) *EventView {
	if e.ID == "" {
		return nil
	}
	return &EventView{ID: e.ID, Title: e.Title, StartsAt: e.StartsAt.UTC(), Timezone: e.Timezone,
		Venue: VenueRef{Name: e.VenueName, City: e.VenueCity}}
}

// VenueRef names a venue.
type VenueRef struct {
	Name string `json:"name"`
	City string `json:"city"`
}

// ItemView is one line of a booking: a seat, or places in a standing area.
type ItemView struct {
	SeatID    string      `json:"seat_id,omitempty"`
	SectionID string      `json:"section_id"`
	Quantity  int         `json:"quantity"`
	Price     money.Money `json:"price"`
	// Discount is what the hold's promotion took off each unit before
	// Price, in the same currency's minor units (0 without one).
	Discount int64  `json:"discount"`
	Label    string `json:"label"`
}

// VoucherView is one hotel voucher of a booking: one per stay.
type VoucherView struct {
	ID           string `json:"id"`
	PropertyID   string `json:"property_id"`
	RoomType     string `json:"room_type"`
	Checkin      string `json:"checkin"`
	Checkout     string `json:"checkout"`
	Confirmation string `json:"confirmation"`
	Status       string `json:"status"` // VALID, or VOID once cancelled
}

// PaymentView is the payment part of a booking.
type PaymentView struct {
	IntentID string `json:"intent_id"`
	Status   string `json:"status"`
}

// Status derives the fan's booking status from the reservation and its
// payment: the reservation says how it ended, the payment refines a
// cancellation into refunded or failed and a pending hold into authorised.
// A dispute refines it last: a lost one is CHARGED_BACK whatever else
// happened (the money is gone), an open one on a paid booking DISPUTED.
func Status(v store.BookingView) vocab.BookingStatus {
	if v.Dispute != nil && v.Dispute.Status == vocab.DisputeLost {
		return vocab.BookingChargedBack
	}
	switch v.Hold.Status {
	case vocab.ReservationPaid:
		if v.Dispute != nil && !v.Dispute.Status.Closed() {
			return vocab.BookingDisputed
		}
		return vocab.BookingPaid
	case vocab.ReservationExpired:
		return vocab.BookingExpired
	case vocab.ReservationCancelled:
		switch {
		case v.PaymentStatus == vocab.PaymentRefunded:
			return vocab.BookingRefunded
		case v.Flagged != "" || v.PaymentStatus == vocab.PaymentFailed:
			return vocab.BookingFailed
		}
		return vocab.BookingCancelled
	}
	if v.PaymentStatus == vocab.PaymentAuthorised {
		return vocab.BookingAuthorised
	}
	return vocab.BookingPendingPayment
}

func view(v store.BookingView) View {
	r := View{BookingID: v.Hold.ID.String(), HoldID: v.Hold.ID.String(), EventID: v.Hold.EventID,
		Status: Status(v), Total: v.Hold.Total, SeatIDs: v.Hold.SeatIDs(), PromoCode: v.Hold.PromoCode, Items: []ItemView{}, Tickets: []TicketView{}}
	r.Event = EventOf(v.Event)
	for _, it := range v.Hold.Items {
		r.Items = append(r.Items, ItemView{SeatID: it.SeatID, SectionID: it.SectionID, Quantity: it.Quantity,
			Price: it.Price, Discount: it.Discount, Label: venues.Label(it.Place)})
	}
	for _, t := range v.Tickets {
		r.Tickets = append(r.Tickets, TicketView{ID: t.ID, SeatID: t.SeatID, Status: t.Status, Label: venues.Label(t.Place)})
	}
	r.Stays = holds.NewView(v.Hold).Stays
	r.Vouchers = []VoucherView{}
	for _, vc := range v.Vouchers {
		r.Vouchers = append(r.Vouchers, VoucherView{ID: vc.ID, PropertyID: vc.PropertyID, RoomType: vc.RoomType,
			Checkin: vc.Checkin.Format(time.DateOnly), Checkout: vc.Checkout.Format(time.DateOnly), Confirmation: vc.Confirmation, Status: vc.Status})
	}
	if v.IntentID != "" {
		r.Payment = &PaymentView{IntentID: v.IntentID, Status: string(v.PaymentStatus)}
	}
	if d := v.Dispute; d != nil {
		r.Dispute = &DisputeView{ID: d.ID, Status: d.Status, Reason: d.Reason, Amount: d.Amount}
	}
	if r.Status == vocab.BookingPendingPayment || r.Status == vocab.BookingAuthorised {
		at := v.Hold.ExpiresAt.UTC()
		r.ExpiresAt = &at
	}
	return r
}

// Get reads who's booking.
func (s *Service) Get(ctx context.Context, who session.Identity, id uuid.UUID) (View, error) {
	// The terms come in the same round trip, whether or not the booking
	// turns out paid: one statement more in the pipeline costs less than a
	// second round trip for the paid ones, which a fan's page reads most.
	v, info, err := s.Store.Bookings.BookingWithTerms(ctx, id, who.UserID)
	if err != nil {
		return View{}, err
	}
	out := view(v)
	if out.Status == vocab.BookingPaid {
		h, now := activities.HoldInfoOf(info), time.Now()
		out.Cancellation = &CancellationView{Allowed: h.FanCanCancel(now), Deadline: h.CancelBy.UTC(), Refund: h.FanRefund(now)}
	}
	return out, nil
}

// Watch reports changes to booking id until stop is called; recheck is how
// long a waiter may trust the silence before it reads again anyway (short
// while no notification can arrive).
func (s *Service) Watch(id uuid.UUID) (changed <-chan struct{}, recheck time.Duration, stop func()) {
	if s.Changes == nil {
		return nil, time.Second, func() {}
	}
	changed, stop = s.Changes.Watch(id)
	if !s.Changes.Listening() {
		return changed, time.Second, stop
	}
	return changed, 5 * time.Second, stop
}

// Mine lists who's bookings, newest first: a page of at most limit after
// the cursor, each as Get shows it (the store reads both the same way, so
// the fan's list and a booking's own page never disagree), in a constant
// number of queries whatever the page's size; next is the following page's
// cursor, nil on the last.
func (s *Service) Mine(ctx context.Context, who session.Identity, after *store.PageCursor, limit int) ([]View, *store.PageCursor, error) {
	vs, next, err := s.Store.Bookings.BookingViewsOfUser(ctx, who.UserID, after, limit)
	if err != nil {
		return nil, nil, err
	}
	out := make([]View, len(vs))
	for i, v := range vs {
		out[i] = view(v)
	}
	return out, next, nil
}

// updateNamespace scopes workflow Update IDs derived from idempotency keys.
var updateNamespace = uuid.MustParse("0f7c3c1e-8d2b-4a51-9e1a-6b5d2f7c9a10")

// updateID turns an Idempotency-Key into the workflow Update's ID, so a
// retried request gets the first answer; without a key every call is new.
func updateID(kind, userID, key string) string {
	if key == "" {
		return kind + "-" + uuid.NewString()
	}
	return kind + "-" + uuid.NewSHA1(updateNamespace, []byte(userID+"\x00"+key)).String()
}

// updateTimeout bounds a checkout or cancel waiting on its workflow Update.
const updateTimeout = time.Minute

func (s *Service) updateContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, updateTimeout)
}

// Erase erases who's personal data (store.EraseUser): what a fan asks
// for with DELETE /v1/me.
func (s *Service) Erase(ctx context.Context, who session.Identity) (store.Erasure, error) {
	return s.Store.Bookings.EraseUser(ctx, who.UserID)
}

// Checkout starts paying for who's pending hold: the booking workflow runs
// fraud and authorisation inside the checkout Update and answers with the
// provider's client secret. The same Idempotency-Key replays the first
// answer; the same key with another request is store.ErrKeyReused.
func (s *Service) Checkout(ctx context.Context, who session.Identity, holdID uuid.UUID, req CheckoutRequest,
	idemKey string) (workflows.CheckoutResult, error) {
	if idemKey != "" {
		sum := sha256.Sum256([]byte(holdID.String() + "\x00" + req.PaymentMethod + "\x00" + req.ReturnURL))
		if err := s.Store.Holds.RememberKey(ctx, who.UserID, "checkout", idemKey, sum[:]); err != nil {
			return workflows.CheckoutResult{}, err
		}
	}
	hold, err := s.Store.Holds.GetHold(ctx, holdID, who.UserID)
	if err != nil {
		return workflows.CheckoutResult{}, err
	}
	uid := updateID("checkout", who.UserID, idemKey)
	if hold.Status == vocab.ReservationPending {
		// A hold taken in the instant before its event was cancelled: no
		// checkout starts (and the saga's confirm would refuse it anyway).
		if cancelled, err := s.Store.Jobs.EventCancelled(ctx, hold.EventID); err != nil {
			return workflows.CheckoutResult{}, err
		} else if cancelled {
			return workflows.CheckoutResult{}, store.ErrNotOnSale
		}
	}
	if hold.Status == vocab.ReservationPending {
		if err := s.Store.Bookings.SaveAnswers(ctx, holdID, req.Answers); err != nil {
			return workflows.CheckoutResult{}, err
		}
	}
	if hold.Status != vocab.ReservationPending {
		if idemKey != "" {
			// A retry whose first answer was lost (a timeout, a 503) while
			// the checkout went on: the booking's workflow keeps the first
			// answer under the same Update ID.
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			res, err := workflows.CheckoutAgain(actx, s.Temporal, hold.ID.String(), uid)
			cancel()
			if err == nil {
				return res, nil
			}
			if err := firstAnswerUnknown(err); err != nil {
				return workflows.CheckoutResult{}, err
			}
		}
		if hold.Status == vocab.ReservationExpired {
			return workflows.CheckoutResult{}, store.ErrHoldExpired
		}
		return workflows.CheckoutResult{}, store.ErrNotPending
	}
	if err := s.Holds.SalesOpen(hold.EventID); err != nil {
		return workflows.CheckoutResult{}, err
	}
	if err := s.Saga.Check(); err != nil {
		return workflows.CheckoutResult{}, err
	}
	uctx, cancel := s.updateContext(ctx)
	defer cancel()
	end := s.Saga.Begin()
	res, err := workflows.Checkout(uctx, s.Temporal, s.input(hold, who), uid,
		workflows.CheckoutRequest{PaymentMethod: req.PaymentMethod, ReturnURL: req.ReturnURL, IPRef: fraud.IPRef(s.IPSecret, req.IP), DeviceID: req.DeviceID})
	err = sagaError(err)
	end(errors.Is(err, ErrUnavailable) && ctx.Err() == nil) // a fan who left is not the saga failing
	if err != nil {
		return workflows.CheckoutResult{}, err
	}
	return res, nil
}

// firstAnswerUnknown tells apart why a retried checkout got no result from
// its first try. The first try's own failure (a declined card, an expired
// hold) is the answer, as the first time. Temporal saying there is no such
// Update (or no workflow) means this key never checked the hold out: nil,
// and the hold's state answers. Anything else (Temporal restarting, slow,
// unreachable) says nothing about the first try, and a 409 then would tell
// a fan whose seat is being paid for that it is not theirs: ErrUnavailable,
// so the fan asks again.
func firstAnswerUnknown(err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return sagaError(err) // the saga's own failure, or ErrUnavailable
}

// input is the booking workflow's input for a committed hold: the one
// mapping from a hold to its saga. The fan's e-mail reaches Temporal only
// as the workflow's (encrypted) static details and as a keyed hash, the
// EncoreEmailHash search attribute support finds bookings by; the key is
// the one that already keeps the fan's address out of the saga (IPSecret).
func (s *Service) input(h store.Hold, who session.Identity) workflows.BookingInput {
	seats := len(h.Items)
	return workflows.BookingInput{ReservationID: h.ID.String(), EventID: h.EventID, UserID: h.UserID, ExpiresAt: h.ExpiresAt,
		LateEventGrace: s.LateEventGrace, Total: h.Total, Seats: seats,
		Email: who.Email, EmailHash: workflows.EmailHash(s.IPSecret, who.Email)}
}

// Cancel cancels who's booking within the event's policy: a pending hold is
// released (by the database alone when it was never checked out, so no
// workflow exists), a paid booking refunded.
func (s *Service) Cancel(ctx context.Context, who session.Identity, id uuid.UUID, idemKey string) (View, error) {
	b, err := s.Store.Bookings.Booking(ctx, id, who.UserID)
	if err != nil {
		return View{}, err
	}
	if settledOutside(b) {
		return View{}, ErrNotCancellable // disputed, charged back or refunded by the provider: no refund of ours
	}
	// A booking one of whose tickets was handed to someone else is not the
	// buyer's to refund: the refund would revoke the recipient's ticket.
	if handed, err := s.Store.Tickets.Transferred(ctx, id); err != nil {
		return View{}, err
	} else if handed {
		return View{}, ErrNotCancellable
	}
	if idemKey != "" {
		sum := sha256.Sum256([]byte(id.String()))
		if err := s.Store.Holds.RememberKey(ctx, who.UserID, "cancel", idemKey, sum[:]); err != nil {
			return View{}, err
		}
	}
	uctx, cancel := s.updateContext(ctx)
	defer cancel()
	_, err = workflows.Cancel(uctx, s.Temporal, id.String(), updateID("cancel", who.UserID, idemKey))
	if errors.Is(err, workflows.ErrNoBooking) && b.Hold.Status == vocab.ReservationPending {
		err = s.Release(ctx, who, id) // never checked out: no workflow to ask
	}
	if err != nil {
		return View{}, sagaError(err)
	}
	return s.Get(ctx, who, id)
}

// Release gives who's pending hold back now (a no-op for one that already
// ended unpaid). A hold that was checked out has a booking workflow: it is
// told, so the saga ends now rather than at its expiry timer. One that was
// not has none, and none is started.
func (s *Service) Release(ctx context.Context, who session.Identity, id uuid.UUID) error {
	released, err := s.Holds.Release(ctx, who, id)
	if err != nil || !released || s.Temporal == nil {
		return err
	}
	if serr := workflows.Release(ctx, s.Temporal, id.String()); serr != nil && !errors.Is(serr, workflows.ErrNoBooking) {
		s.Log.Warn("tell booking workflow of release", "hold", id, "err", serr)
	}
	return nil
}

// sagaError turns the saga's typed application errors into domain errors.
func sagaError(err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		switch ae.Type() {
		case workflows.ErrTypeDeclined:
			d := &DeclinedError{Message: ae.Message()}
			var code string
			var left int
			if ae.HasDetails() && ae.Details(&code, &left) == nil {
				d.Code, d.AttemptsLeft = code, &left
			}
			return d
		case workflows.ErrTypeRefused:
			return ErrRefused
		case workflows.ErrTypeHoldExpired:
			return store.ErrHoldExpired
		case workflows.ErrTypeNotPending:
			return store.ErrNotPending
		case workflows.ErrTypeBusy:
			return ErrBusy
		case workflows.ErrTypeNotAllowed:
			return ErrNotCancellable
		case workflows.ErrTypeUnavailable:
			return ErrUnavailable
		}
		return err
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, workflows.ErrNoBooking):
		return ErrNotCancellable
	case errors.Is(err, store.ErrHoldExpired), errors.Is(err, store.ErrNotPending):
		return err
	}
	// Anything else never reached the saga's rules: Temporal unreachable,
	// overloaded or timed out. An Update-With-Start either started the
	// workflow with the checkout or not at all, and a retry with the same
	// key gets the first answer.
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
