package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/session"
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
func (h *supportHandlers) supportRefund(c *gin.Context) { h.refundWith(c, h.bookings.StaffRefund) }

// supportRefundAndClose gives a booking's money back and ends its saga,
// wherever it is stuck (a capture failing for minutes included).
func (h *supportHandlers) supportRefundAndClose(c *gin.Context) {
	h.refundWith(c, h.bookings.RefundAndClose)
}

// refundWith reads a support refund's booking, reason and request ID, and
// answers what refund made of them.
func (h *supportHandlers) refundWith(c *gin.Context,
	refund func(context.Context, session.Identity, uuid.UUID, string, string) (booking.View, error)) {
	id, reason, req, ok := staffAction(c, true)
	if !ok {
		return
	}
	v, err := refund(c.Request.Context(), identity(c), id, reason, req)
	h.problems.answer(c, v, err)
}

// supportRetryNow asks a booking's failing provider step again now.
func (h *supportHandlers) supportRetryNow(c *gin.Context) {
	id, _, req, ok := staffAction(c, false)
	if !ok {
		return
	}
	step, err := h.bookings.RetryNow(c.Request.Context(), identity(c), id, req)
	h.problems.answer(c, gin.H{"step": step, "status": "retried"}, err)
}

// staffAction reads a staff action that steers a booking's saga: the
// booking from the path, the reason from the body when the action records
// one, then the request ID, in that order, so a request wrong in several
// ways is refused for the first. A bad part is answered here and ok is
// false.
func staffAction(c *gin.Context, withReason bool) (id uuid.UUID, reason, req string, ok bool) {
	if id, ok = pathUUID(c, "booking_id", "booking"); !ok {
		return id, "", "", false
	}
	if withReason {
		if reason, ok = decodeReason(c); !ok {
			return id, "", "", false
		}
	}
	req, ok = requestID(c)
	return id, reason, req, ok
}

// requestID names one support request for the saga's Update ID: its
// Idempotency-Key (a retry of the request joins the first), else a fresh
// ID, so each request is asked anew and never answered from an earlier
// request's Update.
func requestID(c *gin.Context) (string, bool) {
	key, fe := idempotencyKey(c)
	if fe != nil {
		writeProblem(c, Invalid(*fe))
		return "", false
	}
	if key == "" {
		key = uuid.NewString()
	}
	return key, true
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
