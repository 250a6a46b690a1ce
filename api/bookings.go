package api

import (
	"io"
	"net/http"
	"regexp"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/payments"
)

// CheckoutRequest is the body of POST /v1/holds/{hold_id}/checkout.
type CheckoutRequest struct {
	PaymentMethod string `json:"payment_method,omitempty"`
	ReturnURL     string `json:"return_url,omitempty"`
}

var paymentMethodPattern = regexp.MustCompile(`^pm_[A-Za-z0-9_]{1,100}$`)

func (s *Server) checkout(c *gin.Context) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		notFound(c, "hold")
		return
	}
	var req CheckoutRequest
	if fe := decodeJSON(c, &req); fe != nil && fe.Message != "a JSON object is required" {
		writeProblem(c, Invalid(*fe))
		return
	}
	if req.PaymentMethod != "" && !paymentMethodPattern.MatchString(req.PaymentMethod) {
		writeProblem(c, Invalid(FieldError{"payment_method", "a payment method ID such as pm_card_visa"}))
		return
	}
	if len(req.ReturnURL) > 2000 {
		writeProblem(c, Invalid(FieldError{"return_url", "at most 2000 characters"}))
		return
	}
	key, fe := idempotencyKey(c)
	if fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	who := identity(c)
	res, err := s.Bookings.Checkout(c.Request.Context(), who, id, booking.CheckoutRequest{
		PaymentMethod: req.PaymentMethod, ReturnURL: req.ReturnURL, IP: clientIP(c.Request), DeviceID: who.DeviceID}, key)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

func (s *Server) getBooking(c *gin.Context) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		notFound(c, "booking")
		return
	}
	v, err := s.Bookings.Get(c.Request.Context(), identity(c), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

func (s *Server) cancelBooking(c *gin.Context) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		notFound(c, "booking")
		return
	}
	key, fe := idempotencyKey(c)
	if fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	v, err := s.Bookings.Cancel(c.Request.Context(), identity(c), id, key)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// stripeWebhook hands a provider event to the booking use case, which
// answers success only once the event is stored.
func (s *Server) stripeWebhook(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, payments.MaxWebhookBytes))
	if err != nil {
		writeProblem(c, Invalid(FieldError{"body", "unreadable or larger than 256 KiB"}))
		return
	}
	receipt, err := s.Bookings.ReceiveWebhook(c.Request.Context(), body, c.GetHeader("Stripe-Signature"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, receipt)
}

// paymentReturn is where the provider sends the fan's browser after a 3-D
// Secure challenge or the hosted page. It proves nothing (anyone can open
// it): the sale happens only on the provider's signed event, so the page
// only tells the fan to watch the booking.
func paymentReturn(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{
		"payment_intent":  c.Query("payment_intent"),
		"redirect_status": c.Query("redirect_status"),
		"message":         "Payment submitted. Your booking updates as soon as the payment provider confirms it.",
	})
}
