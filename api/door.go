package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/organiser"
)

// recordDoorScans is POST /v1/admin/events/{event_id}/door/scans: a gate
// reports the admissions and exits its ledger recorded
// ({"scans":[{"ticket_id","gate_id","device_id","direction","zone","scanned_at"}]},
// at most organiser.MaxScansPerReport). Reporting a scan again counts it
// once.
func (h *adminHandlers) recordDoorScans(c *gin.Context) {
	var req struct {
		Scans []organiser.ScanInput `json:"scans"`
	}
	if err := decodeJSON(c, &req); err != nil {
		writeProblem(c, Invalid(*err))
		return
	}
	n, err := h.door.Record(c.Request.Context(), pathEvent(c).EventID, req.Scans)
	h.problems.answer(c, gin.H{"received": len(req.Scans), "new": n}, err)
}

// doorReport is GET /v1/admin/events/{event_id}/door: admitted and inside
// now, per gate, admissions per minute over the last ?minutes= (default
// 120, at most 1440) and who is inside per zone.
func (h *adminHandlers) doorReport(c *gin.Context) {
	minutes, bad := countParam("minutes", c.Query("minutes"), 120, 1440, "a whole number from 1 to 1440")
	if bad != nil {
		writeProblem(c, Invalid(*bad))
		return
	}
	eventID := pathEvent(c).EventID
	r, err := h.door.Report(c.Request.Context(), eventID, time.Duration(minutes)*time.Minute)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	gates := make([]gin.H, len(r.Gates))
	for i, g := range r.Gates {
		gates[i] = gin.H{"gate_id": g.GateID, "in": g.In, "out": g.Out, "last_scan_at": g.LastScanAt.UTC()}
	}
	perMinute := make([]gin.H, len(r.Minutes))
	for i, m := range r.Minutes {
		perMinute[i] = gin.H{"minute": m.Minute.UTC(), "gate_id": m.GateID, "in": m.In}
	}
	zones := make([]gin.H, len(r.Zones))
	for i, z := range r.Zones {
		zones[i] = gin.H{"zone": z.Zone, "inside": z.Inside}
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, gin.H{"event_id": eventID, "admitted": r.Admitted, "inside": r.Inside, "last_scan_at": r.LastScanAt,
		"gates": gates, "per_minute": perMinute, "zones": zones, "minutes": minutes})
}
