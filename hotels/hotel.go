package hotels

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// Service runs hotels for their hoteliers: properties and their room types,
// nightly inventory and rates, arrivals and the preview of a walk. Every
// method takes the scope it acts for (a hotelier's organisation, or an
// admin's any: venues.Scope, as organisers' services do) and fails with the
// typed errors of package venues (*venues.ValidationError) and store
// (store.ErrNotFound for a property outside the scope, and the store's
// inventory refusals).
type Service struct {
	Store *store.Store
	// CompensationNights is a walked guest's compensation in nights, as
	// Walks has it (0: one), so a walk's preview shows what the walk pays.
	CompensationNights int
}

// NewService builds the service over the buy plane's store.
func NewService(st *store.Store) *Service { return &Service{Store: st} }

// Limits of what a hotelier sends.
const (
	MaxRoomTypes = 50
	maxText      = 200
	maxAddress   = 500
	// MaxRooms bounds an allotment and an overbooking limit per night.
	MaxRooms = 10_000
	// MaxRate bounds a night's rate in minor units.
	MaxRate = 100_000_000
)

// PropertyFields are a property's fields as its hotelier sends them: the
// body of POST /v1/admin/properties (name, city, lat, lng, timezone,
// contact_email and room_types required) and of PATCH (only the fields to
// change; room_types listed are added, or renamed and resized by id, never
// removed).
type PropertyFields struct {
	Name           *string          `json:"name,omitempty"`
	City           *string          `json:"city,omitempty"`
	Address        *string          `json:"address,omitempty"`
	Lat            *float64         `json:"lat,omitempty"`
	Lng            *float64         `json:"lng,omitempty"`
	Timezone       *string          `json:"timezone,omitempty"`
	CheckInTime    *string          `json:"check_in_time,omitempty"`
	CheckOutTime   *string          `json:"check_out_time,omitempty"`
	ContactEmail   *string          `json:"contact_email,omitempty"`
	Currency       *string          `json:"currency,omitempty"`
	VenueID        *string          `json:"venue_id,omitempty"`
	MinStay        *int             `json:"min_stay,omitempty"`
	FreeCancelDays *int             `json:"free_cancel_days,omitempty"`
	RoomTypes      []RoomTypeFields `json:"room_types,omitempty"`
}

// RoomTypeFields is one room type as sent: its id (lower case letters,
// digits, _ and -), name and how many guests it sleeps.
type RoomTypeFields struct {
	ID        string  `json:"id"`
	Name      *string `json:"name,omitempty"`
	MaxGuests *int    `json:"max_guests,omitempty"`
}

// DecodePropertyFields reads PropertyFields from JSON (at most 1 MiB); a
// malformed body or a value of the wrong type is a *venues.ValidationError
// naming the field.
func DecodePropertyFields(r io.Reader) (PropertyFields, error) {
	var f PropertyFields
	return f, decodeJSON(r, &f)
}

func decodeJSON(r io.Reader, v any) error {
	body, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return err
	}
	if len(body) > 1<<20 {
		return venues.Invalid("body", "larger than 1 MiB")
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return venues.Invalid(te.Field, "must be a JSON %s", te.Type.Kind())
		}
		return venues.Invalid("body", "not valid JSON: %v", err)
	}
	return nil
}

// Hotel is a property as its hoteliers see it.
type Hotel struct {
	PropertyID     string           `json:"property_id"`
	OrgID          string           `json:"org_id"`
	Name           string           `json:"name"`
	City           string           `json:"city"`
	Address        string           `json:"address"`
	Lat            *float64         `json:"lat"`
	Lng            *float64         `json:"lng"`
	Timezone       string           `json:"timezone"`
	CheckInTime    string           `json:"check_in_time"`
	CheckOutTime   string           `json:"check_out_time"`
	ContactEmail   string           `json:"contact_email"`
	Currency       string           `json:"currency,omitempty"`
	VenueID        string           `json:"venue_id,omitempty"`
	MinStay        int              `json:"min_stay"`
	FreeCancelDays int              `json:"free_cancel_days"`
	RoomTypes      []store.RoomType `json:"room_types"`
	CreatedAt      time.Time        `json:"created_at"`
	UpdatedAt      time.Time        `json:"updated_at"`
}

func hotelOf(p store.Property) Hotel {
	return Hotel{PropertyID: p.ID, OrgID: p.OrgID, Name: p.Name, City: p.City, Address: p.Address, Lat: p.Lat, Lng: p.Lng,
		Timezone: p.Timezone, CheckInTime: p.CheckInTime, CheckOutTime: p.CheckOutTime, ContactEmail: p.ContactEmail,
		Currency: p.Currency, VenueID: p.VenueID, MinStay: p.MinStay, FreeCancelDays: p.FreeCancelDays, RoomTypes: p.RoomTypes,
		CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}
}

// Create writes a property of the scope's organisation.
func (s *Service) Create(ctx context.Context, scope venues.Scope, f PropertyFields) (Hotel, error) {
	return s.CreateAs(ctx, scope, venues.NewID("prop"), f)
}

// CreateAs is Create under a chosen ID (the demo's fixed properties);
// store.ErrPropertyExists when it is taken.
func (s *Service) CreateAs(ctx context.Context, scope venues.Scope, id string, f PropertyFields) (Hotel, error) {
	if err := scope.Check(); err != nil {
		return Hotel{}, err
	}
	if scope.Org == "" {
		return Hotel{}, venues.Invalid("org", "the organisation the property belongs to is required")
	}
	var e venues.FieldErrors
	for _, req := range []struct {
		name string
		set  bool
	}{{"name", f.Name != nil}, {"city", f.City != nil}, {"lat", f.Lat != nil}, {"lng", f.Lng != nil},
		{"timezone", f.Timezone != nil}, {"contact_email", f.ContactEmail != nil}, {"room_types", len(f.RoomTypes) > 0}} {
		if !req.set {
			e.Add(req.name, "required")
		}
	}
	p := store.Property{ID: id, OrgID: scope.Org, CheckInTime: "15:00", CheckOutTime: "11:00", MinStay: 1, FreeCancelDays: 2}
	apply(&p, f, nil, &e)
	if err := e.Err(); err != nil {
		return Hotel{}, err
	}
	if err := s.Store.Hotels.InsertProperty(ctx, p); err != nil {
		return Hotel{}, err
	}
	return s.Get(ctx, scope, id)
}

// Get reads a property of the scope's organisation: store.ErrNotFound
// otherwise.
func (s *Service) Get(ctx context.Context, scope venues.Scope, id string) (Hotel, error) {
	if err := scope.Check(); err != nil {
		return Hotel{}, err
	}
	p, err := s.Store.Hotels.Property(ctx, id, scope.Filter())
	if err != nil {
		return Hotel{}, err
	}
	return hotelOf(p), nil
}

// List reads the scope's organisation's properties (an admin's: every
// organisation's, or Org's when the scope names one), newest first.
func (s *Service) List(ctx context.Context, scope venues.Scope) ([]Hotel, error) {
	if err := scope.Check(); err != nil {
		return nil, err
	}
	ps, err := s.Store.Hotels.Properties(ctx, scope.Org)
	if err != nil {
		return nil, err
	}
	out := make([]Hotel, len(ps))
	for i, p := range ps {
		out[i] = hotelOf(p)
	}
	return out, nil
}

// Patch changes the fields f sets. The currency is fixed once set (by the
// property or its first rate).
func (s *Service) Patch(ctx context.Context, scope venues.Scope, id string, f PropertyFields) (Hotel, error) {
	if err := scope.Check(); err != nil {
		return Hotel{}, err
	}
	p, err := s.Store.Hotels.UpdateProperty(ctx, id, scope.Filter(), func(p *store.Property) error {
		var e venues.FieldErrors
		current := p.Currency
		apply(p, f, &current, &e)
		return e.Err()
	})
	if err != nil {
		return Hotel{}, err
	}
	return hotelOf(p), nil
}

var (
	roomTypeID  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)
	clockTime   = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
	currencyISO = regexp.MustCompile(`^[A-Z]{3}$`)
)

// apply sets f's fields on p, adding an error per bad field. current is
// the property's currency before the change (nil on create).
func apply(p *store.Property, f PropertyFields, current *string, e *venues.FieldErrors) {
	text := func(name string, v *string, to *string, limit int, required bool) {
		if v == nil {
			return
		}
		s := strings.TrimSpace(*v)
		switch {
		case required && s == "":
			e.Add(name, "required")
		case len(s) > limit:
			e.Add(name, "at most %d characters", limit)
		case strings.ContainsRune(s, 0):
			e.Add(name, "must not contain NUL")
		default:
			*to = s
		}
	}
	text("name", f.Name, &p.Name, maxText, true)
	text("city", f.City, &p.City, maxText, true)
	text("address", f.Address, &p.Address, maxAddress, false)
	if f.Lat != nil {
		if math.IsNaN(*f.Lat) || *f.Lat < -90 || *f.Lat > 90 {
			e.Add("lat", "degrees north, -90 to 90")
		} else {
			p.Lat = f.Lat
		}
	}
	if f.Lng != nil {
		if math.IsNaN(*f.Lng) || *f.Lng < -180 || *f.Lng > 180 {
			e.Add("lng", "degrees east, -180 to 180")
		} else {
			p.Lng = f.Lng
		}
	}
	if (p.Lat == nil) != (p.Lng == nil) && !e.Has("lat") && !e.Has("lng") {
		e.Add("lat", "lat and lng go together: give both")
	}
	if f.Timezone != nil {
		if _, err := time.LoadLocation(*f.Timezone); err != nil || *f.Timezone == "" || *f.Timezone == "Local" {
			e.Add("timezone", "an IANA time zone such as Europe/Amsterdam")
		} else {
			p.Timezone = *f.Timezone
		}
	}
	for _, t := range []struct {
		name string
		v    *string
		to   *string
	}{{"check_in_time", f.CheckInTime, &p.CheckInTime}, {"check_out_time", f.CheckOutTime, &p.CheckOutTime}} {
		if t.v != nil {
			if !clockTime.MatchString(*t.v) {
				e.Add(t.name, "a time of day, HH:MM")
			} else {
				*t.to = *t.v
			}
		}
	}
	if f.ContactEmail != nil {
		a, err := mail.ParseAddress(strings.TrimSpace(*f.ContactEmail))
		if err != nil || a.Name != "" || len(a.Address) > maxText {
			e.Add("contact_email", "an email address such as frontdesk@hotel.example")
		} else {
			p.ContactEmail = a.Address
		}
	}
	if f.Currency != nil {
		switch {
		case !currencyISO.MatchString(*f.Currency):
			e.Add("currency", "an ISO 4217 code such as EUR")
		case current != nil && *current != "" && *current != *f.Currency:
			e.Add("currency", "the property's rates are in %s; its currency is fixed", *current)
		default:
			p.Currency = *f.Currency
		}
	}
	if f.VenueID != nil {
		p.VenueID = strings.TrimSpace(*f.VenueID)
	}
	venues.SetWithin(e, "min_stay", &p.MinStay, f.MinStay, 1, 30, "1 to 30 nights")
	venues.SetWithin(e, "free_cancel_days", &p.FreeCancelDays, f.FreeCancelDays, 0, 365, "0 to 365 days")
	if len(f.RoomTypes) > MaxRoomTypes {
		e.Add("room_types", "at most %d room types", MaxRoomTypes)
		return
	}
	seen := map[string]bool{}
	for i, rt := range f.RoomTypes {
		field := func(name string) string { return fmt.Sprintf("room_types[%d].%s", i, name) }
		out := store.RoomType{ID: rt.ID}
		switch {
		case !roomTypeID.MatchString(rt.ID):
			e.Add(field("id"), "lower-case letters, digits, _ and -, at most 40")
		case seen[rt.ID]:
			e.Add(field("id"), "listed twice")
		}
		seen[rt.ID] = true
		name := ""
		if rt.Name != nil {
			name = strings.TrimSpace(*rt.Name)
		}
		switch {
		case name == "":
			e.Add(field("name"), "required")
		case len(name) > maxText:
			e.Add(field("name"), "at most %d characters", maxText)
		}
		out.Name = name
		switch {
		case rt.MaxGuests == nil:
			e.Add(field("max_guests"), "required: 1 to 20")
		case *rt.MaxGuests < 1 || *rt.MaxGuests > 20:
			e.Add(field("max_guests"), "1 to 20")
		default:
			out.MaxGuests = *rt.MaxGuests
		}
		p.RoomTypes = append(p.RoomTypes, out)
	}
}
