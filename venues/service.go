package venues

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"

	"github.com/encore-tickets/encore/store"
)

// Service imports and reads venues. The CLI and the organiser API call it.
type Service struct {
	store *store.Store
}

// NewService builds the service over the buy plane's store.
func NewService(st *store.Store) *Service { return &Service{store: st} }

// Imported is the answer of an import.
type Imported struct {
	VenueID  string `json:"venue_id"`
	Sections int    `json:"sections"`
	Seats    int    `json:"seats"`
}

// Import validates the venue as a whole and writes it in one transaction
// for the scope's organisation. A *ValidationError lists every problem;
// nothing is written then.
func (s *Service) Import(ctx context.Context, scope Scope, v Venue) (Imported, error) {
	return s.ImportAs(ctx, scope, NewID("ven"), v)
}

// ImportAs is Import under a chosen ID (the demo's fixed venues);
// store.ErrVenueExists when it is taken.
func (s *Service) ImportAs(ctx context.Context, scope Scope, id string, v Venue) (Imported, error) {
	if err := scope.Check(); err != nil {
		return Imported{}, err
	}
	if scope.Org == "" {
		return Imported{}, Invalid("org", "the organisation the venue belongs to is required")
	}
	if err := v.Validate(); err != nil {
		return Imported{}, err
	}
	imp := store.VenueImport{ID: id, OrgID: scope.Org, Name: strings.TrimSpace(v.Name), City: strings.TrimSpace(v.City),
		Timezone: v.Timezone, Lat: v.Lat, Lng: v.Lng, Sections: make([]store.VenueSection, len(v.Layout.Sections))}
	for i, sec := range v.Layout.Sections {
		out := store.VenueSection{ID: sec.ID, Name: sec.Name, Category: sec.Category, Kind: sec.Kind, Capacity: sec.Capacity,
			Rows: make([]store.VenueRow, len(sec.Rows))}
		seats := 0
		for j, r := range sec.Rows {
			row := store.VenueRow{Label: r.Label, Seats: make([]store.VenueSeat, len(r.Seats))}
			for k, seat := range r.Seats {
				row.Seats[k] = store.VenueSeat{Number: seat.Number, X: seat.X, Y: seat.Y}
			}
			seats += len(r.Seats)
			out.Rows[j] = row
		}
		if out.Capacity == 0 {
			out.Capacity = seats // a seated section's capacity is its seats
		}
		imp.Sections[i] = out
	}
	if err := s.store.Catalogue.ImportVenue(ctx, imp); err != nil {
		var inv *store.InvalidError
		if errors.As(err, &inv) {
			return Imported{}, Invalid(inv.Field, "%s", inv.Message)
		}
		return Imported{}, fmt.Errorf("venues: import %s: %w", id, err)
	}
	return Imported{VenueID: id, Sections: len(imp.Sections), Seats: v.Layout.Seats()}, nil
}

// Get reads a venue of the scope's organisation (any, for an admin):
// store.ErrNotFound otherwise.
func (s *Service) Get(ctx context.Context, scope Scope, id string) (store.VenueSummary, error) {
	if err := scope.Check(); err != nil {
		return store.VenueSummary{}, err
	}
	return s.store.Catalogue.Venue(ctx, id, scope.Filter())
}

// NewID is a fresh identifier with a type prefix: "ven_k3x...", 16 random
// lower-case characters after it.
func NewID(prefix string) string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return prefix + "_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}
