package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
)

// parseTime accepts RFC 3339 or a date; a date as the end of a range means
// the whole day.
func parseTime(v string, end bool) (*time.Time, bool) {
	if v == "" {
		return nil, true
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return &t, true
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return nil, false
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return &t, true
}

// browseHandlers serve the browse plane: search, the event page, seat-map
// snapshots and the live seat-map socket. No login, never the buy plane's
// pool.
type browseHandlers struct {
	browse   *Browse
	problems problems
}

func (h *browseHandlers) search(c *gin.Context) {
	q := catalog.Query{Text: c.Query("q"), City: strings.TrimSpace(c.Query("city")),
		Genre: strings.TrimSpace(c.Query("genre")), Cursor: c.Query("cursor"), Series: strings.TrimSpace(c.Query("series"))}
	var errs []FieldError
	var ok bool
	if q.From, ok = parseTime(c.Query("from"), false); !ok {
		errs = append(errs, FieldError{"from", "RFC 3339 time or YYYY-MM-DD"})
	}
	if q.To, ok = parseTime(c.Query("to"), true); !ok {
		errs = append(errs, FieldError{"to", "RFC 3339 time or YYYY-MM-DD"})
	}
	var bad *FieldError
	if q.Limit, bad = countParam("limit", c.Query("limit"), q.Limit, 100, "1 to 100"); bad != nil {
		errs = append(errs, *bad)
	}
	for _, f := range []struct{ name, v string }{{"q", q.Text}, {"city", q.City}, {"genre", q.Genre}, {"cursor", q.Cursor}} {
		switch {
		case len(f.v) > 200:
			errs = append(errs, FieldError{f.name, "at most 200 characters"})
		case !storableText(f.v):
			errs = append(errs, FieldError{f.name, "must be UTF-8 text without NUL"})
		}
	}
	if len(errs) > 0 {
		writeProblem(c, Invalid(errs...))
		return
	}
	page, err := h.browse.Catalog.Search(c.Request.Context(), q)
	h.problems.answer(c, page, err)
}

func (h *browseHandlers) suggest(c *gin.Context) {
	q := c.Query("q")
	if len(q) > 100 || !storableText(q) {
		writeProblem(c, Invalid(FieldError{"q", "at most 100 characters of UTF-8 text without NUL"}))
		return
	}
	out, err := h.browse.Catalog.Suggest(c.Request.Context(), q)
	h.problems.answer(c, gin.H{"suggestions": out}, err)
}

func (h *browseHandlers) event(c *gin.Context) {
	id, ok := pathID(c, "event_id", "event")
	if !ok {
		return
	}
	d, err := h.browse.Catalog.Event(c.Request.Context(), id)
	h.problems.answer(c, d, err)
}

// etagMatches implements If-None-Match for strong validators.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

func (h *browseHandlers) seats(f seatmap.Format) gin.HandlerFunc {
	contentType := "application/json"
	if f == seatmap.FormatBitmap {
		contentType = "application/octet-stream"
	}
	return func(c *gin.Context) {
		eventID, sectionID := c.Param("event_id"), c.Param("section_id")
		if !idPattern.MatchString(eventID) || !idPattern.MatchString(sectionID) {
			writeProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such event or section"))
			return
		}
		e, err := h.browse.Cache.Get(c.Request.Context(), eventID, sectionID, f)
		if err != nil {
			h.problems.fail(c, err)
			return
		}
		h := c.Writer.Header()
		h.Set("ETag", e.ETag)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Seat-Count", strconv.Itoa(e.SeatCount))
		h.Set("X-Seat-Order", store.SeatOrder)
		if inm := c.GetHeader("If-None-Match"); inm != "" && etagMatches(inm, e.ETag) {
			c.Status(http.StatusNotModified)
			return
		}
		c.Data(http.StatusOK, contentType, e.Body)
	}
}

func (h *browseHandlers) live(c *gin.Context) {
	eventID, ok := pathID(c, "event_id", "event")
	if !ok {
		return
	}
	// The event must exist before the upgrade; its sections are the only
	// ones a subscription may name.
	known, err := h.browse.Catalog.Sections(c.Request.Context(), eventID)
	if errors.Is(err, store.ErrNotFound) {
		writeProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such event"))
		return
	}
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	opts := h.browse.Live
	opts.KnownSection = known
	if d := h.browse.Dials; d != nil {
		opts.Pushing = func() bool { return d.For(eventID).LivePush }
	}
	h.browse.Hub.ServeLive(c.Writer, c.Request, eventID, opts)
}
