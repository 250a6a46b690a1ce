package venues_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/schema"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type env struct {
	pool *pgxpool.Pool
	svc  *venues.Service
}

// newEnv is a database of the test's own (the tests count every row an
// import writes, so parallel tests must not share one) and the service on it.
func newEnv(t *testing.T) env {
	t.Helper()
	pool, _ := testenv.FreshDB(t)
	_, err := schema.Migrate(context.Background(), pool)
	require.NoError(t, err)
	return env{pool: pool, svc: venues.NewService(store.New(pool, store.Options{}))}
}

func (e env) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// rows counts every row an import writes.
func (e env) rows(t *testing.T) [3]int {
	return [3]int{e.count(t, `SELECT count(*) FROM venues`), e.count(t, `SELECT count(*) FROM venue_sections`),
		e.count(t, `SELECT count(*) FROM venue_seats`)}
}

var scope = venues.Organiser("org_test", "tester")

func TestTheExampleLayoutFilesAreTheGeneratorsOutput(t *testing.T) {
	t.Parallel()
	arena, err := venues.EncodeJSON(venues.ArenaVenue())
	require.NoError(t, err)
	club, err := venues.EncodeCSV(venues.ClubVenue().Layout)
	require.NoError(t, err)
	for name, want := range map[string][]byte{venues.ArenaFile: arena, venues.ClubFile: club} {
		got, err := fs.ReadFile(venues.Examples, name)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s is stale: run go generate ./venues", name)
	}
}

func TestTheExampleArenaHas20000SeatsOnArcs(t *testing.T) {
	t.Parallel()
	f, err := venues.Examples.Open(venues.ArenaFile)
	require.NoError(t, err)
	v, err := venues.ParseJSON(f)
	require.NoError(t, err)
	require.Equal(t, venues.ArenaSeats, v.Layout.Seats())
	require.ElementsMatch(t, []string{"standing", "floor", "lower", "upper"}, v.Layout.CategoryNames())
	var general, seated int
	for _, s := range v.Layout.Sections {
		if s.Kind == vocab.SectionGeneral {
			general++
		} else {
			seated++
		}
	}
	require.Equal(t, 1, general)
	require.Greater(t, seated, 3)
	// A bowl's row is an arc: its seats keep their distance from the stage.
	row := v.Layout.Sections[len(v.Layout.Sections)-1].Rows[0]
	first, last := row.Seats[0], row.Seats[len(row.Seats)-1]
	require.InDelta(t, first.X*first.X+first.Y*first.Y, last.X*last.X+last.Y*last.Y, 2)
	require.NotEqual(t, first.Y, row.Seats[len(row.Seats)/2].Y)
}

func TestImportWritesTheExampleArenaAndTheClubFromJSONAndCSV(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	open := func(name string) fs.File {
		f, err := venues.Examples.Open(name)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	arena, err := venues.ParseJSON(open(venues.ArenaFile))
	require.NoError(t, err)
	clubCSV, err := venues.ParseCSV(open(venues.ClubFile), venues.CSVMeta{Name: "Club", City: "Rotterdam", Timezone: "Europe/Amsterdam"})
	require.NoError(t, err)
	clubJSON, err := venues.EncodeJSON(venues.ClubVenue())
	require.NoError(t, err)
	clubFromJSON, err := venues.ParseJSON(bytes.NewReader(clubJSON))
	require.NoError(t, err)

	for _, tc := range []struct {
		name            string
		venue           venues.Venue
		sections, seats int
	}{
		{"the arena from JSON", arena, 22, 20000},
		{"the club from CSV", clubCSV, 2, 140},
		{"the club from JSON", clubFromJSON, 2, 140},
	} {
		// Serial: the check after the loop reads what the imports wrote.
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			imp, err := e.svc.Import(ctx, scope, tc.venue)
			require.NoError(t, err)
			t.Logf("imported %d seats in %s", imp.Seats, time.Since(start))
			require.True(t, strings.HasPrefix(imp.VenueID, "ven_"))
			require.Equal(t, tc.seats, imp.Seats)
			require.Equal(t, tc.seats, e.count(t, `SELECT count(*) FROM venue_seats WHERE venue_id = $1`, imp.VenueID))
			require.Equal(t, tc.sections, e.count(t, `SELECT count(*) FROM venue_sections WHERE venue_id = $1`, imp.VenueID))
			got, err := e.svc.Get(ctx, scope, imp.VenueID)
			require.NoError(t, err)
			require.Equal(t, "org_test", got.OrgID)
			require.Equal(t, tc.seats, got.Seats)
			_, err = e.svc.Get(ctx, venues.Organiser("org_other", "x"), imp.VenueID)
			require.ErrorIs(t, err, store.ErrNotFound, "another organiser does not see it")
		})
	}
	// The club's balcony seats keep their plan and category through CSV.
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM venue_seats WHERE section_id = 'balcony' AND row_label = 'A'
		AND number = 1 AND x = -11.81 AND y = 7.52 AND category = 'balcony' AND venue_id IN
		(SELECT id FROM venues WHERE name = 'Club')`))
}

// gridLayout is sections of rows x seats in a straight grid, the sections
// side by side a gap of 10 apart: the large layouts of the import's tests and
// benchmarks.
func gridLayout(name string, sections, rows, seats int) venues.Venue {
	v := venues.Venue{Name: name, City: "Utrecht", Timezone: "UTC"}
	for s := range sections {
		sec := venues.Section{ID: fmt.Sprintf("s%02d", s), Name: fmt.Sprintf("Block %d", s), Kind: vocab.SectionSeated, Category: "standard"}
		for r := range rows {
			row := venues.Row{Label: venues.RowLabel(r)}
			for n := range seats {
				row.Seats = append(row.Seats, venues.Seat{Number: n + 1, X: float64(s*(seats+10) + n), Y: float64(r)})
			}
			sec.Rows = append(sec.Rows, row)
		}
		v.Layout.Sections = append(v.Layout.Sections, sec)
	}
	return v
}

func TestA100000SeatLayoutImportsInOneTransactionAndOneMoreIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	v := gridLayout("Big", 20, 50, 100)
	body, err := venues.EncodeJSON(v)
	require.NoError(t, err)
	start := time.Now()
	parsed, err := venues.ParseJSON(bytes.NewReader(body))
	require.NoError(t, err)
	parsedIn := time.Since(start)
	imp, err := e.svc.Import(ctx, scope, parsed)
	require.NoError(t, err)
	t.Logf("100,000 seats (%d bytes of JSON): parsed and validated in %s, imported in %s", len(body), parsedIn,
		time.Since(start)-parsedIn)
	require.Equal(t, venues.MaxSeats, imp.Seats)
	require.Equal(t, venues.MaxSeats, e.count(t, `SELECT count(*) FROM venue_seats WHERE venue_id = $1`, imp.VenueID))
	// One transaction: every seat row was written by the same one.
	require.Equal(t, 1, e.count(t, `SELECT count(DISTINCT xmin::text) FROM venue_seats WHERE venue_id = $1`, imp.VenueID))

	v.Layout.Sections[0].Rows[0].Seats = append(v.Layout.Sections[0].Rows[0].Seats, venues.Seat{Number: 101, X: 1, Y: 1})
	before := e.rows(t)
	_, err = e.svc.Import(ctx, scope, v)
	var verr *venues.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "layout", verr.Errors[0].Field)
	require.Contains(t, verr.Errors[0].Message, "100001 seats")
	require.Equal(t, before, e.rows(t))
}

const goodJSON = `{"name": "Hall", "city": "Ghent", "timezone": "Europe/Brussels", "layout": {"sections": [
 {"id": "stalls", "kind": "seated", "category": "stalls", "rows": [
   {"label": "A", "seats": [{"number": 1, "x": 0, "y": 0}, {"number": 2, "x": 1, "y": 0}]},
   {"label": "B", "seats": [{"number": 1, "x": 0, "y": 1}, {"number": 2, "x": 1, "y": 1}]}]},
 {"id": "floor", "kind": "general", "category": "standing", "capacity": 100}]}}`

const goodCSV = `section,kind,category,row,seat,x,y,capacity
stalls,seated,stalls,A,1,0,0,
stalls,seated,stalls,A,2,1,0,
stalls,seated,stalls,B,1,0,1,
floor,general,standing,,,,,100
`

func TestBadLayoutsNameEveryErrorByPathOrLineAndWriteNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	meta := venues.CSVMeta{Name: "Hall", City: "Ghent", Timezone: "Europe/Brussels"}
	type bad struct{ field, says string }
	cases := []struct {
		name   string
		csv    bool
		meta   venues.CSVMeta
		body   string
		errors []bad
	}{
		{name: "the good JSON file", body: goodJSON},
		{name: "the good CSV file", csv: true, body: goodCSV},
		{name: "JSON: a duplicate seat",
			body:   strings.Replace(goodJSON, `{"number": 2, "x": 1, "y": 0}`, `{"number": 1, "x": 1, "y": 0}`, 1),
			errors: []bad{{"layout.sections[0].rows[0].seats[1].number", "duplicate seat 1"}}},
		{name: "JSON: a missing row label", body: strings.Replace(goodJSON, `"label": "B", `, ``, 1),
			errors: []bad{{"layout.sections[0].rows[1].label", "missing row label"}}},
		{name: "JSON: an unknown category",
			body:   strings.Replace(goodJSON, `"layout": {`, `"layout": {"categories": ["stalls", "balcony"], `, 1),
			errors: []bad{{"layout.sections[1].category", `unknown category "standing"`}}},
		{name: "JSON: a missing category", body: strings.Replace(goodJSON, `"category": "stalls", `, ``, 1),
			errors: []bad{{"layout.sections[0].category", "missing category"}}},
		{name: "JSON: a seat number that is not a whole number",
			body:   strings.Replace(goodJSON, `{"number": 2, "x": 1, "y": 1}`, `{"number": "2b", "x": 1, "y": 1}`, 1),
			errors: []bad{{"layout.sections[0].rows[1].seats[1].number", "whole number"}}},
		{name: "JSON: a seat number of zero",
			body:   strings.Replace(goodJSON, `{"number": 2, "x": 1, "y": 1}`, `{"number": 0, "x": 1, "y": 1}`, 1),
			errors: []bad{{"layout.sections[0].rows[1].seats[1].number", "from 1 to"}}},
		{name: "JSON: a bad kind", body: strings.Replace(goodJSON, `"kind": "general"`, `"kind": "standing"`, 1),
			errors: []bad{{"layout.sections[1].kind", `kind "standing" is neither`}}},
		{name: "JSON: general admission without a capacity", body: strings.Replace(goodJSON, `, "capacity": 100`, ``, 1),
			errors: []bad{{"layout.sections[1].capacity", "needs a capacity"}}},
		{name: "JSON: a seated capacity that is not its seats",
			body:   strings.Replace(goodJSON, `"category": "stalls", "rows"`, `"category": "stalls", "capacity": 5, "rows"`, 1),
			errors: []bad{{"layout.sections[0].capacity", "does not match the section's 4 seats"}}},
		{name: "JSON: every error at once",
			body: strings.NewReplacer(`{"number": 2, "x": 1, "y": 0}`, `{"number": 1, "x": 1, "y": 0}`,
				`"label": "B", `, ``, `{"number": 2, "x": 1, "y": 1}`, `{"number": "2b", "x": "left", "y": 1}`,
				`"kind": "general"`, `"kind": "standing"`, `"timezone": "Europe/Brussels"`, `"timezone": "Mars/Olympus"`).Replace(goodJSON),
			errors: []bad{{"timezone", "unknown time zone"}, {"layout.sections[0].rows[0].seats[1].number", "duplicate seat"},
				{"layout.sections[0].rows[1].label", "missing row label"},
				{"layout.sections[0].rows[1].seats[1].number", "whole number"},
				{"layout.sections[0].rows[1].seats[1].x", "must be a number"},
				{"layout.sections[1].kind", "neither"}}},
		{name: "CSV: a duplicate seat", csv: true, body: strings.Replace(goodCSV, "A,2,1,0", "A,1,1,0", 1),
			errors: []bad{{"line 3, column seat", "duplicate seat 1"}}},
		{name: "CSV: a missing row label", csv: true, body: strings.Replace(goodCSV, "B,1,0,1", ",1,0,1", 1),
			errors: []bad{{"line 4, column row", "missing row label"}}},
		{name: "CSV: an unknown category", csv: true, meta: venues.CSVMeta{Categories: []string{"stalls"}}, body: goodCSV,
			errors: []bad{{"line 5, column category", `unknown category "standing"`}}},
		{name: "CSV: a seat number that is not a number", csv: true, body: strings.Replace(goodCSV, "B,1,0,1", "B,one,0,1", 1),
			errors: []bad{{"line 4, column seat", `not "one"`}}},
		{name: "CSV: a bad kind", csv: true, body: strings.Replace(goodCSV, "floor,general", "floor,standing", 1),
			errors: []bad{{"line 5, column kind", `kind "standing" is neither`}}},
		{name: "CSV: a section whose lines disagree", csv: true, body: strings.Replace(goodCSV, "stalls,seated,stalls,B", "stalls,seated,vip,B", 1),
			errors: []bad{{"line 4, column category", `has category "stalls" on line 2`}}},
		{name: "CSV: every error at once", csv: true,
			body: strings.NewReplacer("A,2,1,0", "A,1,1,0", "B,1,0,1", ",x,0,1", "floor,general", "floor,standing").Replace(goodCSV),
			errors: []bad{{"line 3, column seat", "duplicate seat"}, {"line 4, column seat", "whole number"},
				{"line 5, column kind", "neither"}, {"line 4, column row", "missing row label"}}},
	}
	// Serial: each case counts the rows before and after its import.
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.rows(t)
			var v venues.Venue
			var err error
			if tc.csv {
				m := meta
				m.Categories = tc.meta.Categories
				v, err = venues.ParseCSV(strings.NewReader(tc.body), m)
			} else {
				v, err = venues.ParseJSON(strings.NewReader(tc.body))
			}
			if err == nil {
				_, err = e.svc.Import(ctx, scope, v)
			}
			if len(tc.errors) == 0 {
				require.NoError(t, err)
				require.Equal(t, before[2]+3+map[bool]int{false: 1}[tc.csv], e.rows(t)[2])
				return
			}
			var verr *venues.ValidationError
			require.True(t, errors.As(err, &verr), "%v", err)
			got := map[string]string{}
			for _, fe := range verr.Errors {
				got[fe.Field] = fe.Message
			}
			for _, want := range tc.errors {
				require.Contains(t, got, want.field, "errors: %v", verr.Errors)
				require.Contains(t, got[want.field], want.says)
			}
			require.Len(t, verr.Errors, len(tc.errors), "errors: %v", verr.Errors)
			require.Equal(t, before, e.rows(t), "nothing written")
		})
	}
}

func TestImportNeedsAnOrganisationAndAKnownTimeZone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v, err := venues.ParseJSON(strings.NewReader(goodJSON))
	require.NoError(t, err)
	_, err = e.svc.Import(context.Background(), venues.Organiser("", "x"), v)
	var verr *venues.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "org", verr.Errors[0].Field)
	_, err = venues.ParseCSV(strings.NewReader(goodCSV), venues.CSVMeta{Name: "Hall", City: "Ghent"})
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "timezone", verr.Errors[0].Field)
}
