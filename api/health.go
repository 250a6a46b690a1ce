package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// ready answers 200 when every dependency answers, else 503 naming the
// failing checks only: a dependency's error text (addresses, users, versions)
// is for the log, not for whoever can reach the port.
func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	failing := []string{}
	for _, chk := range s.Checks {
		if err := chk.Ping(ctx); err != nil {
			s.Log.Warn("readiness check failed", "check", chk.Name, "err", err)
			failing = append(failing, chk.Name)
		}
	}
	if len(failing) > 0 {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "failing": failing})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}
