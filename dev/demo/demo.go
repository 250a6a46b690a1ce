// Package demo creates events: the demo data encore dev seeds, and the events
// tests and benchmarks build. Creation is idempotent: running it twice leaves
// one copy, and never touches seats that were already sold. The demo night
// and the flash sale are built as an organiser builds events, from the
// example layouts of package venues; the load-test stadium stays a grid.
package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// Section describes a section to create (see store.SectionSpec).
type Section = store.SectionSpec

// Event describes an event to create (see store.EventSpec).
type Event = store.EventSpec

// SeatID names a seat.
func SeatID(sectionID string, row, number int) string {
	return fmt.Sprintf("%s-%s-%d", sectionID, rowLabel(row), number)
}

func rowLabel(row int) string {
	// Rows A..Z, then AA, AB, ...
	label := ""
	for row++; row > 0; row = (row - 1) / 26 {
		label = string(rune('A'+(row-1)%26)) + label
	}
	return label
}

// Create inserts the event, its venue, sections and seats if missing.
func Create(ctx context.Context, pool *pgxpool.Pool, e Event) error {
	return store.New(pool, store.Options{}).Catalogue.CreateEvent(ctx, e)
}

// Demo IDs.
const (
	DemoNightID  = "evt_demo_night"
	FlashSaleID  = "evt_flash_sale"
	StadiumID    = "evt_demo_stadium"
	DemoPromo    = "WELCOME10"
	ArenaVenueID = "ven_encore_arena_plan"
	ClubVenueID  = "ven_encore_club"
	stadiumVenue = "ven_encore_stadium"
	demoCity     = "Amsterdam"
	demoTimezone = "Europe/Amsterdam"
	demoCurrency = "EUR"
)

// DemoNightSection is the ID of the demo night's section copied from the
// arena layout's section id ("lower-3", "pit", ...).
func DemoNightSection(layoutID string) string { return store.SectionPrefix(DemoNightID) + layoutID }

// DemoEvents are the demo events built as grids (the stadium, 50,000
// numbered seats, unmetered: the event for load tests against encore dev, a
// burst of 10,000 holds leaves most of it free), relative to now: on sale
// since yesterday, the show a month and two weeks away.
func DemoEvents(now time.Time) []Event {
	show, onsale := demoTimes(now)
	return []Event{
		{ID: StadiumID, Title: "Encore Stadium Night", Artist: "The Encores", Genre: "rock",
			Description: "The load-test event: 50,000 numbered seats in ten sections, no waiting room.",
			VenueID:     stadiumVenue, VenueName: "Encore Stadium", City: demoCity, Timezone: demoTimezone, StartsAt: show.AddDate(0, 0, 14), OnsaleAt: onsale,
			Currency: demoCurrency, Sections: stadiumSections()},
	}
}

// demoTimes are the first show (a month away, 20:00 UTC) and the on-sale
// time (yesterday) of the demo events.
func demoTimes(now time.Time) (show, onsale time.Time) {
	return now.Truncate(24*time.Hour).AddDate(0, 1, 0).Add(20 * time.Hour), now.Truncate(24*time.Hour).AddDate(0, 0, -1)
}

// LayoutEvent is a demo event an organiser would make: a venue from an
// example layout and the event drafted from it, then published.
type LayoutEvent struct {
	ID, VenueID string
	Venue       func() (venues.Venue, error)
	Fields      organiser.EventFields
}

// LayoutEvents are the demo night (the example arena: 20,000 numbered seats
// on curved rows in 21 sections plus a standing pit, unmetered) and the
// flash sale (the example club: a standing floor and a seated balcony,
// metered), relative to now.
func LayoutEvents(now time.Time) []LayoutEvent {
	show, onsale := demoTimes(now)
	str := func(s string) *string { return &s }
	at := func(t time.Time) *time.Time { return &t }
	yes := true
	faceValue, fivePercent := 100.0, 5.0
	eur := func(amount int64) money.Money { return money.Money{Amount: amount, Currency: demoCurrency} }
	return []LayoutEvent{
		{ID: DemoNightID, VenueID: ArenaVenueID, Venue: arena, Fields: organiser.EventFields{
			VenueID: str(ArenaVenueID), Title: str("Encore Demo Night"), Artist: str("The Encores"), Genre: str("rock"),
			Description: str("The demo event: 20,000 numbered seats on curved rows in 21 sections and a standing pit."),
			StartsAt:    at(show), OnsaleAt: at(onsale), Currency: str(demoCurrency),
			Prices: map[string]money.Money{"floor": eur(9500), "lower": eur(7500), "upper": eur(4500), "standing": eur(5500)},
			// Fans may resell to each other at up to face value; Encore keeps 5 %.
			Resale: &organiser.ResaleFields{Enabled: &yes, MaxPricePercent: &faceValue, FeePercent: &fivePercent},
		}},
		{ID: FlashSaleID, VenueID: ClubVenueID, Venue: club, Fields: organiser.EventFields{
			VenueID: str(ClubVenueID), Title: str("Encore Flash Sale"), Artist: str("Nova Lights"), Genre: str("pop"),
			Description: str("A metered flash sale in a club: fans go through the waiting room."),
			StartsAt:    at(show.AddDate(0, 0, 7)), OnsaleAt: at(onsale), Currency: str(demoCurrency), Metered: &yes,
			Prices: map[string]money.Money{"standing": eur(3000), "balcony": eur(4500)},
		}},
	}
}

// arena reads the example arena's file, as encore venue import would.
func arena() (venues.Venue, error) {
	f, err := venues.Examples.Open(venues.ArenaFile)
	if err != nil {
		return venues.Venue{}, err
	}
	defer f.Close()
	return venues.ParseJSON(f)
}

// club reads the example club's CSV file, its name and place given as
// encore venue import's flags would.
func club() (venues.Venue, error) {
	f, err := venues.Examples.Open(venues.ClubFile)
	if err != nil {
		return venues.Venue{}, err
	}
	defer f.Close()
	return venues.ParseCSV(f, venues.CSVMeta{Name: "Encore Club", City: "Rotterdam", Timezone: "Europe/Amsterdam"})
}

// stadiumSections are the stadium's ten sections of 50 rows of 100 seats.
func stadiumSections() []Section {
	secs := make([]Section, 0, 10)
	for i := range 10 {
		secs = append(secs, Section{ID: fmt.Sprintf("sec_stadium_%c", 'a'+i), Name: fmt.Sprintf("Stand %c", 'A'+i),
			Rows: 50, PerRow: 100, BasePrice: int64(8000 - 500*i)})
	}
	return secs
}

// DemoStaff are the demo's staff accounts: olga, organiser of org_encore;
// sam, support; otto, operator; hana, hotelier of org_encore's hotels
// (README shows how to mint their tokens).
var DemoStaff = []string{"olga", "sam", "otto", DemoHotelier}

// Seed creates the demo events and the demo promotion, idempotently. An event
// whose sections and seats are all there already is skipped without a write:
// re-inserting 75,000 seats with ON CONFLICT DO NOTHING on every start of
// encore dev would cost about a second. An incomplete event is completed,
// leaving what is there as it is.
func Seed(ctx context.Context, pool *pgxpool.Pool, now time.Time) error {
	for _, e := range LayoutEvents(now) {
		if err := seedLayoutEvent(ctx, pool, e); err != nil {
			return fmt.Errorf("demo: seed %s: %w", e.ID, err)
		}
	}
	for _, e := range DemoEvents(now) {
		done, err := complete(ctx, pool, e)
		if err != nil {
			return fmt.Errorf("demo: seed %s: %w", e.ID, err)
		}
		if done {
			continue
		}
		if err := Create(ctx, pool, e); err != nil {
			return fmt.Errorf("demo: seed %s: %w", e.ID, err)
		}
	}
	if err := SeedHotels(ctx, pool, now); err != nil {
		return err
	}
	// Roles come with the token (the demo login mints any): these rows only
	// make the staff known accounts.
	if err := store.New(pool, store.Options{}).Orgs.EnsureUsers(ctx, DemoStaff...); err != nil {
		return err
	}
	return store.New(pool, store.Options{}).Promotions.CreatePromotion(ctx, DemoPromo, DemoNightID, 1000, 500)
}

// seedLayoutEvent imports the event's venue unless it is there, then drafts
// and publishes the event, or completes its copy of the layout. An event of
// the same ID on another venue (the grid of a database seeded before
// layouts) is left as it is.
func seedLayoutEvent(ctx context.Context, pool *pgxpool.Pool, e LayoutEvent) error {
	st := store.New(pool, store.Options{})
	scope := venues.Admin(venues.DemoOrg, "demo")
	if _, err := st.Catalogue.Venue(ctx, e.VenueID, ""); errors.Is(err, store.ErrNotFound) {
		v, err := e.Venue()
		if err != nil {
			return err
		}
		if _, err := venues.NewService(st).ImportAs(ctx, scope, e.VenueID, v); err != nil && !errors.Is(err, store.ErrVenueExists) {
			return err
		}
	} else if err != nil {
		return err
	}
	var venueID string
	var complete bool
	err := pool.QueryRow(ctx, `SELECT e.venue_id,
		(SELECT count(*) FROM sections WHERE event_id = e.id) = (SELECT count(*) FROM venue_sections WHERE venue_id = e.venue_id)
		AND (SELECT count(*) FROM seats WHERE event_id = e.id) = (SELECT count(*) FROM venue_seats WHERE venue_id = e.venue_id)
		FROM events e WHERE e.id = $1`, e.ID).Scan(&venueID, &complete)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		svc := organiser.NewService(st)
		if _, err := svc.CreateAs(ctx, scope, e.ID, e.Fields); err != nil {
			return err
		}
		_, err = svc.Publish(ctx, scope, e.ID)
		return err
	case err != nil:
		return err
	case venueID != e.VenueID || complete:
		return nil
	}
	return st.Catalogue.RepairEventLayout(ctx, e.ID)
}

// complete reports whether e's sections and numbered seats all exist.
func complete(ctx context.Context, pool *pgxpool.Pool, e Event) (bool, error) {
	ids := make([]string, 0, len(e.Sections))
	seats := 0
	for _, sec := range e.Sections {
		ids = append(ids, sec.ID)
		if !sec.General {
			seats += sec.Rows * sec.PerRow
		}
	}
	var haveSections, haveSeats int
	err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sections WHERE event_id = $1 AND id = ANY($2)),
		(SELECT count(*) FROM seats WHERE section_id = ANY($2))`, e.ID, ids).Scan(&haveSections, &haveSeats)
	return haveSections == len(ids) && haveSeats == seats, err
}
