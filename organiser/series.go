package organiser

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/encore-tickets/encore/venues"
)

// MaxSeriesDates bounds one series request.
const MaxSeriesDates = 100

// SeriesFields are POST /v1/admin/series: the event fields every date
// shares (venue, prices or ticket types, fee, limits, resale...), and the
// dates, each with its start and on-sale time (an off-sale time too,
// optionally). Publish publishes every date at once.
type SeriesFields struct {
	EventFields
	Dates   []SeriesDate `json:"dates"`
	Publish bool         `json:"publish,omitempty"`
}

// SeriesDate is one date of a series.
type SeriesDate struct {
	StartsAt  *time.Time `json:"starts_at"`
	OnsaleAt  *time.Time `json:"onsale_at"`
	OffsaleAt *time.Time `json:"offsale_at,omitempty"`
}

// Series is a created series and its events, by date.
type Series struct {
	SeriesID string  `json:"series_id"`
	Title    string  `json:"title"`
	Events   []Event `json:"events"`
}

// CreateSeries creates one event per date, sharing f's fields, linked by
// one series ID. Every date is checked before any event is written, so a
// bad date (named dates[i].field) leaves nothing behind.
func (s *Service) CreateSeries(ctx context.Context, scope venues.Scope, f SeriesFields) (Series, error) {
	if err := scope.Check(); err != nil {
		return Series{}, err
	}
	var e venues.FieldErrors
	switch {
	case len(f.Dates) == 0:
		e.Add("dates", "at least one date")
	case len(f.Dates) > MaxSeriesDates:
		e.Add("dates", "at most %d dates at once", MaxSeriesDates)
	}
	if f.Title == nil || strings.TrimSpace(*f.Title) == "" {
		e.Add("title", "required")
	}
	for i, d := range f.Dates {
		if d.StartsAt == nil {
			e.Add(fmt.Sprintf("dates[%d].starts_at", i), "required")
		}
		if d.OnsaleAt == nil {
			e.Add(fmt.Sprintf("dates[%d].onsale_at", i), "required")
		}
		if d.StartsAt != nil && d.OnsaleAt != nil && !d.OnsaleAt.Before(*d.StartsAt) {
			e.Add(fmt.Sprintf("dates[%d].onsale_at", i), "must be before starts_at")
		}
	}
	if len(e) > 0 {
		return Series{}, e.Err()
	}
	venue, err := s.store.Catalogue.Venue(ctx, deref(f.VenueID), scope.Filter())
	if err != nil {
		return Series{}, venues.Invalid("venue_id", "no such venue of this organisation")
	}
	out := Series{SeriesID: venues.NewID("ser"), Title: strings.TrimSpace(*f.Title)}
	// Each date's fields are checked as its event would be, before any is
	// written.
	ids := make([]string, len(f.Dates))
	for i, d := range f.Dates {
		ef := f.dateFields(d)
		if err := s.checkCreate(ctx, scope, ef); err != nil {
			return Series{}, prefixed(err, fmt.Sprintf("dates[%d].", i))
		}
		ids[i] = venues.NewID("evt")
	}
	if err := s.store.Catalogue.CreateSeries(ctx, out.SeriesID, venue.OrgID, out.Title); err != nil {
		return Series{}, err
	}
	for i, d := range f.Dates {
		ev, err := s.createInSeries(ctx, scope, ids[i], f.dateFields(d), out.SeriesID)
		if err != nil {
			return out, err
		}
		if f.Publish {
			if ev, err = s.Publish(ctx, scope, ev.EventID); err != nil {
				return out, err
			}
		}
		out.Events = append(out.Events, ev)
	}
	return out, nil
}

// dateFields are the series' shared fields with one date's times.
func (f SeriesFields) dateFields(d SeriesDate) EventFields {
	ef := f.EventFields
	ef.StartsAt, ef.OnsaleAt = d.StartsAt, d.OnsaleAt
	if d.OffsaleAt != nil {
		ef.OffsaleAt = d.OffsaleAt
	}
	return ef
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// prefixed puts p before every field a validation error names.
func prefixed(err error, p string) error {
	var ve *venues.ValidationError
	if errors.As(err, &ve) {
		out := &venues.ValidationError{}
		for _, fe := range ve.Errors {
			out.Errors = append(out.Errors, venues.FieldError{Field: p + fe.Field, Message: fe.Message})
		}
		return out
	}
	return err
}
