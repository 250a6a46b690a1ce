package api

import (
	"errors"
	"net/http"
	"net/mail"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
)

// transferHandlers serve ticket transfers between fans.
type transferHandlers struct {
	transfers *tickets.Transfers
	problems  problems
}

// transferView is a transfer as the API shows it.
func transferView(x store.Transfer, me string) gin.H {
	v := gin.H{"transfer_id": x.ID, "ticket_id": x.TicketID, "event_id": x.EventID, "to_email": x.ToEmail,
		"status": x.Status, "created_at": x.CreatedAt.UTC(), "expires_at": x.ExpiresAt.UTC(), "direction": "received"}
	if x.FromUser == me {
		v["direction"] = "sent"
	}
	if x.EndedAt != nil {
		v["ended_at"] = x.EndedAt.UTC()
	}
	if x.NewTicketID != "" && x.ToUser == me {
		v["new_ticket_id"] = x.NewTicketID
	}
	return v
}

// offerTransfer is POST /v1/tickets/{ticket_id}/transfer {"to_email"}:
// 201 {"transfer_id","status":"PENDING","expires_at"}.
func (h *transferHandlers) offerTransfer(c *gin.Context) {
	var req struct {
		ToEmail string `json:"to_email"`
	}
	if err := decodeJSON(c, &req); err != nil {
		writeProblem(c, Invalid(*err))
		return
	}
	id := identity(c)
	if a, err := mail.ParseAddress(req.ToEmail); err != nil || a.Name != "" || a.Address != req.ToEmail || len(req.ToEmail) > 254 {
		writeProblem(c, Invalid(FieldError{"to_email", "one plain address, such as friend@example.com"}))
		return
	}
	x, err := h.transfers.Offer(c.Request.Context(), id.UserID, id.Email, c.Param("ticket_id"), req.ToEmail)
	if errors.Is(err, tickets.ErrBadEmail) {
		writeProblem(c, Invalid(FieldError{"to_email", "not your own address"}))
		return
	}
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, transferView(x, id.UserID))
}

// transferID reads the path's transfer ID; a malformed one is not found.
func (h *transferHandlers) transferID(c *gin.Context) (uuid.UUID, bool) {
	id, err := uuid.Parse(c.Param("transfer_id"))
	if err != nil {
		writeProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such transfer"))
		return uuid.Nil, false
	}
	return id, true
}

// acceptTransfer is POST /v1/transfers/{transfer_id}/accept by the
// recipient, signed in with the address it was sent to: 200 with the
// transfer and the new ticket.
func (h *transferHandlers) acceptTransfer(c *gin.Context) {
	tid, ok := h.transferID(c)
	if !ok {
		return
	}
	id := identity(c)
	x, t, err := h.transfers.Accept(c.Request.Context(), id.UserID, id.Email, tid)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"transfer": transferView(x, id.UserID), "ticket": gin.H{
		"ticket_id": t.ID, "event_id": t.EventID, "section_id": t.SectionID, "seat_id": t.SeatID, "status": t.Status,
		"issued_at": t.IssuedAt.UTC().Format(time.RFC3339)}})
}

// cancelTransfer is DELETE /v1/transfers/{transfer_id} by the sender
// before acceptance.
func (h *transferHandlers) cancelTransfer(c *gin.Context) {
	tid, ok := h.transferID(c)
	if !ok {
		return
	}
	id := identity(c)
	x, err := h.transfers.Cancel(c.Request.Context(), id.UserID, tid)
	h.problems.answer(c, transferView(x, id.UserID), err)
}

// myTransfers is GET /v1/me/transfers: those the caller sent and those
// sent to the caller's email, newest first.
func (h *transferHandlers) myTransfers(c *gin.Context) {
	id := identity(c)
	xs, err := h.transfers.Of(c.Request.Context(), id.UserID, id.Email)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	out := make([]gin.H, len(xs))
	for i, x := range xs {
		out[i] = transferView(x, id.UserID)
	}
	c.JSON(http.StatusOK, gin.H{"transfers": out})
}
