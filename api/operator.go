package api

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/controls"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

// Operator is what the operator routes act on: the event's dials in the
// database, this process's watcher of them (so a change is in force here
// at once, and within its poll interval in every other process), and the
// waiting room for revocations.
type Operator struct {
	Store *store.Store
	Dials *controls.Watcher
}

// operatorRoles may turn an event's dials and revoke admissions.
var operatorRoles = []session.Role{session.Operator, session.Admin}

// operatorRoutes is the operator's part of the route table.
func (s *Server) operatorRoutes() []route {
	on := s.Operator != nil
	return []route{
		{method: http.MethodGet, path: "/v1/admin/events/:event_id/controls", roles: operatorRoles, handler: s.getControls, enabled: on},
		{method: http.MethodPatch, path: "/v1/admin/events/:event_id/controls", roles: operatorRoles, handler: s.patchControls, enabled: on},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/admissions/revoke", roles: operatorRoles, handler: s.revokeAdmission, enabled: on && s.Room != nil},
	}
}

// controlsBody is the dials as the routes answer them, with the capacity
// this process's waiting room has in force (the adaptive mode moves it
// within the operator's bounds).
type controlsBody struct {
	controls.Dials
	CapacityInForce *int `json:"admission_capacity_in_force,omitempty"`
}

func (s *Server) controlsBody(c *gin.Context, d controls.Dials) controlsBody {
	b := controlsBody{Dials: d}
	if s.Room != nil {
		if n, err := s.Room.CapacityInForce(c.Request.Context(), d.EventID); err == nil {
			b.CapacityInForce = &n
		}
	}
	return b
}

func (s *Server) getControls(c *gin.Context) {
	d, err := s.Operator.Store.Catalogue.EventControls(c.Request.Context(), c.Param("event_id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.controlsBody(c, d))
}

func (s *Server) patchControls(c *gin.Context) {
	var p controls.Patch
	if fe := decodeJSON(c, &p); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	if len(p.Reason) > 500 {
		writeProblem(c, Invalid(FieldError{"reason", "at most 500 characters"}))
		return
	}
	id := identity(c)
	d, err := s.Operator.Store.Catalogue.UpdateControls(c.Request.Context(), c.Param("event_id"), id.UserID, id.Org, p)
	if err != nil {
		s.fail(c, err)
		return
	}
	// In force in this process before the answer; the others follow
	// within their poll interval.
	if s.Operator.Dials != nil {
		if err := s.Operator.Dials.Refresh(c.Request.Context()); err != nil {
			s.Log.Warn("controls: refresh after change", "err", err)
		}
	}
	c.JSON(http.StatusOK, s.controlsBody(c, d))
}

type revokeRequest struct {
	UserID string `json:"user_id"`
	Reason string `json:"reason"`
}

// revokeAdmission ends a fan's admission to a metered event at once (a
// scalper's account, a fan admitted by mistake): every pass minted for it
// is refused from now on, and the action is in the admin audit log.
func (s *Server) revokeAdmission(c *gin.Context) {
	var req revokeRequest
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	req.UserID = strings.TrimSpace(req.UserID)
	if req.UserID == "" || len(req.UserID) > 200 {
		writeProblem(c, Invalid(FieldError{"user_id", "required: the fan's user ID"}))
		return
	}
	ctx, eventID := c.Request.Context(), c.Param("event_id")
	if _, err := s.Operator.Store.Catalogue.EventControls(ctx, eventID); err != nil {
		s.fail(c, err) // an unknown event is 404
		return
	}
	revoked, err := s.Room.Revoke(ctx, eventID, req.UserID)
	if err != nil {
		s.fail(c, err)
		return
	}
	id := identity(c)
	if err := s.Operator.Store.Orgs.RecordAdminAction(ctx, store.AdminAction{Actor: id.UserID, OrgID: id.Org,
		Action: "admission.revoke", Target: eventID + "/" + req.UserID, Reason: req.Reason}); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"event_id": eventID, "user_id": req.UserID, "revoked": revoked})
}
