package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitlist"
)

// waitlistRequest is POST /v1/events/{event_id}/waitlist: how many seats the
// fan wants, in one section or (without section_id) anywhere.
type waitlistRequest struct {
	SectionID string `json:"section_id"`
	Quantity  *int   `json:"quantity"`
}

// waitlistHandlers serve joining and leaving a sold-out event's waitlist
// (a fan's places are meHandlers').
type waitlistHandlers struct {
	offers   *waitlist.Offers
	problems problems
}

// joinWaitlist puts the caller on a sold-out event's waitlist: 201 with
// their place, or 200 with the place they already had.
func (h *waitlistHandlers) joinWaitlist(c *gin.Context) {
	var req waitlistRequest
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	eventID, ok := pathID(c, "event_id", "event")
	if !ok {
		return
	}
	qty := 1
	if req.Quantity != nil {
		qty = *req.Quantity
	}
	var errs []FieldError
	if qty < 1 || qty > 10 {
		errs = append(errs, FieldError{"quantity", "1 to 10 seats"})
	}
	if req.SectionID != "" && !idPattern.MatchString(req.SectionID) {
		errs = append(errs, FieldError{"section_id", "not a section ID"})
	}
	if len(errs) > 0 {
		writeProblem(c, Invalid(errs...))
		return
	}
	who := identity(c)
	w, created, err := h.offers.Join(c.Request.Context(), store.WaitlistJoin{EventID: eventID,
		UserID: who.UserID, DeviceID: who.DeviceID, Email: who.Email, SectionID: req.SectionID, Quantity: qty})
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.JSON(status, w)
}

// leaveWaitlist takes the caller off the event's waitlist: 204 either way.
func (h *waitlistHandlers) leaveWaitlist(c *gin.Context) {
	if _, err := h.offers.Leave(c.Request.Context(), c.Param("event_id"), identity(c).UserID); err != nil {
		h.problems.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
