package api

import (
	"context"
	"encoding/base64"
	"errors"
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
// Every mutating route leaves an admin audit record.
type Admin struct {
	Venues *venues.Service
	Events *organiser.Service
	// Sales reads from the browse plane's read-only pool.
	Sales *organiser.Sales
	// Store holds the audit log and the hotels' counters.
	Store *store.Store
	// Walks walks hotel bookings (booking.Service.Walk, through the walk
	// workflow); nil serves no walk route.
	Walks Walker
}

// organiserRoles may call the organiser routes; the event's organisation is
// checked per request (ownEvent).
var organiserRoles = []session.Role{session.Organiser, session.Admin}

// adminRoutes is the /v1/admin part of the route table.
func (s *Server) adminRoutes() []route {
	on := s.Admin != nil
	own := []gin.HandlerFunc{s.ownEvent}
	admin := []session.Role{session.Admin}
	return []route{
		{method: http.MethodPost, path: "/v1/admin/venues", roles: organiserRoles, deadline: importDeadline, handler: s.createVenue, enabled: on},
		{method: http.MethodGet, path: "/v1/admin/venues", roles: organiserRoles, handler: s.listVenues, enabled: on},
		{method: http.MethodGet, path: "/v1/admin/events", roles: organiserRoles, handler: s.listEvents, enabled: on},
		{method: http.MethodPost, path: "/v1/admin/events", roles: organiserRoles, deadline: importDeadline, handler: s.createEvent, enabled: on},
		{method: http.MethodGet, path: "/v1/admin/events/:event_id", roles: organiserRoles, after: own, handler: s.adminEvent, enabled: on},
		{method: http.MethodPatch, path: "/v1/admin/events/:event_id", roles: organiserRoles, after: own, handler: s.patchEvent, enabled: on},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/publish", roles: organiserRoles, after: own, handler: s.publishEvent, enabled: on},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/seats/block", roles: organiserRoles, after: own, handler: s.blockSeats(true), enabled: on},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/seats/unblock", roles: organiserRoles, after: own, handler: s.blockSeats(false), enabled: on},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/promotions", roles: organiserRoles, after: own, handler: s.createPromotion, enabled: on},
		{method: http.MethodGet, path: "/v1/admin/events/:event_id/promotions", roles: organiserRoles, after: own, handler: s.listPromotions, enabled: on},
		{method: http.MethodDelete, path: "/v1/admin/events/:event_id/promotions/:code", roles: organiserRoles, after: own, handler: s.disablePromotion, enabled: on},
		{method: http.MethodGet, path: "/v1/admin/events/:event_id/sales", roles: organiserRoles, after: own, handler: s.salesReport, enabled: on && s.Admin.Sales != nil},
		{method: http.MethodGet, path: "/v1/admin/audit", roles: organiserRoles, handler: s.listAudit, enabled: on},
		{method: http.MethodPut, path: "/v1/admin/properties/:property_id/overbooking", roles: admin, handler: s.setOverbooking, enabled: on},
		{method: http.MethodPost, path: "/v1/admin/properties/:property_id/walks", roles: admin, deadline: staffDeadline, handler: s.walkRooms, enabled: on && s.Admin.Walks != nil},
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
// its organisation: 403, not 404, so an organiser is told plainly the
// event is not theirs.
func (s *Server) ownEvent(c *gin.Context) {
	ev, err := s.Admin.Events.Get(c.Request.Context(), venues.Admin("", ""), c.Param("event_id"))
	if err != nil {
		s.fail(c, err)
		c.Abort()
		return
	}
	if !identity(c).CanManage(ev.OrgID) {
		forbidden(c, "the event belongs to another organisation")
		c.Abort()
		return
	}
	c.Set(eventKey, ev)
	c.Next()
}

func pathEvent(c *gin.Context) organiser.Event {
	v, _ := c.Get(eventKey)
	ev, _ := v.(organiser.Event)
	return ev
}

// audit records a change already committed by a service without a
// transaction of its own to share. A failure is logged: the change stands.
func (s *Server) audit(c *gin.Context, org, action, target, reason string, before, after any) {
	if err := s.Admin.Events.Audit(context.WithoutCancel(c.Request.Context()), scope(c), org, action, target, reason,
		before, after); err != nil {
		s.Log.Error("admin audit record not written", "action", action, "target", target, "err", err)
	}
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

func (s *Server) createVenue(c *gin.Context) {
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
		v, err = venues.ParseCSV(body, venues.CSVMeta{Name: c.Query("name"), City: c.Query("city"), Timezone: c.Query("timezone")})
	} else {
		v, err = venues.ParseJSON(body)
	}
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	imp, err := s.Admin.Venues.Import(c.Request.Context(), sc, v)
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	s.audit(c, sc.Org, "venue.create", imp.VenueID, "", nil, gin.H{"venue_id": imp.VenueID, "name": v.Name,
		"city": v.City, "timezone": v.Timezone, "sections": imp.Sections, "seats": imp.Seats})
	c.JSON(http.StatusCreated, imp)
}

// failAdmin answers a service error; errors that are neither typed nor
// from infrastructure (an unreadable body) are the request's.
func (s *Server) failAdmin(c *gin.Context, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeProblem(c, Invalid(FieldError{"body", "too large"}))
		return
	}
	s.fail(c, err)
}

func (s *Server) createEvent(c *gin.Context) {
	if orgless(c) {
		return
	}
	f, err := organiser.DecodeEventFields(c.Request.Body)
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	sc := scope(c)
	if f.VenueID != nil {
		// A venue of another organisation is refused as such, not as unknown.
		if v, err := s.Admin.Venues.Get(c.Request.Context(), venues.Admin("", ""), *f.VenueID); err == nil && !identity(c).CanManage(v.OrgID) {
			forbidden(c, "the venue belongs to another organisation")
			return
		}
	}
	ev, err := s.Admin.Events.Create(c.Request.Context(), sc, f)
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	s.audit(c, ev.OrgID, "event.create", ev.EventID, "", nil, ev)
	c.JSON(http.StatusCreated, ev)
}

func (s *Server) adminEvent(c *gin.Context) { c.JSON(http.StatusOK, pathEvent(c)) }

// listEvents is GET /v1/admin/events: the caller's organisation's events
// (an admin's: ?org=, else every organisation's), drafts included, newest
// first, limit a page (50 unless given, at most 200); next_cursor pages on.
func (s *Server) listEvents(c *gin.Context) {
	if orgless(c) {
		return
	}
	limit := 50
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > organiser.MaxListed {
			writeProblem(c, Invalid(FieldError{"limit", "1 to " + strconv.Itoa(organiser.MaxListed)}))
			return
		}
		limit = n
	}
	var before *store.EventCursor
	if cur := c.Query("cursor"); cur != "" {
		var ok bool
		if before, ok = decodeEventCursor(cur); !ok {
			writeProblem(c, Invalid(FieldError{"cursor", "a cursor as next_cursor gave it"}))
			return
		}
	}
	evs, err := s.Admin.Events.List(c.Request.Context(), scope(c), before, limit)
	if err != nil {
		s.failAdmin(c, err)
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
func (s *Server) listVenues(c *gin.Context) {
	if orgless(c) {
		return
	}
	vs, err := s.Admin.Venues.List(c.Request.Context(), scope(c))
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	out := make([]gin.H, len(vs))
	for i, v := range vs {
		out[i] = gin.H{"venue_id": v.ID, "org_id": v.OrgID, "name": v.Name, "city": v.City, "timezone": v.Timezone,
			"categories": v.Categories, "sections": v.Sections, "seats": v.Seats, "created_at": v.CreatedAt.UTC()}
	}
	c.JSON(http.StatusOK, gin.H{"venues": out})
}

func (s *Server) patchEvent(c *gin.Context) {
	f, err := organiser.DecodeEventFields(c.Request.Body)
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	before := pathEvent(c)
	ev, err := s.Admin.Events.Patch(c.Request.Context(), scope(c), before.EventID, f)
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	s.audit(c, ev.OrgID, "event.patch", ev.EventID, "", before, ev)
	c.JSON(http.StatusOK, ev)
}

func (s *Server) publishEvent(c *gin.Context) {
	before := pathEvent(c)
	ev, err := s.Admin.Events.Publish(c.Request.Context(), scope(c), before.EventID)
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	s.audit(c, ev.OrgID, "event.publish", ev.EventID, "", gin.H{"status": before.Status}, gin.H{"status": ev.Status})
	c.JSON(http.StatusOK, ev)
}

func (s *Server) blockSeats(block bool) gin.HandlerFunc {
	change, action := s.Admin.blockFunc(block)
	return func(c *gin.Context) {
		var req organiser.SeatChange
		if fe := decodeJSON(c, &req); fe != nil {
			writeProblem(c, Invalid(*fe))
			return
		}
		ev := pathEvent(c)
		out, err := change(c.Request.Context(), scope(c), ev.EventID, req)
		if err != nil {
			s.failAdmin(c, err)
			return
		}
		s.audit(c, ev.OrgID, action, ev.EventID, strings.TrimSpace(req.Reason), gin.H{"seat_ids": req.SeatIDs}, out)
		c.JSON(http.StatusOK, out)
	}
}

func (a *Admin) blockFunc(block bool) (func(context.Context, venues.Scope, string, organiser.SeatChange) (organiser.SeatChanged, error), string) {
	if a == nil {
		return nil, ""
	}
	if block {
		return a.Events.Block, "seats.block"
	}
	return a.Events.Unblock, "seats.unblock"
}

func (s *Server) createPromotion(c *gin.Context) {
	var req organiser.PromotionRequest
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	p, err := s.Admin.Events.CreatePromotion(c.Request.Context(), scope(c), pathEvent(c).EventID, req)
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	c.JSON(http.StatusCreated, p)
}

// listPromotions is GET /v1/admin/events/{id}/promotions: every code of
// the event, disabled ones too, oldest first.
func (s *Server) listPromotions(c *gin.Context) {
	ps, err := s.Admin.Events.Promotions(c.Request.Context(), scope(c), pathEvent(c).EventID)
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"promotions": ps})
}

func (s *Server) disablePromotion(c *gin.Context) {
	p, err := s.Admin.Events.DisablePromotion(c.Request.Context(), scope(c), pathEvent(c).EventID, c.Param("code"))
	if err != nil {
		s.failAdmin(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

func (s *Server) salesReport(c *gin.Context) {
	r, err := s.Admin.Sales.Report(c.Request.Context(), venues.Admin("", identity(c).UserID), pathEvent(c).EventID)
	if err != nil {
		s.fail(c, err)
		return
	}
	switch c.Query("format") {
	case "", "json":
		c.JSON(http.StatusOK, r)
	case "csv":
		c.Header("Content-Type", "text/csv; charset=utf-8")
		c.Header("Content-Disposition", `attachment; filename="sales-`+r.EventID+`.csv"`)
		c.Status(http.StatusOK)
		_ = r.WriteCSV(c.Writer)
	default:
		writeProblem(c, Invalid(FieldError{"format", "json or csv"}))
	}
}

// listAudit is GET /v1/admin/audit: newest first, 100 a page; next_before
// pages on. An organiser sees only their organisation's records.
func (s *Server) listAudit(c *gin.Context) {
	id := identity(c)
	f := store.AuditFilter{Actor: c.Query("actor"), Action: c.Query("action"), Target: c.Query("target"), Limit: 100}
	if !id.Has(session.Admin) {
		if id.Org == "" {
			forbidden(c, "an organiser without an organisation has no records")
			return
		}
		f.OrgID = id.Org
	}
	if b := c.Query("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			writeProblem(c, Invalid(FieldError{"before", "a record id, as next_before gave it"}))
			return
		}
		f.BeforeID = n
	}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			writeProblem(c, Invalid(FieldError{"limit", "1 to 500"}))
			return
		}
		f.Limit = n
	}
	actions, err := s.Admin.Store.Orgs.ListAdminActions(c.Request.Context(), f)
	if err != nil {
		s.fail(c, err)
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

// overbookingRequest is PUT /v1/admin/properties/{id}/overbooking: the
// limit itself, or the walk risk accepted at a show rate.
type overbookingRequest struct {
	RoomType string   `json:"room_type"`
	Night    string   `json:"night"`
	Limit    *int     `json:"limit"`
	WalkRisk *float64 `json:"walk_risk"`
	ShowRate *float64 `json:"show_rate"`
}

func (s *Server) setOverbooking(c *gin.Context) {
	var req overbookingRequest
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	night, err := time.Parse(time.DateOnly, req.Night)
	var errs []FieldError
	if req.RoomType == "" {
		errs = append(errs, FieldError{"room_type", "required"})
	}
	if err != nil {
		errs = append(errs, FieldError{"night", "required: a date, YYYY-MM-DD"})
	}
	switch {
	case (req.Limit == nil) == (req.WalkRisk == nil):
		errs = append(errs, FieldError{"limit", "exactly one of limit and walk_risk (with show_rate)"})
	case req.Limit != nil && (*req.Limit < 0 || *req.Limit > 10000):
		errs = append(errs, FieldError{"limit", "0 to 10000"})
	case req.WalkRisk != nil && req.ShowRate == nil:
		errs = append(errs, FieldError{"show_rate", "required with walk_risk"})
	}
	if len(errs) > 0 {
		writeProblem(c, Invalid(errs...))
		return
	}
	ctx, property := c.Request.Context(), c.Param("property_id")
	before, err := s.Admin.Store.Hotels.RoomNightCounters(ctx, property, req.RoomType, night)
	if err != nil {
		s.fail(c, err)
		return
	}
	limit := 0
	if req.Limit != nil {
		limit = *req.Limit
	} else if limit, err = hotels.OverbookLimit(before.Allotment, *req.ShowRate, *req.WalkRisk); err != nil {
		writeProblem(c, Invalid(FieldError{"walk_risk", err.Error()}))
		return
	}
	after, err := s.Admin.Store.Hotels.SetOverbooking(ctx, property, req.RoomType, night, limit)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.audit(c, "", "hotel.overbooking", property+"/"+req.RoomType+"/"+req.Night, "", roomNightView(before), roomNightView(after))
	c.JSON(http.StatusOK, roomNightView(after))
}

func roomNightView(rn store.RoomNight) gin.H {
	return gin.H{"property_id": rn.PropertyID, "room_type": rn.RoomType, "night": rn.Night.Format(time.DateOnly),
		"allotment": rn.Allotment, "overbook_limit": rn.OverbookLimit, "held": rn.Held, "sold": rn.Sold}
}

// Walker walks hotel guests off an overbooked night.
type Walker interface {
	Walk(ctx context.Context, req hotels.WalkRequest) ([]store.Walk, error)
}

func (s *Server) walkRooms(c *gin.Context) {
	var req struct {
		Night string `json:"night"`
		Rooms int    `json:"rooms"`
	}
	if fe := decodeJSON(c, &req); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	night, err := time.Parse(time.DateOnly, req.Night)
	if err != nil {
		writeProblem(c, Invalid(FieldError{"night", "required: a date, YYYY-MM-DD"}))
		return
	}
	property := c.Param("property_id")
	walks, err := s.Admin.Walks.Walk(c.Request.Context(), hotels.WalkRequest{PropertyID: property, Night: night, Rooms: req.Rooms})
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]gin.H, len(walks))
	for i, w := range walks {
		out[i] = gin.H{"booking_id": w.ReservationID, "outcome": w.Outcome, "from_property": w.FromProperty, "to_property": w.ToProperty,
			"to_room_type": w.ToRoomType, "rooms": w.Rooms, "refund": w.Refund, "compensation": w.Compensation,
			"currency": w.Currency, "notified": w.Notified}
	}
	s.audit(c, "", "hotel.walk", property+"/"+req.Night, "", nil, gin.H{"rooms": req.Rooms, "walks": out})
	c.JSON(http.StatusOK, gin.H{"walks": out})
}
