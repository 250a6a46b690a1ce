package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/notify"
)

// qrPixels is the side of the PNG: large enough for a phone screen at
// full brightness, small enough to fetch every 15 seconds.
const qrPixels = 320

// ticketQR serves a ticket's rotating code to its owner only:
// {"payload","expires_at"}, or with ?format=png the QR image. Another fan's
// ticket is 404, as a missing one is; so is a ticket of a refunded or
// cancelled booking.
func (h *bookingHandlers) ticketQR(c *gin.Context) {
	format := c.Query("format")
	if format != "" && format != "json" && format != "png" {
		writeProblem(c, Invalid(FieldError{Field: "format", Message: "json (the default) or png"}))
		return
	}
	payload, expires, err := h.tickets.Current(c.Request.Context(), identity(c).UserID, identity(c).DeviceID, c.Param("ticket_id"), time.Now())
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Header("X-Expires-At", expires.Format(time.RFC3339))
	if format == "png" {
		png, err := notify.QRPNG(payload, qrPixels)
		if err != nil {
			writeProblem(c, NewProblem(http.StatusInternalServerError, ProbInternal, "QR encoding failed"))
			return
		}
		c.Data(http.StatusOK, "image/png", png)
		return
	}
	c.JSON(http.StatusOK, gin.H{"payload": payload, "expires_at": expires.UTC().Format(time.RFC3339)})
}
