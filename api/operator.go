package api

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/controls"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitingroom"
)

// Operator is what the operator routes act on: the event's dials and its
// admissions (organiser.Controls), and this process's watcher of the dials
// (so a change is in force here at once, and within its poll interval in
// every other process).
type Operator struct {
	// Controls reads and changes the dials and revokes admissions; nil:
	// one over Store and the server's waiting room.
	Controls *organiser.Controls
	// Store is only what a nil Controls is built over, so callers that
	// wire the API with a store alone keep working; no handler reads it.
	Store *store.Store
	Dials *controls.Watcher
}

// operatorRoles may turn an event's dials and revoke admissions.
var operatorRoles = []session.Role{session.Operator, session.Admin}

// operatorHandlers serve the operator's dials and revocations.
type operatorHandlers struct {
	controls *organiser.Controls
	dials    *controls.Watcher
	// room answers the capacity in force in this process (nil: not told).
	room     *waitingroom.Room
	log      *slog.Logger
	problems problems
}

// newOperatorHandlers builds the operator routes' handlers over o (nil:
// routes not served) and the server's waiting room (nil: none).
func newOperatorHandlers(o *Operator, room *waitingroom.Room, p problems) *operatorHandlers {
	h := &operatorHandlers{room: room, log: p.log, problems: p}
	if o == nil {
		return h
	}
	h.controls, h.dials = o.Controls, o.Dials
	if h.controls == nil {
		h.controls = &organiser.Controls{Store: o.Store}
		if room != nil {
			h.controls.Room = room
		}
	}
	return h
}

// controlsBody is the dials as the routes answer them, with the capacity
// this process's waiting room has in force (the adaptive mode moves it
// within the operator's bounds).
type controlsBody struct {
	controls.Dials
	CapacityInForce *int `json:"admission_capacity_in_force,omitempty"`
}

func (h *operatorHandlers) controlsBody(c *gin.Context, d controls.Dials) controlsBody {
	b := controlsBody{Dials: d}
	if h.room != nil {
		if n, err := h.room.CapacityInForce(c.Request.Context(), d.EventID); err == nil {
			b.CapacityInForce = &n
		}
	}
	return b
}

func (h *operatorHandlers) getControls(c *gin.Context) {
	d, err := h.controls.Dials(c.Request.Context(), c.Param("event_id"))
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.controlsBody(c, d))
}

func (h *operatorHandlers) patchControls(c *gin.Context) {
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
	d, err := h.controls.Change(c.Request.Context(), c.Param("event_id"), id.UserID, p)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	// In force in this process before the answer; the others follow
	// within their poll interval.
	if h.dials != nil {
		if err := h.dials.Refresh(c.Request.Context()); err != nil {
			h.log.Warn("controls: refresh after change", "err", err)
		}
	}
	c.JSON(http.StatusOK, h.controlsBody(c, d))
}

type revokeRequest struct {
	UserID string `json:"user_id"`
	Reason string `json:"reason"`
}

// revokeAdmission ends a fan's admission to a metered event at once (a
// scalper's account, a fan admitted by mistake): every pass minted for it
// is refused from now on, and the action is in the admin audit log
// (organiser.Controls.Revoke). An unknown event is 404.
func (h *operatorHandlers) revokeAdmission(c *gin.Context) {
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
	eventID, id := c.Param("event_id"), identity(c)
	revoked, err := h.controls.Revoke(c.Request.Context(), eventID, req.UserID, id.UserID, req.Reason)
	h.problems.answer(c, gin.H{"event_id": eventID, "user_id": req.UserID, "revoked": revoked}, err)
}
