package api

import (
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/session"
)

const identityKey = "encore.identity"

// authenticate verifies the bearer token and records the caller.
func (s *Server) authenticate(c *gin.Context) {
	token, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if !ok {
		writeProblem(c, NewProblem(http.StatusUnauthorized, ProbUnauthorized, "send Authorization: Bearer <token> from POST /v1/sessions"))
		return
	}
	id, err := s.Sessions.Verify(token, time.Now())
	if err != nil {
		writeProblem(c, NewProblem(http.StatusUnauthorized, ProbUnauthorized, "the token is invalid or expired"))
		return
	}
	c.Set(identityKey, id)
	c.Next()
}

// tokenFromQuery lets a browser's WebSocket, which cannot set headers, send
// its token as ?access_token=.
func tokenFromQuery(c *gin.Context) {
	if c.GetHeader("Authorization") == "" {
		if t := c.Query("access_token"); t != "" {
			c.Request.Header.Set("Authorization", "Bearer "+t)
		}
	}
	c.Next()
}

// identity is the caller authenticate verified; the zero identity on a
// public route.
func identity(c *gin.Context) session.Identity {
	v, _ := c.Get(identityKey)
	id, _ := v.(session.Identity)
	return id
}

// clientIP is the TCP peer's address: the one client address every rate
// limit and fraud rule counts. Forwarded headers are not trusted; behind a
// proxy, the proxy's address counts.
func clientIP(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}
