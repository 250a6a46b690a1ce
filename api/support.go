package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// supportHandlers serve support staff and event cancellation: booking
// search and detail, refunds outside the fan's policy, confirmations sent
// again, an event cancelled and its refund job followed.
type supportHandlers struct {
	bookings *booking.Service
	problems problems
}

// searchBookings finds bookings for support staff, newest first; cursor is
// the last booking ID of the previous page.
func (h *supportHandlers) searchBookings(c *gin.Context) {
	f := store.BookingFilter{UserID: c.Query("user"), Email: c.Query("email"), EventID: c.Query("event"), Status: c.Query("status")}
	if f.Status != "" && !validReservationStatus(f.Status) {
		writeProblem(c, Invalid(FieldError{"status", "PENDING_PAYMENT, PAID, EXPIRED or CANCELLED"}))
		return
	}
	for _, v := range []string{f.UserID, f.Email, f.EventID} {
		if len(v) > 200 || !storableText(v) {
			writeProblem(c, Invalid(FieldError{"query", "at most 200 characters"}))
			return
		}
	}
	if cur := c.Query("cursor"); cur != "" {
		id, err := uuid.Parse(cur)
		if err != nil {
			writeProblem(c, Invalid(FieldError{"cursor", "the next_cursor of a previous page"}))
			return
		}
		f.Before = id
	}
	rows, err := h.bookings.Search(c.Request.Context(), f)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	out := gin.H{"bookings": rows}
	if rows == nil {
		out["bookings"] = []store.BookingSummary{}
	}
	if len(rows) > 0 {
		out["next_cursor"] = rows[len(rows)-1].ID.String()
	}
	c.JSON(http.StatusOK, out)
}

func validReservationStatus(s string) bool {
	switch vocab.ReservationStatus(s) {
	case vocab.ReservationPending, vocab.ReservationPaid, vocab.ReservationExpired, vocab.ReservationCancelled:
		return true
	}
	return false
}

func (h *supportHandlers) supportBooking(c *gin.Context) {
	id, ok := pathUUID(c, "booking_id", "booking")
	if !ok {
		return
	}
	d, err := h.bookings.Detail(c.Request.Context(), id)
	h.problems.answer(c, d, err)
}

// supportRefund refunds a booking outside the fan's policy.
func (h *supportHandlers) supportRefund(c *gin.Context) {
	id, ok := pathUUID(c, "booking_id", "booking")
	if !ok {
		return
	}
	reason, ok := decodeReason(c)
	if !ok {
		return
	}
	v, err := h.bookings.StaffRefund(c.Request.Context(), identity(c), id, reason)
	h.problems.answer(c, v, err)
}

// supportResend sends the confirmation email again.
func (h *supportHandlers) supportResend(c *gin.Context) {
	id, ok := pathUUID(c, "booking_id", "booking")
	if !ok {
		return
	}
	if err := h.bookings.Resend(c.Request.Context(), identity(c), id); err != nil {
		h.problems.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"status": "sent"})
}
