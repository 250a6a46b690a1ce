package api

import (
	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/waitingroom"
)

// The admit plane's routes:
//
//	POST /v1/events/{event_id}/queue    join (or keep your place) -> state
//	GET  /v1/events/{event_id}/queue    heartbeat and state (the polling fallback)
//	GET  /v1/events/{event_id}/queue/ws WebSocket: the same states, pushed; send
//	                                    {"type":"heartbeat"} every heartbeat_seconds
//
// States are {"status":"waiting","position","estimated_wait_seconds"},
// {"status":"admitted","pass","pass_expires_at"} or {"status":"sold_out"}.
// A proof of work comes as the headers X-Queue-Challenge and
// X-Queue-Solution, or on the socket as ?pow_challenge= and ?pow_solution=.

// queueHandlers serve the admit plane: the waiting room's line, its socket,
// and its per-address limits of the buy plane's hot paths.
type queueHandlers struct {
	room     *waitingroom.Room
	problems problems
}

// queueEvent is the path's event ID; a refusal has been written when ok is
// false.
func queueEvent(c *gin.Context) (string, bool) {
	id := c.Param("event_id")
	if !idPattern.MatchString(id) {
		writeProblem(c, Invalid(FieldError{Field: "event_id", Message: "not an event ID"}))
		return "", false
	}
	return id, true
}

func proofOf(c *gin.Context) waitingroom.Proof {
	return waitingroom.Proof{
		Challenge: firstNonEmpty(c.GetHeader("X-Queue-Challenge"), c.Query("pow_challenge")),
		Solution:  firstNonEmpty(c.GetHeader("X-Queue-Solution"), c.Query("pow_solution")),
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (h *queueHandlers) joinQueue(c *gin.Context) {
	eventID, ok := queueEvent(c)
	if !ok {
		return
	}
	st, err := h.room.Admit(c.Request.Context(), identity(c), eventID, clientKey(c.Request), proofOf(c))
	h.problems.answer(c, st, err)
}

func (h *queueHandlers) pollQueue(c *gin.Context) {
	eventID, ok := queueEvent(c)
	if !ok {
		return
	}
	st, err := h.room.Poll(c.Request.Context(), identity(c), eventID, clientKey(c.Request))
	h.problems.answer(c, st, err)
}

// queueSocket joins (or keeps the place of) the fan with the same checks as
// POST, then upgrades. Refusals are plain HTTP problems before the upgrade.
func (h *queueHandlers) queueSocket(c *gin.Context) {
	eventID, ok := queueEvent(c)
	if !ok {
		return
	}
	sock, err := h.room.OpenSocket(c.Request.Context(), identity(c), eventID, clientKey(c.Request), proofOf(c))
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	conn, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{
		OriginPatterns: h.room.OriginPatterns(), CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // Accept wrote the response
	}
	c.Abort()
	h.room.ServeSocket(conn, sock)
}

// limitHold limits hold attempts per client address ahead of
// authentication, so an anonymous flood is limited too.
func (h *queueHandlers) limitHold(c *gin.Context) {
	if err := h.room.LimitHold(c.Request.Context(), clientKey(c.Request)); err != nil {
		h.problems.fail(c, err)
	}
}

// limitCheckout limits checkouts per client address and account.
func (h *queueHandlers) limitCheckout(c *gin.Context) {
	if err := h.room.LimitCheckout(c.Request.Context(), clientKey(c.Request), identity(c).UserID); err != nil {
		h.problems.fail(c, err)
	}
}
