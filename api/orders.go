package api

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/venues"
)

// orders is GET /v1/admin/events/{id}/orders (?q=, ?status=, ?format=csv):
// the event's bookings with their places, totals and paid times, found by
// e-mail, booking ID or seat label; the CSV is neutralised by csvsafe.
// Tenancy is the route's ownEvent: another organisation's organiser is 403.
func (h *adminHandlers) orders(c *gin.Context) {
	q, status := c.Query("q"), strings.ToUpper(c.Query("status"))
	var bad []FieldError
	if utf8.RuneCountInString(q) > 200 {
		bad = append(bad, FieldError{"q", "at most 200 characters"})
	}
	if status != "" && !slices.Contains(organiser.OrderStatuses, status) {
		bad = append(bad, FieldError{"status", "one of " + strings.Join(organiser.OrderStatuses, ", ")})
	}
	if f := c.Query("format"); f != "" && f != "json" && f != "csv" {
		bad = append(bad, FieldError{"format", "json or csv"})
	}
	if len(bad) > 0 {
		writeProblem(c, Invalid(bad...))
		return
	}
	o, err := h.events.Orders(c.Request.Context(), venues.Admin("", identity(c).UserID), pathEvent(c).EventID, q, status)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	answerFormat(c, o, "orders-"+o.EventID+".csv", o.WriteCSV)
}
