package api

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"
)

// Route deadlines. Every ordinary request runs under Server.RequestTimeout:
// its context ends then, every dependency call below it (PostgreSQL, Redis,
// Temporal) returns context.DeadlineExceeded, and problemFor answers 503
// unavailable instead of letting the request hang. WebSockets have none
// (they live for minutes and bound each write themselves); a checkout or a
// cancel waits on its workflow Update up to booking's own minute, so it gets
// longer.
const (
	noDeadline     = -1
	updateDeadline = 75 * time.Second
)

// deadline bounds the request's context by d (noDeadline: unbounded; 0: the
// server's RequestTimeout, itself 0 for none).
func (s *Server) deadline(d time.Duration) gin.HandlerFunc {
	if d == 0 {
		d = s.RequestTimeout
	}
	if d <= 0 {
		return nil
	}
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}
