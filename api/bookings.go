package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"regexp"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/booking/saga"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// Problem names of the booking endpoints (extending DESIGN.md's list).
const (
	ProbPaymentDeclined     = "payment-declined"        // 402: the card was declined; try another
	ProbPaymentRefused      = "payment-refused"         // 403: the fraud check refused the payment
	ProbBookingNotCancelled = "booking-not-cancellable" // 409: outside the event's policy
	ProbWebhookConflict     = "webhook-conflict"        // 409: an event ID reused with other content
)

func init() {
	titles[ProbPaymentDeclined] = "The payment was declined"
	titles[ProbPaymentRefused] = "The payment was refused"
	titles[ProbBookingNotCancelled] = "The booking cannot be cancelled"
	titles[ProbWebhookConflict] = "The event ID was already used for other content"
}

// CheckoutRequest is the body of POST /v1/holds/{hold_id}/checkout.
type CheckoutRequest struct {
	PaymentMethod string `json:"payment_method,omitempty"`
	ReturnURL     string `json:"return_url,omitempty"`
}

var paymentMethodPattern = regexp.MustCompile(`^pm_[A-Za-z0-9_]{1,100}$`)

// BookingResponse is a booking as the contract shows it.
type BookingResponse struct {
	BookingID string              `json:"booking_id"`
	HoldID    string              `json:"hold_id"`
	EventID   string              `json:"event_id"`
	Status    vocab.BookingStatus `json:"status"`
	Total     money.Money         `json:"total"`
	SeatIDs   []string            `json:"seat_ids"`
	Tickets   []TicketJSON        `json:"tickets"`
	Payment   *BookingPayment     `json:"payment,omitempty"`
}

// TicketJSON names one ticket.
type TicketJSON struct {
	ID     string `json:"id"`
	SeatID string `json:"seat_id,omitempty"`
	Status string `json:"status"`
}

// BookingPayment is the payment part of a booking.
type BookingPayment struct {
	IntentID string `json:"intent_id"`
	Status   string `json:"status"`
}

// BookingStatus derives the contract's status from the reservation and its
// payment.
func BookingStatus(v store.BookingView) vocab.BookingStatus {
	switch v.Hold.Status {
	case vocab.ReservationPaid:
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

func bookingResponse(v store.BookingView) BookingResponse {
	r := BookingResponse{BookingID: v.Hold.ID.String(), HoldID: v.Hold.ID.String(), EventID: v.Hold.EventID,
		Status: BookingStatus(v), Total: v.Hold.Total, SeatIDs: v.Hold.SeatIDs(), Tickets: []TicketJSON{}}
	for _, t := range v.Tickets {
		r.Tickets = append(r.Tickets, TicketJSON{ID: t.ID, SeatID: t.SeatID, Status: t.Status})
	}
	if v.IntentID != "" {
		r.Payment = &BookingPayment{IntentID: v.IntentID, Status: string(v.PaymentStatus)}
	}
	return r
}

// updateID turns an Idempotency-Key into the workflow Update's ID, so a
// retried request gets the first answer; without a key every call is new.
func updateID(kind, userID, key string) string {
	if key == "" {
		return kind + "-" + uuid.NewString()
	}
	return kind + "-" + uuid.NewSHA1(idempotencyNamespace, []byte(userID+"\x00"+key)).String()
}

var idempotencyNamespace = uuid.MustParse("0f7c3c1e-8d2b-4a51-9e1a-6b5d2f7c9a10")

func (s *Server) checkout(c *gin.Context) {
	who := identity(c)
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		s.problem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such hold"))
		return
	}
	var req CheckoutRequest
	if fe := decodeJSON(c, &req); fe != nil && fe.Message != "a JSON object is required" {
		s.problem(c, Invalid(*fe))
		return
	}
	if req.PaymentMethod != "" && !paymentMethodPattern.MatchString(req.PaymentMethod) {
		s.problem(c, Invalid(FieldError{"payment_method", "a payment method ID such as pm_card_visa"}))
		return
	}
	if len(req.ReturnURL) > 2000 {
		s.problem(c, Invalid(FieldError{"return_url", "at most 2000 characters"}))
		return
	}
	key, fe := idempotencyKey(c)
	if fe != nil {
		s.problem(c, Invalid(*fe))
		return
	}
	if key != "" {
		sum := sha256.Sum256([]byte(id.String() + "\x00" + req.PaymentMethod + "\x00" + req.ReturnURL))
		if err := s.Holds.Store.RememberKey(c.Request.Context(), who.UserID, "checkout", key, sum[:]); err != nil {
			s.problem(c, s.problemFor(err))
			return
		}
	}
	hold, err := s.Holds.Store.GetHold(c.Request.Context(), id, who.UserID)
	if err != nil {
		s.problem(c, s.problemFor(err))
		return
	}
	switch hold.Status {
	case vocab.ReservationExpired:
		s.problem(c, s.problemFor(store.ErrHoldExpired))
		return
	case vocab.ReservationPending:
	default:
		s.problem(c, s.problemFor(store.ErrNotPending))
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 60*time.Second)
	defer cancel()
	res, err := saga.Checkout(ctx, s.Temporal, saga.BookingInput{
		ReservationID: id.String(), EventID: hold.EventID, UserID: hold.UserID, ExpiresAt: hold.ExpiresAt,
	}, updateID("checkout", who.UserID, key), saga.CheckoutRequest{
		PaymentMethod: req.PaymentMethod, ReturnURL: req.ReturnURL, IP: ClientIP(c.Request), DeviceID: who.DeviceID,
	})
	if err != nil {
		s.problem(c, s.workflowProblem(err))
		return
	}
	c.JSON(http.StatusOK, res)
}

// workflowProblem maps the saga's typed errors to problems.
func (s *Server) workflowProblem(err error) *Problem {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		switch ae.Type() {
		case saga.ErrTypeDeclined:
			p := NewProblem(http.StatusPaymentRequired, ProbPaymentDeclined, ae.Message())
			var code string
			var left int
			if ae.HasDetails() && ae.Details(&code, &left) == nil {
				p.DeclineCode, p.AttemptsLeft = code, &left
			}
			return p
		case saga.ErrTypeRefused:
			return NewProblem(http.StatusForbidden, ProbPaymentRefused, ae.Message())
		case saga.ErrTypeHoldExpired:
			return NewProblem(http.StatusGone, ProbHoldExpired, ae.Message())
		case saga.ErrTypeNotPending:
			return NewProblem(http.StatusConflict, ProbHoldNotPending, ae.Message())
		case saga.ErrTypeBusy:
			return NewProblem(http.StatusConflict, ProbRequestInProgress, ae.Message()).RetryAfter(2 * time.Second)
		case saga.ErrTypeNotAllowed:
			return NewProblem(http.StatusConflict, ProbBookingNotCancelled, ae.Message())
		case saga.ErrTypeUnavailable:
			return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, ae.Message()).RetryAfter(2 * time.Second)
		}
	}
	if errors.Is(err, saga.ErrNoBooking) {
		return NewProblem(http.StatusConflict, ProbBookingNotCancelled, "the booking can no longer change")
	}
	return s.problemFor(err)
}

func (s *Server) getBooking(c *gin.Context) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		s.problem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such booking"))
		return
	}
	v, err := s.Holds.Store.Booking(c.Request.Context(), id, identity(c).UserID)
	if err != nil {
		s.problem(c, s.problemFor(err))
		return
	}
	c.JSON(http.StatusOK, bookingResponse(v))
}

func (s *Server) cancelBooking(c *gin.Context) {
	who := identity(c)
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		s.problem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such booking"))
		return
	}
	key, fe := idempotencyKey(c)
	if fe != nil {
		s.problem(c, Invalid(*fe))
		return
	}
	if _, err := s.Holds.Store.Booking(c.Request.Context(), id, who.UserID); err != nil {
		s.problem(c, s.problemFor(err))
		return
	}
	if key != "" {
		sum := sha256.Sum256([]byte(id.String()))
		if err := s.Holds.Store.RememberKey(c.Request.Context(), who.UserID, "cancel", key, sum[:]); err != nil {
			s.problem(c, s.problemFor(err))
			return
		}
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 60*time.Second)
	defer cancel()
	if _, err := saga.Cancel(ctx, s.Temporal, id.String(), updateID("cancel", who.UserID, key)); err != nil {
		s.problem(c, s.workflowProblem(err))
		return
	}
	v, err := s.Holds.Store.Booking(c.Request.Context(), id, who.UserID)
	if err != nil {
		s.problem(c, s.problemFor(err))
		return
	}
	c.JSON(http.StatusOK, bookingResponse(v))
}
