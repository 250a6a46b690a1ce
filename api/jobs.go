package api

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// reasonRequest carries the reason staff give for an action.
type reasonRequest struct {
	Reason string `json:"reason"`
}

// decodeReason reads a required reason of at most 500 characters.
func decodeReason(c *gin.Context) (string, bool) {
	var req reasonRequest
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return "", false
	}
	req.Reason = strings.TrimSpace(req.Reason)
	if req.Reason == "" || len(req.Reason) > 500 || !storableText(req.Reason) {
		writeProblem(c, Invalid(FieldError{"reason", "required, at most 500 characters"}))
		return "", false
	}
	return req.Reason, true
}

// cancelEvent cancels an event and answers with the job that refunds it.
func (h *supportHandlers) cancelEvent(c *gin.Context) {
	reason, ok := decodeReason(c)
	if !ok {
		return
	}
	job, err := h.bookings.CancelEvent(c.Request.Context(), identity(c), c.Param("event_id"), reason)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"job_id": job.ID, "status": job.Status, "total": job.Total})
}

// getJob answers a job's progress. Its organiser's staff, support and
// admins may read it.
func (h *supportHandlers) getJob(c *gin.Context) {
	job, err := h.bookings.Job(c.Request.Context(), c.Param("job_id"))
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	if who := identity(c); !who.CanManage(job.OrgID) && !who.Has("support") {
		forbidden(c, "the job belongs to another organisation")
		return
	}
	c.JSON(http.StatusOK, job)
}
