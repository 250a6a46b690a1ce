package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	qrcode "github.com/skip2/go-qrcode"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/vocab"
)

// qrPixels is the side of the PNG: large enough for a phone screen at
// full brightness, small enough to fetch every 15 seconds.
const qrPixels = 320

// TicketQR serves GET /v1/tickets/{ticket_id}/qr, the ticket's rotating
// code, to its owner only: {"payload","expires_at"}, or with ?format=png the
// QR image. Another fan's ticket is 404, as a missing one is; so is a ticket
// of a refunded or cancelled booking. Add it to Server.Extra.
func TicketQR(st *store.Store, keyring *tickets.Keyring) func(r *gin.Engine, auth gin.HandlerFunc) {
	h := &ticketQR{store: st, keyring: keyring, now: time.Now}
	return func(r *gin.Engine, auth gin.HandlerFunc) {
		r.GET("/v1/tickets/:ticket_id/qr", auth, h.serve)
	}
}

type ticketQR struct {
	store   *store.Store
	keyring *tickets.Keyring
	now     func() time.Time
}

func (h *ticketQR) problem(c *gin.Context, p *Problem) {
	p.Instance = c.Request.URL.Path
	p.Write(c.Writer)
	c.Abort()
}

func (h *ticketQR) serve(c *gin.Context) {
	format := c.Query("format")
	if format != "" && format != "json" && format != "png" {
		h.problem(c, Invalid(FieldError{Field: "format", Message: "json (the default) or png"}))
		return
	}
	id := c.Param("ticket_id")
	if !tickets.ValidID(id) {
		h.problem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such ticket"))
		return
	}
	t, err := h.store.GetTicket(c.Request.Context(), id, identity(c).UserID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.problem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such ticket"))
		return
	case err != nil:
		h.problem(c, NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "a dependency failed, retry").RetryAfter(2*time.Second))
		return
	case t.Status != vocab.TicketValid:
		h.problem(c, NewProblem(http.StatusNotFound, ProbNotFound, "the ticket was revoked (refunded or cancelled)"))
		return
	}
	secret, err := h.keyring.Open(t.SecretSealed, t.ID)
	if err != nil {
		// A configuration fault (wrong ENCORE_TICKET_SEALING_KEY), not the fan's.
		h.problem(c, NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "the ticket cannot be shown right now").RetryAfter(5*time.Second))
		return
	}
	payload, expires := tickets.Payload(t.ID, secret, h.now())
	c.Header("Cache-Control", "no-store")
	c.Header("X-Expires-At", expires.Format(time.RFC3339))
	if format == "png" {
		png, err := qrcode.Encode(payload, qrcode.Medium, qrPixels)
		if err != nil {
			h.problem(c, NewProblem(http.StatusInternalServerError, ProbInternal, "QR encoding failed"))
			return
		}
		c.Data(http.StatusOK, "image/png", png)
		return
	}
	c.JSON(http.StatusOK, gin.H{"payload": payload, "expires_at": expires.UTC().Format(time.RFC3339)})
}
