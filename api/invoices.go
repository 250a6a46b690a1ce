package api

import (
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/encore-tickets/encore/invoices"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// invoiceHandlers serve a booking's invoice and credit note as PDF.
type invoiceHandlers struct {
	invoices *invoices.Service
	problems problems
}

// invoicePDF is GET /v1/bookings/{id}/invoice.pdf (kind INVOICE) and
// /credit-note.pdf (kind CREDIT_NOTE): for the fan who booked, support and
// admins, and the organiser of the event's organisation. Anyone else, like
// a missing booking, is 404; a booking without one is 404 no-invoice.
func (h *invoiceHandlers) invoicePDF(kind store.InvoiceKind) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := uuid.Parse(c.Param("id"))
		if err != nil {
			writeProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such booking"))
			return
		}
		pdf, v, err := h.invoices.PDFFor(c.Request.Context(), identity(c), id, kind)
		if err != nil {
			h.problems.fail(c, err)
			return
		}
		c.Header("Content-Disposition", `inline; filename="`+v.Number+`.pdf"`)
		c.Header("Cache-Control", "private, no-store")
		c.Data(http.StatusOK, "application/pdf", pdf)
	}
}

// createSeries is POST /v1/admin/series: one event per date sharing the
// series' fields, linked by series_id; 201 {"series_id","title","events"}.
func (h *adminHandlers) createSeries(c *gin.Context) {
	if orgless(c) {
		return
	}
	f, err := organiser.DecodeSeriesFields(c.Request.Body)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	if f.VenueID != nil {
		if v, err := h.venues.Get(c.Request.Context(), venues.Admin("", ""), *f.VenueID); err == nil && !identity(c).CanManage(v.OrgID) {
			forbidden(c, "the venue belongs to another organisation")
			return
		}
	}
	sr, err := h.events.CreateSeries(c.Request.Context(), scope(c), f)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	for _, ev := range sr.Events {
		h.audit.record(c, ev.OrgID, "event.create", ev.EventID, "series "+sr.SeriesID, nil, ev)
	}
	c.JSON(http.StatusCreated, sr)
}

// attendees is GET /v1/admin/events/{id}/attendees (?format=csv): every
// valid ticket with the answers given for it.
func (h *adminHandlers) attendees(c *gin.Context) {
	a, err := h.events.Attendees(c.Request.Context(), venues.Admin("", identity(c).UserID), pathEvent(c).EventID)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	answerFormat(c, a, "attendees-"+a.EventID+".csv", a.WriteCSV)
}

// answerFormat answers v as JSON or, with ?format=csv, as the CSV file
// filename that writeCSV writes (attachCSV); another format is refused.
func answerFormat(c *gin.Context, v any, filename string, writeCSV func(io.Writer) error) {
	switch c.Query("format") {
	case "", "json":
		c.JSON(http.StatusOK, v)
	case "csv":
		attachCSV(c, filename, writeCSV)
	default:
		writeProblem(c, Invalid(FieldError{"format", "json or csv"}))
	}
}

// attachCSV answers 200 with a CSV file to download as filename, written
// by write once the headers are out (a failure then can only cut the file
// short, so the reports read everything before they call it).
func attachCSV(c *gin.Context, filename string, write func(io.Writer) error) {
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="`+filename+`"`)
	c.Status(http.StatusOK)
	_ = write(c.Writer)
}

// eraseMe is DELETE /v1/me: the caller's personal data erased (answers,
// the email of their bookings, waitlist places and transfers); bookings,
// tickets and invoices stay, as accounting law requires.
func (h *meHandlers) eraseMe(c *gin.Context) {
	e, err := h.bookings.Erase(c.Request.Context(), identity(c))
	h.problems.answer(c, gin.H{"erased": e}, err)
}

// orgSettings is GET /v1/admin/org: the caller's organisation's legal and
// tax settings (an admin names one with ?org=).
func (h *adminHandlers) orgSettings(c *gin.Context) {
	if orgless(c) {
		return
	}
	o, err := h.events.OrgSettings(c.Request.Context(), scope(c))
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	c.JSON(http.StatusOK, o)
}

// patchOrgSettings is PATCH /v1/admin/org {"legal_name","address",
// "vat_id","tax_rate_bp","prices_include_tax","invoice_prefix"}: only the
// fields sent change; audited.
func (h *adminHandlers) patchOrgSettings(c *gin.Context) {
	if orgless(c) {
		return
	}
	var f organiser.OrgFields
	if err := decodeJSON(c, &f); err != nil {
		writeProblem(c, Invalid(*err))
		return
	}
	sc := scope(c)
	before, err := h.events.OrgSettings(c.Request.Context(), sc)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	o, err := h.events.SaveOrgSettings(c.Request.Context(), sc, f)
	if err != nil {
		h.failAdmin(c, err)
		return
	}
	h.audit.record(c, o.OrgID, "org.settings", o.OrgID, "", before, o)
	c.JSON(http.StatusOK, o)
}
