package api

import (
	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/tickets"
)

// bookingHandlers serve a fan's booking and its tickets: read, cancel, the
// rotating QR code.
type bookingHandlers struct {
	bookings *booking.Service
	tickets  *tickets.Wallet
	problems problems
}

func (h *bookingHandlers) getBooking(c *gin.Context) {
	id, ok := pathUUID(c, "id", "booking")
	if !ok {
		return
	}
	v, err := h.bookings.Get(c.Request.Context(), identity(c), id)
	h.problems.answer(c, v, err)
}

func (h *bookingHandlers) cancelBooking(c *gin.Context) {
	id, ok := pathUUID(c, "id", "booking")
	if !ok {
		return
	}
	key, fe := idempotencyKey(c)
	if fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	v, err := h.bookings.Cancel(c.Request.Context(), identity(c), id, key)
	h.problems.answer(c, v, err)
}
