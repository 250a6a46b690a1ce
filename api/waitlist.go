package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/store"
)

// waitlistRequest is POST /v1/events/{event_id}/waitlist: how many seats the
// fan wants, in one section or (without section_id) anywhere.
type waitlistRequest struct {
	SectionID string `json:"section_id"`
	Quantity  *int   `json:"quantity"`
}

// joinWaitlist puts the caller on a sold-out event's waitlist: 201 with
// their place, or 200 with the place they already had.
func (s *Server) joinWaitlist(c *gin.Context) {
	var req waitlistRequest
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	eventID := c.Param("event_id")
	if !idPattern.MatchString(eventID) {
		notFound(c, "event")
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
	w, created, err := s.Waitlist.Store.Waitlists.JoinWaitlist(c.Request.Context(), store.WaitlistJoin{EventID: eventID,
		UserID: who.UserID, DeviceID: who.DeviceID, Email: who.Email, SectionID: req.SectionID, Quantity: qty})
	if err != nil {
		s.fail(c, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.JSON(status, w)
}

// leaveWaitlist takes the caller off the event's waitlist: 204 either way.
func (s *Server) leaveWaitlist(c *gin.Context) {
	if _, err := s.Waitlist.Store.Waitlists.LeaveWaitlist(c.Request.Context(), c.Param("event_id"), identity(c).UserID); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// myWaitlist lists the caller's waitlist places, newest first, each with
// its status, position while waiting, and offer expiry once offered.
func (s *Server) myWaitlist(c *gin.Context) {
	entries, err := s.Waitlist.Store.Waitlists.MyWaitlist(c.Request.Context(), identity(c).UserID)
	if err != nil {
		s.fail(c, err)
		return
	}
	if entries == nil {
		entries = []store.WaitlistEntry{}
	}
	c.JSON(http.StatusOK, gin.H{"entries": entries})
}
