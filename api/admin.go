package api

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// Admin is the organiser and admin API under /v1/admin: venues, events,
// seat blocks, promotions, sales, the audit log, and hotel overbooking.
// Every mutating route leaves an admin audit record. Its routes call these
// services only; the data layer is theirs.
type Admin struct {
	Venues *venues.Service
	// Events runs the organiser's events and keeps the admin audit log.
	Events *organiser.Service
	// Sales reads from the browse plane's read-only pool.
	Sales *organiser.Sales
	// Overbooking sets hotel room-nights' overbooking limits; nil: one
	// over Store.
	Overbooking *hotels.Overbooking
	// Store is only what a nil Overbooking is built over, so callers that
	// wire the API with a store alone keep working; no handler reads it.
	Store *store.Store
	// Walks walks hotel bookings (booking.Service.Walk, through the walk
	// workflow); nil serves no walk route.
	Walks Walker
	// Door counts the scans gates report; nil: one over Store (none
	// without a Store).
	Door *organiser.Door
	// Hotels runs hoteliers' properties, inventory, arrivals and walk
	// previews; nil: one over Store (no property routes without a Store).
	Hotels *hotels.Service
}

// organiserRoles may call the organiser routes; the event's organisation is
// checked per request (ownEvent).
var organiserRoles = []session.Role{session.Organiser, session.Admin}

// adminHandlers serve the organiser's venues, events, seat blocks,
// promotions, sales report and audit log.
type adminHandlers struct {
	venues   *venues.Service
	events   *organiser.Service
	sales    *organiser.Sales
	door     *organiser.Door
	audit    auditTrail
	problems problems
}

// newAdminHandlers builds the organiser routes' handlers over a; a nil a
// (no organiser API) builds handlers whose routes are not served.
func newAdminHandlers(a *Admin, p problems) *adminHandlers {
	h := &adminHandlers{problems: p, audit: auditTrail{log: p.log}}
	if a != nil {
		h.venues, h.events, h.sales, h.audit.events = a.Venues, a.Events, a.Sales, a.Events
		h.door = a.Door
		if h.door == nil && a.Store != nil {
			h.door = organiser.NewDoor(a.Store)
		}
	}
	return h
}

// auditTrail records a change a service committed without a transaction of
// its own to share (organiser.Service.Audit), for the organiser and the
// hotel routes alike.
type auditTrail struct {
	events *organiser.Service
	log    *slog.Logger
}

// record writes the audit record of a change already made. A failure is
// logged: the change stands.
func (a auditTrail) record(c *gin.Context, org, action, target, reason string, before, after any) {
	if err := a.events.Audit(context.WithoutCancel(c.Request.Context()), scope(c), org, action, target, reason,
		before, after); err != nil {
		a.log.Error("admin audit record not written", "action", action, "target", target, "err", err)
	}
}

const eventKey = "encore.admin.event"

// scope is what the caller acts for: an admin on any organisation (new
// venues in their token's org unless ?org= says otherwise), an organiser on
// their own.
func scope(c *gin.Context) venues.Scope {
	id := identity(c)
	if id.Has(session.Admin) {
		org := id.Org
		if q := c.Query("org"); q != "" {
			org = q
		}
		return venues.Admin(org, id.UserID)
	}
	return venues.Organiser(id.Org, id.UserID)
}

func forbidden(c *gin.Context, detail string) {
	writeProblem(c, NewProblem(http.StatusForbidden, ProbForbidden, detail))
}

// ownEvent loads the path's event and refuses a caller who may not manage
// its organisation (ownPathObject).
func (h *adminHandlers) ownEvent(c *gin.Context) {
	ownPathObject(c, eventKey, "the event belongs to another organisation",
		func() (organiser.Event, bool) {
			ev, err := h.events.Get(c.Request.Context(), venues.Admin("", ""), c.Param("event_id"))
			if err != nil {
				h.problems.fail(c, err)
				return organiser.Event{}, false
			}
			return ev, true
		},
		func(ev organiser.Event) bool { return identity(c).CanManage(ev.OrgID) })
}

func pathEvent(c *gin.Context) organiser.Event { return pathObject[organiser.Event](c, eventKey) }

// ownPathObject is the middleware of the routes below an object of one
// organisation (an event, a property): load reads the path's object (and
// answers the problem itself when it cannot), a caller whom may does not
// allow is refused 403, not 404, so they are told plainly the object is not
// theirs, and otherwise the object is kept under key for the handler
// (pathObject), which need not load it again.
func ownPathObject[T any](c *gin.Context, key, notTheirs string, load func() (T, bool), may func(T) bool) {
	v, ok := load()
	if !ok {
		c.Abort()
		return
	}
	if !may(v) {
		forbidden(c, notTheirs)
		c.Abort()
		return
	}
	c.Set(key, v)
	c.Next()
}

// pathObject is the object ownPathObject kept under key.
func pathObject[T any](c *gin.Context, key string) T {
	v, _ := c.Get(key)
	obj, _ := v.(T)
	return obj
}

// orgless refuses an organiser whose token names no organisation: they
// can manage nothing.
func orgless(c *gin.Context) bool {
	id := identity(c)
	if id.Has(session.Admin) || id.Org != "" {
		return false
	}
	forbidden(c, "the token names no organisation (claim org)")
	return true
}

func (h *adminHandlers) createVenue(c *gin.Context) {
	if orgless(c) {
		return
	}
	sc := scope(c)
	id := identity(c)
	if q := c.Query("org"); q != "" && !id.CanManage(q) {
		forbidden(c, "an organiser creates venues for their own organisation only")
		return
	}
	body := http.MaxBytesReader(c.Writer, c.Request.Body, venues.MaxFileBytes+1)
	var v venues.Venue
	var err error
	if ct := c.ContentType(); ct == "text/csv" {
		meta := venues.CSVMeta{Name: c.Query("name"), City: c.Query("city"), Timezone: c.Query("timezone")}
		for _, q := range []struct {
			name string
			to   **float64
		}{{"lat", &meta.Lat}, {"lng", &meta.Lng}} {
			if raw := c.Query(q.name); raw != "" {
				f, perr := strconv.ParseFloat(raw, 64)
				if perr != nil {
					writeProblem(c, Invalid(FieldError{q.name, "a number of degrees"}))
					return
				}
				*q.to = &f
			}
		}
		v, err = venues.ParseCSV(body, meta)
	} else {
		v, err = venues.ParseJSON(body)
	}
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	imp, err := h.venues.Import(c.Request.Context(), sc, v)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	h.audit.record(c, sc.Org, "venue.create", imp.VenueID, "", nil, gin.H{"venue_id": imp.VenueID, "name": v.Name,
		"city": v.City, "timezone": v.Timezone, "lat": v.Lat, "lng": v.Lng, "sections": imp.Sections, "seats": imp.Seats})
	c.JSON(http.StatusCreated, imp)
}

// failAdmin answers a service error; errors that are neither typed nor
// from infrastructure (an unreadable body) are the request's.
func (h *adminHandlers) failAdmin(c *gin.Context, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeProblem(c, Invalid(FieldError{"body", "too large"}))
		return
	}
	h.problems.fail(c, err)
}

func (h *adminHandlers) createEvent(c *gin.Context) {
	if orgless(c) {
		return
	}
	f, err := organiser.DecodeEventFields(c.Request.Body)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	sc := scope(c)
	if f.VenueID != nil {
		// A venue of another organisation is refused as such, not as unknown.
		if v, err := h.venues.Get(c.Request.Context(), venues.Admin("", ""), *f.VenueID); err == nil && !identity(c).CanManage(v.OrgID) {
			forbidden(c, "the venue belongs to another organisation")
			return
		}
	}
	ev, err := h.events.Create(c.Request.Context(), sc, f)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	h.audit.record(c, ev.OrgID, "event.create", ev.EventID, "", nil, ev)
	c.JSON(http.StatusCreated, ev)
}

func (h *adminHandlers) adminEvent(c *gin.Context) { c.JSON(http.StatusOK, pathEvent(c)) }

// listEvents is GET /v1/admin/events: the caller's organisation's events
// (an admin's: ?org=, else every organisation's), drafts included, newest
// first, limit a page (50 unless given, at most 200); next_cursor pages on.
func (h *adminHandlers) listEvents(c *gin.Context) {
	if orgless(c) {
		return
	}
	limit, bad := countParam("limit", c.Query("limit"), 50, organiser.MaxListed, "1 to "+strconv.Itoa(organiser.MaxListed))
	if bad != nil {
		writeProblem(c, Invalid(*bad))
		return
	}
	var before *store.EventCursor
	if cur := c.Query("cursor"); cur != "" {
		var ok bool
		if before, ok = decodeEventCursor(cur); !ok {
			writeProblem(c, Invalid(FieldError{"cursor", "a cursor as next_cursor gave it"}))
			return
		}
	}
	evs, err := h.events.List(c.Request.Context(), scope(c), before, limit)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	var next *string
	if len(evs) == limit {
		last := evs[len(evs)-1]
		cur := encodeEventCursor(store.EventCursor{CreatedAt: last.CreatedAt, ID: last.EventID})
		next = &cur
	}
	c.JSON(http.StatusOK, gin.H{"events": evs, "next_cursor": next})
}

// An event cursor is the last event's creation time and ID, base64url: the
// client passes it back unread.
func encodeEventCursor(cur store.EventCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cur.CreatedAt.UTC().Format(time.RFC3339Nano) + " " + cur.ID))
}

func decodeEventCursor(s string) (*store.EventCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	at, id, ok := strings.Cut(string(b), " ")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || id == "" {
		return nil, false
	}
	return &store.EventCursor{CreatedAt: t, ID: id}, true
}

// listVenues is GET /v1/admin/venues: the caller's organisation's venues
// (an admin's: ?org=, else every organisation's) with their price
// categories, newest first.
func (h *adminHandlers) listVenues(c *gin.Context) {
	if orgless(c) {
		return
	}
	vs, err := h.venues.List(c.Request.Context(), scope(c))
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	out := make([]gin.H, len(vs))
	for i, v := range vs {
		out[i] = gin.H{"venue_id": v.ID, "org_id": v.OrgID, "name": v.Name, "city": v.City, "timezone": v.Timezone,
			"categories": v.Categories, "sections": v.Sections, "seats": v.Seats, "created_at": v.CreatedAt.UTC()}
	}
	c.JSON(http.StatusOK, gin.H{"venues": out})
}

func (h *adminHandlers) patchEvent(c *gin.Context) {
	f, err := organiser.DecodeEventFields(c.Request.Body)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	before := pathEvent(c)
	ev, err := h.events.Patch(c.Request.Context(), scope(c), before.EventID, f)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	h.audit.record(c, ev.OrgID, "event.patch", ev.EventID, "", before, ev)
	c.JSON(http.StatusOK, ev)
}

func (h *adminHandlers) publishEvent(c *gin.Context) {
	before := pathEvent(c)
	ev, err := h.events.Publish(c.Request.Context(), scope(c), before.EventID)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	h.audit.record(c, ev.OrgID, "event.publish", ev.EventID, "", gin.H{"status": before.Status}, gin.H{"status": ev.Status})
	c.JSON(http.StatusOK, ev)
}

// blockSeats is the block (block true) or unblock route of an event's
// seats: the same body and audit, a different service call and action.
func (h *adminHandlers) blockSeats(block bool) gin.HandlerFunc {
	action := "seats.unblock"
	if block {
		action = "seats.block"
	}
	return func(c *gin.Context) {
		var req organiser.SeatChange
		if fe := decodeJSON(c, &req); fe != nil {
			writeProblem(c, Invalid(*fe))
			return
		}
		ev := pathEvent(c)
		change := h.events.Unblock
		if block {
			change = h.events.Block
		}
		out, err := change(c.Request.Context(), scope(c), ev.EventID, req)
		if err != nil {
			h.failAdmin(c, err)
			return
		}
		h.audit.record(c, ev.OrgID, action, ev.EventID, strings.TrimSpace(req.Reason), gin.H{"seat_ids": req.SeatIDs}, out)
		c.JSON(http.StatusOK, out)
	}
}

func (h *adminHandlers) createPromotion(c *gin.Context) {
	var req organiser.PromotionRequest
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	p, err := h.events.CreatePromotion(c.Request.Context(), scope(c), pathEvent(c).EventID, req)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	c.JSON(http.StatusCreated, p)
}

// updatePromotion is PATCH /v1/admin/events/{id}/promotions/{code}: new
// terms for holds taken from now on; audited with the change.
func (h *adminHandlers) updatePromotion(c *gin.Context) {
	var req organiser.PromotionPatch
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	p, err := h.events.UpdatePromotion(c.Request.Context(), scope(c), pathEvent(c).EventID, c.Param("code"), req)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

// listPromotions is GET /v1/admin/events/{id}/promotions: every code of
// the event, disabled ones too, oldest first.
func (h *adminHandlers) listPromotions(c *gin.Context) {
	ps, err := h.events.Promotions(c.Request.Context(), scope(c), pathEvent(c).EventID)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"promotions": ps})
}

func (h *adminHandlers) disablePromotion(c *gin.Context) {
	p, err := h.events.DisablePromotion(c.Request.Context(), scope(c), pathEvent(c).EventID, c.Param("code"))
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

func (h *adminHandlers) salesReport(c *gin.Context) {
	r, err := h.sales.Report(c.Request.Context(), venues.Admin("", identity(c).UserID), pathEvent(c).EventID)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	writeCSV := r.WriteCSV
	if c.Query("format") == "csv" && c.Query("answers") == "1" {
		// The attendees' answers after the sections: read before the
		// answer starts, so a failure is still a problem, not half a file.
		a, err := h.events.Attendees(c.Request.Context(), venues.Admin("", identity(c).UserID), r.EventID)
		if err != nil {
			h.problems.fail(c, err)
			return
		}
		writeCSV = func(w io.Writer) error { return organiser.WriteSalesCSV(w, r, a) }
	}
	answerFormat(c, r, "sales-"+r.EventID+".csv", writeCSV)
}

// listAudit is GET /v1/admin/audit: newest first, 100 a page; next_before
// pages on. An organiser sees only their organisation's records
// (organiser.Service.AuditLog).
func (h *adminHandlers) listAudit(c *gin.Context) {
	if id := identity(c); !id.Has(session.Admin) && id.Org == "" {
		forbidden(c, "an organiser without an organisation has no records")
		return
	}
	f := store.AuditFilter{Actor: c.Query("actor"), Action: c.Query("action"), Target: c.Query("target"), Limit: 100}
	if b := c.Query("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			writeProblem(c, Invalid(FieldError{"before", "a record id, as next_before gave it"}))
			return
		}
		f.BeforeID = n
	}
	var bad *FieldError
	if f.Limit, bad = countParam("limit", c.Query("limit"), f.Limit, 500, "1 to 500"); bad != nil {
		writeProblem(c, Invalid(*bad))
		return
	}
	// The scope confines an organiser to their organisation's records.
	actions, err := h.events.AuditLog(c.Request.Context(), scope(c), f)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	var next *int64
	if len(actions) == f.Limit {
		next = &actions[len(actions)-1].ID
	}
	if actions == nil {
		actions = []store.AdminAction{}
	}
	c.JSON(http.StatusOK, gin.H{"actions": actions, "next_before": next})
}
