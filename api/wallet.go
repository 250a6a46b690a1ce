package api

import (
	"encoding/hex"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/tickets"
)

// ticketWallet hands the caller's device what it needs to show a ticket's
// rotating code offline: the device key of the ticket's current generation,
// never the ticket's secret. Opening it moves the ticket to this device
// (the session's device_id): the device that had it gets 409
// ticket-on-another-device online at once, and the gate refuses its codes
// from the manifest delta that carries the new generation.
func (h *bookingHandlers) ticketWallet(c *gin.Context) {
	id := identity(c)
	w, err := h.tickets.Open(c.Request.Context(), id.UserID, id.DeviceID, c.Param("ticket_id"))
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, gin.H{
		"ticket_id":         w.TicketID,
		"key":               hex.EncodeToString(w.Key),
		"period_seconds":    tickets.PeriodSeconds,
		"algorithm":         tickets.Algorithm,
		"generation":        w.Generation,
		"device_id":         w.DeviceID,
		"tolerance_periods": tickets.Tolerance,
		"code_format":       tickets.CodeFormat,
	})
}
