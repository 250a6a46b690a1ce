package api

import (
	"net/http"

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

func (s *Server) queueEvent(c *gin.Context) (string, bool) {
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

func (s *Server) joinQueue(c *gin.Context) {
	eventID, ok := s.queueEvent(c)
	if !ok {
		return
	}
	st, err := s.Room.Admit(c.Request.Context(), identity(c), eventID, clientIP(c.Request), proofOf(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, st)
}

func (s *Server) pollQueue(c *gin.Context) {
	eventID, ok := s.queueEvent(c)
	if !ok {
		return
	}
	st, err := s.Room.Poll(c.Request.Context(), identity(c), eventID, clientIP(c.Request))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, st)
}

// queueSocket joins (or keeps the place of) the fan with the same checks as
// POST, then upgrades. Refusals are plain HTTP problems before the upgrade.
func (s *Server) queueSocket(c *gin.Context) {
	eventID, ok := s.queueEvent(c)
	if !ok {
		return
	}
	sock, err := s.Room.OpenSocket(c.Request.Context(), identity(c), eventID, clientIP(c.Request), proofOf(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	conn, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{
		OriginPatterns: s.Room.OriginPatterns(), CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // Accept wrote the response
	}
	c.Abort()
	s.Room.ServeSocket(conn, sock)
}
