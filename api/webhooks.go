package api

import (
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/payments"
)

// webhookHandlers serve the payment provider: its signed events, handed to
// the booking use case (paymentReturn, where it sends the fan's browser,
// needs nothing).
type webhookHandlers struct {
	bookings *booking.Service
	problems problems
}

// stripeWebhook hands a provider event to the booking use case, which
// answers success only once the event is stored.
func (h *webhookHandlers) stripeWebhook(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, payments.MaxWebhookBytes))
	if err != nil {
		writeProblem(c, Invalid(FieldError{"body", "unreadable or larger than 256 KiB"}))
		return
	}
	receipt, err := h.bookings.ReceiveWebhook(c.Request.Context(), body, c.GetHeader("Stripe-Signature"))
	h.problems.answer(c, receipt, err)
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
