// Package organiser holds an organiser's events: a draft created from one
// of the organiser's venues (the venue's layout copied into the event's
// sections and seats, each seat priced by its category), changed while a
// draft, published to fans, and seats blocked or unblocked with a reason.
// The CLI calls it, and so do the organiser routes of the HTTP edge: every
// method takes the scope it acts for and fails with the typed errors of
// package venues (*venues.ValidationError, venues.ErrConflict) or
// store.ErrNotFound.
package organiser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
)

// Defaults of a new event's optional fields.
const (
	DefaultPerCustomerLimit = 6
	DefaultHoldTTLSeconds   = 600
	// DefaultCancellationWindow is how long before the show a paid booking
	// can no longer be cancelled, when the event does not say.
	DefaultCancellationWindow = 48 * time.Hour
	// MaxSeatsPerChange bounds one block or unblock request.
	MaxSeatsPerChange = 1000
)

// EventFields are an event's fields as the organiser sends them: the body of
// POST /v1/admin/events (venue_id, title, starts_at, onsale_at, currency and
// prices required) and of PATCH /v1/admin/events/{id} (only the fields to
// change). Changing a published event is limited to the fields in
// AlwaysEditable.
type EventFields struct {
	VenueID              *string                `json:"venue_id,omitempty"`
	Title                *string                `json:"title,omitempty"`
	Artist               *string                `json:"artist,omitempty"`
	Genre                *string                `json:"genre,omitempty"`
	Description          *string                `json:"description,omitempty"`
	StartsAt             *time.Time             `json:"starts_at,omitempty"`
	OnsaleAt             *time.Time             `json:"onsale_at,omitempty"`
	OffsaleAt            *time.Time             `json:"offsale_at,omitempty"`
	CancellationDeadline *time.Time             `json:"cancellation_deadline,omitempty"`
	Currency             *string                `json:"currency,omitempty"`
	Metered              *bool                  `json:"metered,omitempty"`
	PerCustomerLimit     *int                   `json:"per_customer_limit,omitempty"`
	HoldTTLSeconds       *int                   `json:"hold_ttl_seconds,omitempty"`
	Prices               map[string]money.Money `json:"prices,omitempty"`
	Resale               *ResaleFields          `json:"resale,omitempty"`
	Reentry              *bool                  `json:"reentry,omitempty"`
	// TicketTypes replace the event's types (Adult, Child...): the first
	// type's prices are the event's prices (prices may then be left out).
	TicketTypes *[]TicketTypeFields `json:"ticket_types,omitempty"`
	// ServiceFee is charged per ticket, shown apart from the price.
	ServiceFee *money.Money `json:"service_fee,omitempty"`
	// Questions replace the questions asked at checkout.
	Questions *[]store.Question `json:"questions,omitempty"`
}

// TicketTypeFields are one ticket type as the organiser sends it.
type TicketTypeFields struct {
	ID          string                 `json:"id"`
	Name        string                 `json:"name"`
	Prices      map[string]money.Money `json:"prices"`
	MaxPerOrder int                    `json:"max_per_order,omitempty"`
	Requires    string                 `json:"requires,omitempty"`
}

// TicketTypeView is a ticket type as the organiser and fans read it.
type TicketTypeView struct {
	ID          string                 `json:"id"`
	Name        string                 `json:"name"`
	Prices      map[string]money.Money `json:"prices"`
	MaxPerOrder int                    `json:"max_per_order,omitempty"`
	Requires    string                 `json:"requires,omitempty"`
}

// TicketTypesOf shows stored types with their prices in currency.
func TicketTypesOf(ts []store.TicketType, currency string) []TicketTypeView {
	out := make([]TicketTypeView, len(ts))
	for i, t := range ts {
		v := TicketTypeView{ID: t.ID, Name: t.Name, MaxPerOrder: t.MaxPerOrder, Requires: t.Requires, Prices: map[string]money.Money{}}
		for c, a := range t.Prices {
			v.Prices[c] = money.Money{Amount: a, Currency: currency}
		}
		out[i] = v
	}
	return out
}

// ResaleFields are the event's resale policy as the organiser sends it
// (only the fields to change on PATCH). Percentages may have decimals
// (basis points are kept).
type ResaleFields struct {
	Enabled                  *bool    `json:"enabled,omitempty"`
	MaxPricePercent          *float64 `json:"max_price_percent,omitempty"`
	FeePercent               *float64 `json:"fee_percent,omitempty"`
	ClosesMinutesBeforeStart *int     `json:"closes_minutes_before_start,omitempty"`
}

// Resale is an event's resale policy as the organiser and fans read it.
type Resale struct {
	Enabled                  bool    `json:"enabled"`
	MaxPricePercent          float64 `json:"max_price_percent"`
	FeePercent               float64 `json:"fee_percent"`
	ClosesMinutesBeforeStart int     `json:"closes_minutes_before_start"`
}

// ResaleOf is a stored policy as the API shows it.
func ResaleOf(p store.ResalePolicy) Resale {
	return Resale{Enabled: p.Enabled, MaxPricePercent: float64(p.MaxPriceBp) / 100, FeePercent: float64(p.FeeBp) / 100,
		ClosesMinutesBeforeStart: p.ClosesMinutes}
}

// AlwaysEditable are the fields a published event may still change: what
// it is called and says, how long its sale runs, and the terms of holds not
// yet taken (a hold keeps the terms it was taken under). Everything a fan's
// purchase depends on (the venue and so the seats, the date, the on-sale
// time, prices and currency, metering and the cancellation deadline) is
// fixed once published.
var AlwaysEditable = []string{"title", "artist", "genre", "description", "offsale_at", "per_customer_limit", "hold_ttl_seconds", "resale", "reentry",
	"questions"}

// typeIDPattern is a ticket type's ID: what holds name it by.
var typeIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// DecodeEventFields reads EventFields from JSON; a malformed body or a
// value of the wrong type is a *venues.ValidationError naming the field.
func DecodeEventFields(r io.Reader) (EventFields, error) {
	var f EventFields
	return f, decodeFields(r, &f)
}

// DecodeSeriesFields reads SeriesFields as DecodeEventFields reads an
// event's.
func DecodeSeriesFields(r io.Reader) (SeriesFields, error) {
	var f SeriesFields
	return f, decodeFields(r, &f)
}

// decodeFields reads at most 1 MiB of JSON into v; a malformed body or a
// value of the wrong type is a *venues.ValidationError naming the field.
func decodeFields(r io.Reader, v any) error {
	body, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return err
	}
	if len(body) > 1<<20 {
		return venues.Invalid("body", "larger than 1 MiB")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var pe *time.ParseError
		switch {
		case errors.As(err, &te):
			return venues.Invalid(te.Field, "must be a JSON %s", te.Type.Kind())
		case errors.As(err, &pe):
			return venues.Invalid("body", "a time is RFC 3339, such as 2027-06-01T20:00:00+02:00: %v", pe)
		}
		return venues.Invalid("body", "not valid JSON: %v", err)
	}
	return nil
}

// Event is an event as its organiser sees it. Status is DRAFT, PUBLISHED
// (before the on-sale time), ON_SALE, OFF_SALE or CANCELLED.
type Event struct {
	EventID              string                 `json:"event_id"`
	OrgID                string                 `json:"org_id"`
	VenueID              string                 `json:"venue_id"`
	Title                string                 `json:"title"`
	Artist               string                 `json:"artist"`
	Genre                string                 `json:"genre"`
	Description          string                 `json:"description"`
	Status               vocab.EventStatus      `json:"status"`
	StartsAt             time.Time              `json:"starts_at"`
	OnsaleAt             time.Time              `json:"onsale_at"`
	OffsaleAt            *time.Time             `json:"offsale_at"`
	CancellationDeadline time.Time              `json:"cancellation_deadline"`
	Currency             string                 `json:"currency"`
	Metered              bool                   `json:"metered"`
	PerCustomerLimit     int                    `json:"per_customer_limit"`
	HoldTTLSeconds       int                    `json:"hold_ttl_seconds"`
	Prices               map[string]money.Money `json:"prices"`
	Sections             int                    `json:"sections"`
	Seats                int                    `json:"seats"`
	GeneralCapacity      int                    `json:"general_capacity"`
	CreatedAt            time.Time              `json:"created_at"`
	PublishedAt          *time.Time             `json:"published_at"`
	// Timezone is the venue's IANA zone: times are shown and typed on its
	// clocks.
	Timezone string `json:"timezone"`
	Resale   Resale `json:"resale"`
	// Reentry lets a ticket scanned out at the door come back in (the
	// gates read it from the manifest).
	Reentry bool `json:"reentry"`
	// TicketTypes in order (empty: one type at Prices); ServiceFee per
	// ticket; SeriesID the series the event is a date of.
	TicketTypes []TicketTypeView `json:"ticket_types"`
	ServiceFee  money.Money      `json:"service_fee"`
	SeriesID    string           `json:"series_id,omitempty"`
	// Questions are asked at checkout (per ticket or per order).
	Questions []store.Question `json:"questions"`
}

// Service runs the organiser's event lifecycle over the buy plane's store.
type Service struct {
	store *store.Store
	// Now is the clock the derived status reads (tests may set it).
	Now func() time.Time
}

// NewService builds the service.
func NewService(st *store.Store) *Service { return &Service{store: st, Now: time.Now} }

func (s *Service) view(e store.OrganiserEvent) Event {
	out := Event{EventID: e.ID, OrgID: e.OrgID, VenueID: e.VenueID, Title: e.Title, Artist: e.Artist, Genre: e.Genre,
		Description: e.Description, Status: e.Status.Phase(s.Now(), e.OnsaleAt, e.OffsaleAt),
		StartsAt: e.StartsAt.UTC(), OnsaleAt: e.OnsaleAt.UTC(), CancellationDeadline: e.CancellationDeadline.UTC(),
		Currency: e.Currency, Metered: e.Metered, PerCustomerLimit: e.PerCustomerLimit, HoldTTLSeconds: e.HoldTTLSeconds,
		Prices: map[string]money.Money{}, Sections: e.Sections, Seats: e.Seats, GeneralCapacity: e.GeneralCapacity,
		CreatedAt: e.CreatedAt.UTC(), Timezone: e.Timezone, Resale: ResaleOf(e.Resale), Reentry: e.Reentry,
		TicketTypes: TicketTypesOf(e.TicketTypes, e.Currency), ServiceFee: money.Money{Amount: e.ServiceFee, Currency: e.Currency},
		SeriesID: e.SeriesID, Questions: e.Questions}
	if out.Questions == nil {
		out.Questions = []store.Question{}
	}
	if !e.OffsaleAt.IsZero() {
		t := e.OffsaleAt.UTC()
		out.OffsaleAt = &t
	}
	if !e.PublishedAt.IsZero() {
		t := e.PublishedAt.UTC()
		out.PublishedAt = &t
	}
	for c, a := range e.Prices {
		out.Prices[c] = money.Money{Amount: a, Currency: e.Currency}
	}
	return out
}

// Create writes a DRAFT event from one of the scope's venues, copying its
// layout with each seat priced by its category. Fans do not see it until
// Publish.
func (s *Service) Create(ctx context.Context, scope venues.Scope, f EventFields) (Event, error) {
	return s.CreateAs(ctx, scope, venues.NewID("evt"), f)
}

// CreateAs is Create under a chosen ID (the demo's fixed events);
// store.ErrEventExists when it is taken.
func (s *Service) CreateAs(ctx context.Context, scope venues.Scope, id string, f EventFields) (Event, error) {
	return s.createInSeries(ctx, scope, id, f, "")
}

// createInSeries is CreateAs for a date of series (none when "").
func (s *Service) createInSeries(ctx context.Context, scope venues.Scope, id string, f EventFields, series string) (Event, error) {
	ev, err := s.draft(ctx, scope, id, f)
	if err != nil {
		return Event{}, err
	}
	ev.SeriesID = series
	if err := s.store.Catalogue.CreateDraftEvent(ctx, ev); err != nil {
		return Event{}, err
	}
	return s.Get(ctx, scope, id)
}

// checkCreate says whether f would create an event, writing nothing.
func (s *Service) checkCreate(ctx context.Context, scope venues.Scope, f EventFields) error {
	_, err := s.draft(ctx, scope, "evt_check", f)
	return err
}

// draft is the event f creates, checked, not yet written.
func (s *Service) draft(ctx context.Context, scope venues.Scope, id string, f EventFields) (store.OrganiserEvent, error) {
	if err := scope.Check(); err != nil {
		return store.OrganiserEvent{}, err
	}
	var e venues.FieldErrors
	for _, req := range []struct {
		name string
		set  bool
	}{{"venue_id", f.VenueID != nil}, {"title", f.Title != nil}, {"starts_at", f.StartsAt != nil},
		{"onsale_at", f.OnsaleAt != nil}, {"currency", f.Currency != nil},
		{"prices", len(f.Prices) > 0 || (f.TicketTypes != nil && len(*f.TicketTypes) > 0)}} {
		if !req.set {
			e.Add(req.name, "required")
		}
	}
	if len(e) > 0 {
		return store.OrganiserEvent{}, e.Err()
	}
	venue, err := s.store.Catalogue.Venue(ctx, *f.VenueID, scope.Filter())
	if errors.Is(err, store.ErrNotFound) {
		return store.OrganiserEvent{}, venues.Invalid("venue_id", "no such venue of this organisation")
	}
	if err != nil {
		return store.OrganiserEvent{}, err
	}
	ev := store.OrganiserEvent{ID: id, OrgID: venue.OrgID, Status: vocab.EventDraft,
		PerCustomerLimit: DefaultPerCustomerLimit, HoldTTLSeconds: DefaultHoldTTLSeconds, Prices: map[string]int64{},
		Resale: store.DefaultResalePolicy}
	apply(&ev, f, &e)
	if f.OffsaleAt == nil {
		ev.OffsaleAt = ev.StartsAt // the sale ends when the show starts
	}
	if f.CancellationDeadline == nil {
		ev.CancellationDeadline = ev.StartsAt.Add(-DefaultCancellationWindow)
	}
	check(&ev, venue.Categories, &e)
	if len(e) > 0 {
		return store.OrganiserEvent{}, e.Err()
	}
	return ev, nil
}

// Get reads an event of the scope's organisation: store.ErrNotFound
// otherwise.
func (s *Service) Get(ctx context.Context, scope venues.Scope, id string) (Event, error) {
	if err := scope.Check(); err != nil {
		return Event{}, err
	}
	ev, err := s.store.Catalogue.OrganiserEvent(ctx, id, scope.Filter())
	if err != nil {
		return Event{}, err
	}
	return s.view(ev), nil
}

// Patch changes the fields f sets. A DRAFT may change any; a published
// event only AlwaysEditable (anything else is venues.ErrConflict, naming the
// fields); a cancelled event nothing.
func (s *Service) Patch(ctx context.Context, scope venues.Scope, id string, f EventFields) (Event, error) {
	if err := scope.Check(); err != nil {
		return Event{}, err
	}
	current, err := s.store.Catalogue.OrganiserEvent(ctx, id, scope.Filter())
	if err != nil {
		return Event{}, err
	}
	venueID := current.VenueID
	if f.VenueID != nil {
		venueID = *f.VenueID
	}
	venue, err := s.store.Catalogue.Venue(ctx, venueID, scope.Filter())
	if errors.Is(err, store.ErrNotFound) {
		return Event{}, venues.Invalid("venue_id", "no such venue of this organisation")
	}
	if err != nil {
		return Event{}, err
	}
	if venue.OrgID != current.OrgID {
		return Event{}, venues.Invalid("venue_id", "the venue belongs to another organisation than the event")
	}
	updated, err := s.store.Catalogue.UpdateEvent(ctx, id, scope.Filter(), func(ev *store.OrganiserEvent) error {
		before := *ev
		var e venues.FieldErrors
		apply(ev, f, &e)
		if len(e) > 0 {
			return e.Err()
		}
		if ev.Status != vocab.EventDraft {
			if fixed := changedFixed(before, *ev); len(fixed) > 0 || ev.Status == vocab.EventCancelled {
				return fmt.Errorf("%w: the event is %s; only %s may change (asked: %s)", venues.ErrConflict,
					ev.Status, strings.Join(AlwaysEditable, ", "), strings.Join(fixed, ", "))
			}
		}
		check(ev, venue.Categories, &e)
		return e.Err()
	})
	if err != nil {
		return Event{}, err
	}
	return s.view(updated), nil
}

// Publish makes a DRAFT visible to fans: listed, its page and seat map
// shown, on sale from its on-sale time until its off-sale time. Publishing a
// published event changes nothing; a cancelled one is venues.ErrConflict.
func (s *Service) Publish(ctx context.Context, scope venues.Scope, id string) (Event, error) {
	if err := scope.Check(); err != nil {
		return Event{}, err
	}
	updated, err := s.store.Catalogue.UpdateEvent(ctx, id, scope.Filter(), func(ev *store.OrganiserEvent) error {
		switch ev.Status {
		case vocab.EventCancelled:
			return fmt.Errorf("%w: the event is cancelled", venues.ErrConflict)
		case vocab.EventPublished:
			return nil
		}
		if ev.Seats+ev.GeneralCapacity == 0 {
			return fmt.Errorf("%w: the event has nothing to sell", venues.ErrConflict)
		}
		ev.Status = vocab.EventPublished
		return nil
	})
	if err != nil {
		return Event{}, err
	}
	return s.view(updated), nil
}

// SeatChange is the body of POST .../seats/block and .../seats/unblock.
type SeatChange struct {
	SeatIDs []string `json:"seat_ids"`
	Reason  string   `json:"reason"`
}

// SeatChanged is the answer: the seats whose status changed (seats already
// in the asked state are logged and left).
type SeatChanged struct {
	EventID string   `json:"event_id"`
	Changed []string `json:"changed"`
}

// Block makes seats BLOCKED: never held or sold until unblocked. Held or
// sold seats refuse the request (venues.ErrConflict, wrapping a
// *store.SeatConflictError); every seat is logged with the reason.
func (s *Service) Block(ctx context.Context, scope venues.Scope, eventID string, c SeatChange) (SeatChanged, error) {
	return s.setBlocked(ctx, scope, eventID, c, vocab.SeatBlock)
}

// Unblock makes BLOCKED seats AVAILABLE again. A held or sold seat refuses
// the request: its buyer owns it.
func (s *Service) Unblock(ctx context.Context, scope venues.Scope, eventID string, c SeatChange) (SeatChanged, error) {
	return s.setBlocked(ctx, scope, eventID, c, vocab.SeatUnblock)
}

func (s *Service) setBlocked(ctx context.Context, scope venues.Scope, eventID string, c SeatChange, action vocab.SeatAction) (SeatChanged, error) {
	if err := scope.Check(); err != nil {
		return SeatChanged{}, err
	}
	var e venues.FieldErrors
	ids := slices.Compact(slices.Sorted(slices.Values(c.SeatIDs)))
	switch {
	case len(ids) == 0:
		e.Add("seat_ids", "at least one seat")
	case len(ids) > MaxSeatsPerChange:
		e.Add("seat_ids", "at most %d seats at once", MaxSeatsPerChange)
	case slices.Contains(ids, ""):
		e.Add("seat_ids", "a seat ID is not empty")
	}
	reason := strings.TrimSpace(c.Reason)
	switch {
	case reason == "":
		e.Add("reason", "required: why the seats change")
	case len(reason) > 500:
		e.Add("reason", "at most 500 characters")
	}
	if len(e) > 0 {
		return SeatChanged{}, e.Err()
	}
	actor := scope.Actor
	if actor == "" {
		actor = "unknown"
	}
	changed, err := s.store.Catalogue.SetSeatsBlocked(ctx, eventID, scope.Filter(), ids, action, reason, actor)
	var conflict *store.SeatConflictError
	var inv *store.InvalidError
	switch {
	case errors.As(err, &conflict):
		return SeatChanged{}, fmt.Errorf("%w: %w", venues.ErrConflict, err)
	case errors.As(err, &inv):
		return SeatChanged{}, venues.Invalid(inv.Field, "%s", inv.Message)
	case err != nil:
		return SeatChanged{}, err
	}
	if changed == nil {
		changed = []string{}
	}
	return SeatChanged{EventID: eventID, Changed: changed}, nil
}

// apply copies the fields f sets onto ev, noting malformed ones.
func apply(ev *store.OrganiserEvent, f EventFields, e *venues.FieldErrors) {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	set(&ev.VenueID, f.VenueID)
	set(&ev.Title, f.Title)
	set(&ev.Artist, f.Artist)
	set(&ev.Genre, f.Genre)
	set(&ev.Description, f.Description)
	set(&ev.Currency, f.Currency)
	for _, t := range []struct {
		dst *time.Time
		src *time.Time
	}{{&ev.StartsAt, f.StartsAt}, {&ev.OnsaleAt, f.OnsaleAt}, {&ev.OffsaleAt, f.OffsaleAt},
		{&ev.CancellationDeadline, f.CancellationDeadline}} {
		if t.src != nil {
			*t.dst = *t.src
		}
	}
	if f.Metered != nil {
		ev.Metered = *f.Metered
	}
	if f.PerCustomerLimit != nil {
		ev.PerCustomerLimit = *f.PerCustomerLimit
	}
	if f.HoldTTLSeconds != nil {
		ev.HoldTTLSeconds = *f.HoldTTLSeconds
	}
	if f.Reentry != nil {
		ev.Reentry = *f.Reentry
	}
	if r := f.Resale; r != nil {
		if r.Enabled != nil {
			ev.Resale.Enabled = *r.Enabled
		}
		for _, p := range []struct {
			name string
			dst  *int
			src  *float64
			max  float64
		}{{"resale.max_price_percent", &ev.Resale.MaxPriceBp, r.MaxPricePercent, 1000}, {"resale.fee_percent", &ev.Resale.FeeBp, r.FeePercent, 50}} {
			if p.src == nil {
				continue
			}
			if *p.src < 0 || *p.src > p.max || math.IsNaN(*p.src) {
				e.Add(p.name, "from 0 to %g", p.max)
				continue
			}
			*p.dst = int(math.Round(*p.src * 100))
		}
		if r.ClosesMinutesBeforeStart != nil {
			if m := *r.ClosesMinutesBeforeStart; m < 0 || m > 525600 {
				e.Add("resale.closes_minutes_before_start", "from 0 to 525600 (a year)")
			} else {
				ev.Resale.ClosesMinutes = m
			}
		}
	}
	if f.Prices != nil {
		ev.Prices = prices("prices", f.Prices, ev.Currency, e)
	}
	if f.ServiceFee != nil {
		if f.ServiceFee.Currency != ev.Currency {
			e.Add("service_fee.currency", "must be the event's currency %q", ev.Currency)
		}
		if f.ServiceFee.Amount < 0 || f.ServiceFee.Amount > maxPrice {
			e.Add("service_fee.amount", "from 0 to %d minor units", maxPrice)
		}
		ev.ServiceFee = f.ServiceFee.Amount
	}
	if f.Questions != nil {
		ev.Questions = questions(*f.Questions, e)
	}
	if f.TicketTypes != nil {
		ev.TicketTypes = nil
		seen := map[string]bool{}
		for i, t := range *f.TicketTypes {
			at := fmt.Sprintf("ticket_types[%d]", i)
			entryID(e, at, t.ID, "ticket type", "child", seen)
			name := strings.TrimSpace(t.Name)
			if name == "" || len(name) > 100 {
				e.Add(at+".name", "required, at most 100 characters")
			}
			if t.MaxPerOrder < 0 || t.MaxPerOrder > 100 {
				e.Add(at+".max_per_order", "from 1 to 100, or left out for the event's limit")
			}
			ev.TicketTypes = append(ev.TicketTypes, store.TicketType{ID: t.ID, Name: name, MaxPerOrder: t.MaxPerOrder,
				Requires: t.Requires, Prices: prices(at+".prices", t.Prices, ev.Currency, e)})
		}
		if len(ev.TicketTypes) > 0 {
			// The first type's prices are the event's: a hold naming no
			// type, and every seat's base price, follow them.
			if f.Prices != nil && !maps.Equal(ev.Prices, ev.TicketTypes[0].Prices) {
				e.Add("prices", "with ticket_types, the first type's prices are the event's: leave prices out or make them equal")
			}
			ev.Prices = maps.Clone(ev.TicketTypes[0].Prices)
		}
	}
}

// entryID checks the id of a list's entry at (a ticket type, a question):
// well formed, as example is, and not an earlier entry's (seen, which it
// joins).
func entryID(e *venues.FieldErrors, at, id, what, example string, seen map[string]bool) {
	switch {
	case !typeIDPattern.MatchString(id):
		e.Add(at+".id", "lower-case letters, digits, '_' and '-', at most 40, such as %s", example)
	case seen[id]:
		e.Add(at+".id", "duplicate %s %s", what, id)
	}
	seen[id] = true
}

// MaxQuestions bounds an event's questions.
const MaxQuestions = 20

// questions checks the questions an organiser sends.
func questions(in []store.Question, e *venues.FieldErrors) []store.Question {
	if len(in) > MaxQuestions {
		e.Add("questions", "at most %d", MaxQuestions)
		return nil
	}
	out := make([]store.Question, 0, len(in))
	seen := map[string]bool{}
	for i, q := range in {
		at := fmt.Sprintf("questions[%d]", i)
		q.Label = strings.TrimSpace(q.Label)
		entryID(e, at, q.ID, "question", "name", seen)
		if q.Label == "" || len(q.Label) > 200 {
			e.Add(at+".label", "required, at most 200 characters")
		}
		if !slices.Contains(vocab.QuestionKinds, q.Kind) {
			e.Add(at+".kind", "text, email, choice or bool")
		}
		if q.Per == "" {
			q.Per = vocab.PerTicket
		}
		if !slices.Contains(vocab.QuestionPers, q.Per) {
			e.Add(at+".per", "ticket or order")
		}
		if q.Kind == vocab.QuestionChoice && (len(q.Choices) < 2 || len(q.Choices) > 50) {
			e.Add(at+".choices", "2 to 50 choices")
		}
		if q.Kind != vocab.QuestionChoice {
			q.Choices = nil
		}
		out = append(out, q)
	}
	return out
}

// prices reads a price per category in the event's currency.
func prices(field string, in map[string]money.Money, currency string, e *venues.FieldErrors) map[string]int64 {
	out := map[string]int64{}
	for _, c := range slices.Sorted(maps.Keys(in)) {
		p := in[c]
		if p.Currency != currency {
			e.Add(field+"."+c+".currency", "must be the event's currency %q", currency)
		}
		out[c] = p.Amount
	}
	return out
}

// changedFixed names the fields outside AlwaysEditable that differ.
func changedFixed(a, b store.OrganiserEvent) []string {
	var out []string
	for _, c := range []struct {
		name    string
		changed bool
	}{
		{"venue_id", a.VenueID != b.VenueID},
		{"starts_at", !a.StartsAt.Equal(b.StartsAt)},
		{"onsale_at", !a.OnsaleAt.Equal(b.OnsaleAt)},
		{"cancellation_deadline", !a.CancellationDeadline.Equal(b.CancellationDeadline)},
		{"currency", a.Currency != b.Currency},
		{"metered", a.Metered != b.Metered},
		{"prices", !maps.Equal(a.Prices, b.Prices)},
		{"ticket_types", !slices.EqualFunc(a.TicketTypes, b.TicketTypes, store.TicketType.Equal)},
		{"service_fee", a.ServiceFee != b.ServiceFee},
	} {
		if c.changed {
			out = append(out, c.name)
		}
	}
	return out
}

var currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)

// maxPrice bounds a category's price: ten million in major units.
const maxPrice = 1_000_000_000

// check validates the event as it would be stored, categories being those
// of its venue's layout.
func check(ev *store.OrganiserEvent, categories []string, e *venues.FieldErrors) {
	switch {
	case ev.Title == "":
		e.Add("title", "required")
	case len(ev.Title) > 200:
		e.Add("title", "at most 200 characters")
	}
	for _, f := range []struct{ name, v string }{{"artist", ev.Artist}, {"genre", ev.Genre}} {
		if len(f.v) > 200 {
			e.Add(f.name, "at most 200 characters")
		}
	}
	if len(ev.Description) > 5000 {
		e.Add("description", "at most 5000 characters")
	}
	if !currencyPattern.MatchString(ev.Currency) {
		e.Add("currency", "an ISO 4217 code such as EUR")
	}
	if ev.PerCustomerLimit < 1 || ev.PerCustomerLimit > 100 {
		e.Add("per_customer_limit", "from 1 to 100")
	}
	if ev.HoldTTLSeconds < 30 || ev.HoldTTLSeconds > 3600 {
		e.Add("hold_ttl_seconds", "from 30 to 3600")
	}
	switch {
	case ev.StartsAt.IsZero():
		e.Add("starts_at", "required")
	case ev.OnsaleAt.IsZero():
		e.Add("onsale_at", "required")
	case !ev.OnsaleAt.Before(ev.StartsAt):
		e.Add("onsale_at", "must be before starts_at")
	}
	if !ev.OffsaleAt.IsZero() && !ev.OffsaleAt.After(ev.OnsaleAt) && !e.Has("onsale_at") {
		e.Add("offsale_at", "must be after onsale_at")
	}
	if !ev.CancellationDeadline.IsZero() && ev.CancellationDeadline.After(ev.StartsAt) {
		e.Add("cancellation_deadline", "must not be after starts_at")
	}
	for _, c := range slices.Sorted(maps.Keys(ev.Prices)) {
		switch a := ev.Prices[c]; {
		case !slices.Contains(categories, c):
			e.Add("prices."+c, "the venue's layout has no category %q (it has %s)", c, strings.Join(categories, ", "))
		case a < 0 || a > maxPrice:
			e.Add("prices."+c+".amount", "from 0 to %d minor units", maxPrice)
		}
	}
	for _, c := range categories {
		if _, ok := ev.Prices[c]; !ok {
			e.Add("prices."+c, "missing: the venue's layout has seats of this category")
		}
	}
	for i, t := range ev.TicketTypes {
		if t.Requires != "" && !slices.ContainsFunc(ev.Questions, func(q store.Question) bool { return q.ID == t.Requires && q.Per == vocab.PerTicket }) {
			e.Add(fmt.Sprintf("ticket_types[%d].requires", i), "not one of the event's per-ticket questions")
		}
		for _, c := range slices.Sorted(maps.Keys(t.Prices)) {
			switch a := t.Prices[c]; {
			case !slices.Contains(categories, c):
				e.Add(fmt.Sprintf("ticket_types[%d].prices.%s", i, c), "the venue's layout has no category %q", c)
			case a < 0 || a > maxPrice:
				e.Add(fmt.Sprintf("ticket_types[%d].prices.%s.amount", i, c), "from 0 to %d minor units", maxPrice)
			}
		}
	}
}
