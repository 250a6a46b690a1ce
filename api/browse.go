package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
)

// Browse is the browse plane's HTTP surface: search, the event page, seat-map
// snapshots (JSON and bitmap, with ETags) and the live invalidation stream.
// It needs no login and never touches the buy plane's pool.
type Browse struct {
	Catalog *catalog.Service
	Cache   *seatmap.Cache
	Hub     *seatmap.Hub
	Live    seatmap.LiveOptions
	Log     *slog.Logger
}

// Routes adds the browse routes; use it as an api.Server Extra.
func (b *Browse) Routes(r *gin.Engine, _ gin.HandlerFunc) {
	r.GET("/v1/events", b.search)
	r.GET("/v1/events/suggest", b.suggest)
	r.GET("/v1/events/:event_id", b.event)
	r.GET("/v1/events/:event_id/sections/:section_id/seats", b.seats(seatmap.FormatJSON))
	r.GET("/v1/events/:event_id/sections/:section_id/seats.bin", b.seats(seatmap.FormatBitmap))
	r.GET("/v1/events/:event_id/live", b.live)
}

func browseProblem(c *gin.Context, p *Problem) {
	p.Instance = c.Request.URL.Path
	p.Write(c.Writer)
	c.Abort()
}

func (b *Browse) failed(c *gin.Context, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		browseProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such event or section"))
	case errors.Is(err, catalog.ErrBadCursor):
		browseProblem(c, Invalid(FieldError{"cursor", "not a cursor of this query; start again without it"}))
	case errors.Is(err, context.Canceled):
		c.Abort() // the client left
	default:
		if b.Log != nil && !errors.Is(err, seatmap.ErrUnavailable) {
			b.Log.Error("browse request failed", "path", c.FullPath(), "err", err)
		}
		browseProblem(c, NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "busy, retry").RetryAfter(time.Second))
	}
}

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

func (b *Browse) search(c *gin.Context) {
	q := catalog.Query{Text: c.Query("q"), City: strings.TrimSpace(c.Query("city")),
		Genre: strings.TrimSpace(c.Query("genre")), Cursor: c.Query("cursor")}
	var errs []FieldError
	var ok bool
	if q.From, ok = parseTime(c.Query("from"), false); !ok {
		errs = append(errs, FieldError{"from", "RFC 3339 time or YYYY-MM-DD"})
	}
	if q.To, ok = parseTime(c.Query("to"), true); !ok {
		errs = append(errs, FieldError{"to", "RFC 3339 time or YYYY-MM-DD"})
	}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			errs = append(errs, FieldError{"limit", "1 to 100"})
		}
		q.Limit = n
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
		browseProblem(c, Invalid(errs...))
		return
	}
	page, err := b.Catalog.Search(c.Request.Context(), q)
	if err != nil {
		b.failed(c, err)
		return
	}
	c.JSON(http.StatusOK, page)
}

func (b *Browse) suggest(c *gin.Context) {
	q := c.Query("q")
	if len(q) > 100 || !storableText(q) {
		browseProblem(c, Invalid(FieldError{"q", "at most 100 characters of UTF-8 text without NUL"}))
		return
	}
	out, err := b.Catalog.Suggest(c.Request.Context(), q)
	if err != nil {
		b.failed(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"suggestions": out})
}

func (b *Browse) event(c *gin.Context) {
	id := c.Param("event_id")
	if !idPattern.MatchString(id) {
		browseProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such event"))
		return
	}
	d, err := b.Catalog.Event(c.Request.Context(), id)
	if err != nil {
		b.failed(c, err)
		return
	}
	c.JSON(http.StatusOK, d)
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

func (b *Browse) seats(f seatmap.Format) gin.HandlerFunc {
	contentType := "application/json"
	if f == seatmap.FormatBitmap {
		contentType = "application/octet-stream"
	}
	return func(c *gin.Context) {
		eventID, sectionID := c.Param("event_id"), c.Param("section_id")
		if !idPattern.MatchString(eventID) || !idPattern.MatchString(sectionID) {
			browseProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such event or section"))
			return
		}
		e, err := b.Cache.Get(c.Request.Context(), eventID, sectionID, f)
		if err != nil {
			b.failed(c, err)
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

func (b *Browse) live(c *gin.Context) {
	eventID := c.Param("event_id")
	if !idPattern.MatchString(eventID) {
		browseProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such event"))
		return
	}
	b.Hub.ServeLive(c.Writer, c.Request, eventID, b.Live)
}
