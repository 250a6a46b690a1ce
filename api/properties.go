package api

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/venues"
)

// hotelierRoles may call the property routes; the property's organisation
// is checked per request (ownProperty).
var hotelierRoles = []session.Role{session.Hotelier, session.Admin}

// propertyHandlers serve hoteliers: their properties, nightly inventory and
// rates, arrivals and the preview of a walk (the walk itself and the
// overbooking limit are hotelHandlers').
type propertyHandlers struct {
	hotels   *hotels.Service
	audit    auditTrail
	problems problems
}

// newPropertyHandlers builds the property routes' handlers over a; a nil a
// builds handlers whose routes are not served.
func newPropertyHandlers(a *Admin, p problems) *propertyHandlers {
	h := &propertyHandlers{problems: p, audit: auditTrail{log: p.log}}
	if a != nil {
		h.hotels, h.audit.events = a.Hotels, a.Events
		if h.hotels == nil && a.Store != nil {
			h.hotels = hotels.NewService(a.Store)
		}
	}
	return h
}

const propertyKey = "encore.admin.property"

// ownProperty loads the path's property and refuses a caller who may not
// run its organisation's hotels (ownPathObject).
func (h *propertyHandlers) ownProperty(c *gin.Context) {
	ownPathObject(c, propertyKey, "the property belongs to another organisation",
		func() (hotels.Hotel, bool) {
			id, ok := pathID(c, "property_id", "property")
			if !ok {
				return hotels.Hotel{}, false
			}
			p, err := h.hotels.Get(c.Request.Context(), venues.Admin("", ""), id)
			if err != nil {
				h.problems.fail(c, err)
				return hotels.Hotel{}, false
			}
			return p, true
		},
		func(p hotels.Hotel) bool { return identity(c).CanManageProperty(p.OrgID) })
}

func pathProperty(c *gin.Context) hotels.Hotel { return pathObject[hotels.Hotel](c, propertyKey) }

// createProperty is POST /v1/admin/properties: 201 {"property_id", ...}.
// An admin names the organisation with ?org= (else their token's).
func (h *propertyHandlers) createProperty(c *gin.Context) {
	if orgless(c) {
		return
	}
	if q := c.Query("org"); q != "" && !identity(c).CanManageProperty(q) {
		forbidden(c, "a hotelier creates properties for their own organisation only")
		return
	}
	f, err := hotels.DecodePropertyFields(c.Request.Body)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	sc := scope(c)
	p, err := h.hotels.Create(c.Request.Context(), sc, f)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	h.audit.record(c, p.OrgID, "property.create", p.PropertyID, "", nil, p)
	c.JSON(http.StatusCreated, p)
}

// listProperties is GET /v1/admin/properties: the caller's organisation's
// properties (an admin's: ?org=, else every organisation's), newest first.
func (h *propertyHandlers) listProperties(c *gin.Context) {
	if orgless(c) {
		return
	}
	ps, err := h.hotels.List(c.Request.Context(), scope(c))
	h.problems.answer(c, gin.H{"properties": ps}, err)
}

func (h *propertyHandlers) getProperty(c *gin.Context) { c.JSON(http.StatusOK, pathProperty(c)) }

// patchProperty is PATCH /v1/admin/properties/{property_id}: the fields
// sent change, room types listed are added or changed.
func (h *propertyHandlers) patchProperty(c *gin.Context) {
	f, err := hotels.DecodePropertyFields(c.Request.Body)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	before := pathProperty(c)
	p, err := h.hotels.Patch(c.Request.Context(), venues.Admin("", identity(c).UserID), before.PropertyID, f)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	h.audit.record(c, p.OrgID, "property.patch", p.PropertyID, "", before, p)
	c.JSON(http.StatusOK, p)
}

// setInventory is PUT /v1/admin/properties/{property_id}/inventory: a
// range of one room type's nights set in one call, all or none.
func (h *propertyHandlers) setInventory(c *gin.Context) {
	req, err := hotels.DecodeInventoryRequest(c.Request.Body)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	p := pathProperty(c)
	res, err := h.hotels.SetInventory(c.Request.Context(), venues.Admin("", identity(c).UserID), p.PropertyID, req)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	h.audit.record(c, p.OrgID, "property.inventory", p.PropertyID+"/"+req.RoomType+"/"+req.From+".."+req.To, "", nil,
		gin.H{"request": req, "result": res})
	c.JSON(http.StatusOK, res)
}

// inventory is GET /v1/admin/properties/{property_id}/inventory?from=&to=.
func (h *propertyHandlers) inventory(c *gin.Context) {
	inv, err := h.hotels.Inventory(c.Request.Context(), venues.Admin("", ""), pathProperty(c).PropertyID, c.Query("from"), c.Query("to"))
	h.problems.answer(c, inv, err)
}

// arrivals is GET /v1/admin/properties/{property_id}/arrivals?date=, as
// JSON or (format=csv) as CSV neutralised by internal/csvsafe.
func (h *propertyHandlers) arrivals(c *gin.Context) {
	format := c.Query("format")
	if format != "" && format != "json" && format != "csv" {
		writeProblem(c, Invalid(FieldError{"format", "json or csv"}))
		return
	}
	a, err := h.hotels.Arrivals(c.Request.Context(), venues.Admin("", ""), pathProperty(c).PropertyID, c.Query("date"))
	if err != nil || format != "csv" {
		h.problems.answer(c, a, err)
		return
	}
	attachCSV(c, "arrivals-"+a.PropertyID+"-"+a.Date+".csv", a.WriteCSV)
}

// previewWalk is GET /v1/admin/properties/{property_id}/walks/preview
// ?night=&rooms=: who a walk would move and where, moving no one.
func (h *propertyHandlers) previewWalk(c *gin.Context) {
	rooms := 1
	if r := c.Query("rooms"); r != "" {
		n, err := strconv.Atoi(r)
		if err != nil {
			writeProblem(c, Invalid(FieldError{"rooms", "must be 1 to 1000"}))
			return
		}
		rooms = n
	}
	pv, err := h.hotels.PreviewWalk(c.Request.Context(), venues.Admin("", ""), pathProperty(c).PropertyID, c.Query("night"), rooms)
	h.problems.answer(c, pv, err)
}
