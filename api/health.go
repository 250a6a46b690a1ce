package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

func (s *Server) createSession(c *gin.Context) {
	var req struct {
		UserID   string `json:"user_id"`
		DeviceID string `json:"device_id"`
	}
	if err := decodeJSON(c, &req); err != nil {
		writeProblem(c, Invalid(*err))
		return
	}
	var errs []FieldError
	if !idPattern.MatchString(req.UserID) {
		errs = append(errs, FieldError{"user_id", "required: letters, digits, '_', '-', '.', ':' (at most 100)"})
	}
	if !idPattern.MatchString(req.DeviceID) {
		errs = append(errs, FieldError{"device_id", "required: letters, digits, '_', '-', '.', ':' (at most 100)"})
	}
	if len(errs) > 0 {
		writeProblem(c, Invalid(errs...))
		return
	}
	c.JSON(http.StatusCreated, gin.H{"token": s.Sessions.Issue(req.UserID, req.DeviceID, time.Now())})
}

func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	status := map[string]string{}
	ok := true
	for _, chk := range s.Checks {
		if err := chk.Ping(ctx); err != nil {
			status[chk.Name] = "down: " + err.Error()
			ok = false
		} else {
			status[chk.Name] = "ok"
		}
	}
	if !ok {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "checks": status})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": status})
}
