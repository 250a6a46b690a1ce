package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestTheOrganiserCommandsImportAVenueAndCreatePublishAndBlockAnEvent(t *testing.T) {
	// Serial: t.Setenv changes the process's environment.
	if os.Getenv("ENCORE_TEST_REDIS_URL") == "" {
		t.Skip("ENCORE_TEST_REDIS_URL is not set")
	}
	// A database of its own: the test counts every venue, and a run before
	// (-count) imported some.
	pool, dbURL := testenv.FreshDB(t)
	t.Setenv("ENCORE_DATABASE_URL", dbURL)
	t.Setenv("ENCORE_REDIS_URL", os.Getenv("ENCORE_TEST_REDIS_URL"))
	dir := t.TempDir()
	club, err := venues.EncodeCSV(venues.ClubVenue().Layout)
	require.NoError(t, err)
	csvFile := filepath.Join(dir, "club.csv")
	require.NoError(t, os.WriteFile(csvFile, club, 0o600))

	// Every error of a bad file, and nothing written.
	bad := filepath.Join(dir, "bad.csv")
	require.NoError(t, os.WriteFile(bad, []byte("section,kind,category,row,seat,x,y\ns,seated,c,A,x,0,0\ns,hall,c,,1,0,0\n"), 0o600))
	code, _, errOut := run(t, newRootCmd(), "venue", "import", "--file", bad, "--name", "Club", "--city", "Rotterdam",
		"--timezone", "Europe/Amsterdam")
	require.Equal(t, 1, code)
	for _, want := range []string{"line 2, column seat", "line 3, column kind", "line 3, column row"} {
		require.Contains(t, errOut, want)
	}
	var venuesBefore int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM venues`).Scan(&venuesBefore))
	require.Zero(t, venuesBefore)

	code, out, errOut := run(t, newRootCmd(), "venue", "import", "--file", csvFile, "--name", "Club", "--city", "Rotterdam",
		"--timezone", "Europe/Amsterdam", "--org", "org_cli")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "140 seats in 2 sections")
	venueID, _, _ := strings.Cut(out, "\t")
	require.True(t, strings.HasPrefix(venueID, "ven_"), out)

	body, err := json.Marshal(map[string]any{"venue_id": venueID, "title": "CLI Night", "currency": "EUR",
		"starts_at": time.Now().Add(48 * time.Hour), "onsale_at": time.Now().Add(-time.Minute),
		"prices": map[string]any{"standing": map[string]any{"amount": 2500, "currency": "EUR"},
			"balcony": map[string]any{"amount": 4000, "currency": "EUR"}}})
	require.NoError(t, err)
	eventFile := filepath.Join(dir, "event.json")
	require.NoError(t, os.WriteFile(eventFile, body, 0o600))
	code, out, errOut = run(t, newRootCmd(), "event", "create", "--file", eventFile, "--org", "org_cli")
	require.Equal(t, 0, code, errOut)
	var ev organiser.Event
	require.NoError(t, json.Unmarshal([]byte(out), &ev))
	require.Equal(t, "DRAFT", string(ev.Status))
	require.Equal(t, 140, ev.Seats)

	code, out, errOut = run(t, newRootCmd(), "event", "publish", ev.EventID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"status": "ON_SALE"`)

	seat := store.SectionPrefix(ev.EventID) + "balcony-A-1"
	code, out, errOut = run(t, newRootCmd(), "event", "block", ev.EventID, "--seats", seat, "--reason", "sound desk")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, seat)
	var reason string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT reason FROM seat_blocks WHERE seat_id = $1`, seat).Scan(&reason))
	require.Equal(t, "sound desk", reason)

	code, _, errOut = run(t, newRootCmd(), "event", "unblock", ev.EventID, "--seats", seat)
	require.Equal(t, 2, code, "--reason is required")
	require.Contains(t, errOut, "reason")

	// Every change the commands made is in the admin audit log, by the
	// command line's actor, as the API would have recorded it.
	rows, err := pool.Query(context.Background(), `SELECT action || ' ' || target || ' ' || coalesce(reason, '')
		FROM admin_audit WHERE actor LIKE 'cli%' ORDER BY at, id`)
	require.NoError(t, err)
	actions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"venue.create " + venueID + " ", "event.create " + ev.EventID + " ",
		"event.publish " + ev.EventID + " ", "seats.block " + ev.EventID + " sound desk"}, actions)
}

func TestTheSalesCommandPrintsAnEventsReportAsJSONAndCSV(t *testing.T) {
	// Serial: t.Setenv changes the process's environment.
	if os.Getenv("ENCORE_TEST_REDIS_URL") == "" {
		t.Skip("ENCORE_TEST_REDIS_URL is not set")
	}
	pool := testenv.DB(t)
	t.Setenv("ENCORE_DATABASE_URL", testenv.DatabaseURL(t))
	t.Setenv("ENCORE_REDIS_URL", os.Getenv("ENCORE_TEST_REDIS_URL"))
	ctx := context.Background()
	st := store.New(pool, store.Options{})
	imp, err := venues.NewService(st).Import(ctx, venues.Admin("org_sales", "test"), venues.ClubVenue())
	require.NoError(t, err)
	venueID := imp.VenueID
	title, cur := "Sales Night", "EUR"
	starts, onsale := time.Now().Add(48*time.Hour), time.Now().Add(-time.Minute)
	ev, err := organiser.NewService(st).Create(ctx, venues.Admin("", "test"), organiser.EventFields{VenueID: &venueID,
		Title: &title, Currency: &cur, StartsAt: &starts, OnsaleAt: &onsale,
		Prices: map[string]money.Money{"standing": {Amount: 2500, Currency: "EUR"}, "balcony": {Amount: 4000, Currency: "EUR"}}})
	require.NoError(t, err)

	code, out, errOut := run(t, newRootCmd(), "sales", ev.EventID)
	require.Equal(t, 0, code, errOut)
	var r organiser.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Len(t, r.Sections, 2)
	require.Equal(t, 140+ev.GeneralCapacity, r.Totals.Capacity)
	require.Equal(t, r.Totals.Capacity, r.Totals.Available)

	code, out, errOut = run(t, newRootCmd(), "sales", ev.EventID, "--format", "csv")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.True(t, strings.HasPrefix(lines[0], "section_id,name,capacity,sold,held"), out)
	require.True(t, strings.HasPrefix(lines[3], "total,"), out)

	code, _, errOut = run(t, newRootCmd(), "sales", "evt_nope")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "not found")
}
