package api

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// emailHandlers serve support the mail queue: the messages to fans by
// status (DEAD: the dead-letter list, every attempt failed) and a resend of
// a dead one.
type emailHandlers struct {
	store    *store.Store
	problems problems
}

// listEmails lists queued messages newest first: ?status=PENDING, SENT or
// DEAD (empty: all), ?limit (1 to 200, 50), ?cursor (next_cursor of the
// previous page). Neither bodies nor attachments are shown, only who, what
// and why it failed.
func (h *emailHandlers) listEmails(c *gin.Context) {
	status := vocab.MailStatus(c.Query("status"))
	if status != "" && !slices.Contains(vocab.MailStatuses, status) {
		writeProblem(c, Invalid(FieldError{"status", "PENDING, SENT or DEAD"}))
		return
	}
	limit, bad := countParam("limit", c.Query("limit"), 50, 200, "a whole number from 1 to 200")
	if bad != nil {
		writeProblem(c, Invalid(*bad))
		return
	}
	var before int64
	if cur := c.Query("cursor"); cur != "" {
		n, err := strconv.ParseInt(cur, 10, 64)
		if err != nil || n <= 0 {
			writeProblem(c, Invalid(FieldError{"cursor", "the next_cursor of a previous page"}))
			return
		}
		before = n
	}
	rows, err := h.store.Mail().List(c.Request.Context(), status, before, limit)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	out := gin.H{"emails": rows}
	if len(rows) == limit {
		out["next_cursor"] = strconv.FormatInt(rows[len(rows)-1].ID, 10)
	}
	c.JSON(http.StatusOK, out)
}

// resendEmail puts a dead message back in the queue, due now: 202 with
// the message, which the workers' mail loop sends within a second or so.
// A message still pending or already sent is 409; a missing one 404.
func (h *emailHandlers) resendEmail(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("email_id"), 10, 64)
	if err != nil || id <= 0 {
		writeProblem(c, Invalid(FieldError{"email_id", "the id of a queued email"}))
		return
	}
	m, err := h.store.Mail().Resend(c.Request.Context(), id)
	switch {
	case err == nil:
		c.JSON(http.StatusAccepted, m)
	case errors.Is(err, store.ErrNotDead):
		writeProblem(c, NewProblem(http.StatusConflict, ProbConflict, "only a DEAD email is resent; this one is pending or sent"))
	default:
		h.problems.fail(c, err)
	}
}

// bookingStore is the buy plane's store behind the booking service (nil
// without one: the routes are then not served).
func bookingStore(b *booking.Service) *store.Store {
	if b == nil {
		return nil
	}
	return b.Store
}
