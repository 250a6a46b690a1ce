package organiser_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type env struct {
	pool    *pgxpool.Pool
	st      *store.Store
	reader  *store.Reader
	svc     *organiser.Service
	holds   *holds.Service
	scope   venues.Scope
	venueID string
}

// newEnv imports the example club (a standing floor of 600 and a seated
// balcony of 140) for a fresh organisation.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, testenv.DB(t), testenv.DatabaseURL(t))
}

// newEnvOn is newEnv in the database of pool, at url.
func newEnvOn(t *testing.T, pool *pgxpool.Pool, url string) *env {
	t.Helper()
	ctx := context.Background()
	rpool, err := store.OpenReader(ctx, url, store.ReaderRole, store.PoolOptions{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(rpool.Close)
	st := store.New(pool, store.Options{})
	e := &env{pool: pool, st: st, reader: store.NewReader(rpool), svc: organiser.NewService(st),
		holds: &holds.Service{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		scope: venues.Organiser("org_"+testenv.RandomSuffix(), "ops@example.test")}
	f, err := venues.Examples.Open(venues.ClubFile)
	require.NoError(t, err)
	defer f.Close()
	club, err := venues.ParseCSV(f, venues.CSVMeta{Name: "Test Club", City: "Testville", Timezone: "Europe/Amsterdam"})
	require.NoError(t, err)
	imp, err := venues.NewService(st).Import(ctx, e.scope, club)
	require.NoError(t, err)
	e.venueID = imp.VenueID
	return e
}

func ptr[T any](v T) *T { return &v }

func eur(amount int64) money.Money { return money.Money{Amount: amount, Currency: "EUR"} }

// fields are a valid event on the club, on sale since an hour ago.
func (e *env) fields(title string) organiser.EventFields {
	return organiser.EventFields{VenueID: &e.venueID, Title: &title, Artist: ptr("The Testers"), Genre: ptr("jazz"),
		StartsAt: ptr(time.Now().Add(30 * 24 * time.Hour)), OnsaleAt: ptr(time.Now().Add(-time.Hour)), Currency: ptr("EUR"),
		Prices: map[string]money.Money{"standing": eur(3000), "balcony": eur(4500)}}
}

// create makes a draft of fields(title) in the environment's organisation.
func (e *env) create(t *testing.T, title string) organiser.Event {
	t.Helper()
	ev, err := e.svc.Create(context.Background(), e.scope, e.fields(title))
	require.NoError(t, err)
	return ev
}

func (e *env) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func (e *env) hold(ev organiser.Event, seatIDs ...string) (holds.Answer, error) {
	who := session.Identity{UserID: "fan-" + testenv.RandomSuffix()}
	return e.holds.Hold(context.Background(), who, holds.Cart{EventID: ev.EventID, SeatIDs: seatIDs}, "", nil, "")
}

func balcony(ev organiser.Event, row string, n int) string {
	return store.SectionPrefix(ev.EventID) + "balcony-" + row + "-" + strconv.Itoa(n)
}

func TestADraftIsCopiedFromTheVenueAndFansSeeItOnlyOncePublished(t *testing.T) {
	t.Parallel()
	// A database of its own: the test searches every published event by
	// its title, which a run before (-count) published too.
	pool, url := testenv.FreshDB(t)
	e := newEnvOn(t, pool, url)
	ctx := context.Background()
	cat := catalog.New(e.reader)
	cat.DetailTTL = 0

	ev := e.create(t, "Quiet Quartet")
	require.Equal(t, vocab.EventDraft, ev.Status)
	require.Equal(t, e.scope.Org, ev.OrgID)
	require.Equal(t, 140, ev.Seats)
	require.Equal(t, 2, ev.Sections)
	require.Equal(t, 600, ev.GeneralCapacity)
	require.Equal(t, ev.StartsAt, *ev.OffsaleAt, "the sale ends when the show starts unless told otherwise")
	require.Equal(t, map[string]money.Money{"standing": eur(3000), "balcony": eur(4500)}, ev.Prices)
	require.Equal(t, 140, e.count(t, `SELECT count(*) FROM seats WHERE event_id = $1 AND base_price = 4500 AND category = 'balcony'`, ev.EventID))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM sections WHERE event_id = $1 AND kind = 'general' AND capacity = 600
		AND base_price = 3000 AND category = 'standing'`, ev.EventID))

	// A draft is nothing to fans: not listed, no page, no seat map, no hold.
	page, err := cat.Search(ctx, catalog.Query{Text: "Quiet Quartet"})
	require.NoError(t, err)
	require.Empty(t, page.Events)
	sugg, err := cat.Suggest(ctx, "Quiet Quar")
	require.NoError(t, err)
	require.Empty(t, sugg)
	_, err = cat.Event(ctx, ev.EventID)
	require.ErrorIs(t, err, store.ErrNotFound)
	balconyID := store.SectionPrefix(ev.EventID) + "balcony"
	_, err = e.reader.SectionSeats(ctx, ev.EventID, balconyID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = e.hold(ev, balcony(ev, "A", 1))
	var inv *store.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "event_id", inv.Field, "a fan cannot tell a draft from no event")

	// Another organiser cannot publish it.
	_, err = e.svc.Publish(ctx, venues.Organiser("org_other", "x"), ev.EventID)
	require.ErrorIs(t, err, store.ErrNotFound)

	ev, err = e.svc.Publish(ctx, e.scope, ev.EventID)
	require.NoError(t, err)
	require.Equal(t, vocab.EventOnSale, ev.Status, "published after its on-sale time: on sale")
	require.NotNil(t, ev.PublishedAt)

	page, err = cat.Search(ctx, catalog.Query{Text: "Quiet Quartet"})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	detail, err := cat.Event(ctx, ev.EventID)
	require.NoError(t, err)
	categories := map[string]string{}
	for _, s := range detail.Sections {
		categories[s.ID] = s.Category
	}
	require.Equal(t, map[string]string{balconyID: "balcony", store.SectionPrefix(ev.EventID) + "floor": "standing"}, categories)

	// The seat map draws the balcony's real shape.
	seats, err := e.reader.SectionSeats(ctx, ev.EventID, balconyID)
	require.NoError(t, err)
	require.Len(t, seats.Seats, 140)
	json, _, err := seatmap.Build(seats)
	require.NoError(t, err)
	require.Contains(t, string(json.Body), `"id":"`+balcony(ev, "A", 1)+`","row":"A","number":1,"status":"AVAILABLE","price":{"amount":4500,"currency":"EUR"},"x":-11.81,"y":7.52,"category":"balcony"}`)

	_, err = e.hold(ev, balcony(ev, "A", 1))
	require.NoError(t, err)
}

func TestAPublishedEventChangesOnlyWhatFansDoNotDependOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ev := e.create(t, "Draft Days")

	// A draft may change anything, prices re-price its seats.
	ev, err := e.svc.Patch(ctx, e.scope, ev.EventID, organiser.EventFields{Metered: ptr(true),
		Prices: map[string]money.Money{"standing": eur(3500), "balcony": eur(6000)}})
	require.NoError(t, err)
	require.True(t, ev.Metered)
	require.Equal(t, 140, e.count(t, `SELECT count(*) FROM seats WHERE event_id = $1 AND base_price = 6000`, ev.EventID))

	_, err = e.svc.Publish(ctx, e.scope, ev.EventID)
	require.NoError(t, err)
	ev, err = e.svc.Patch(ctx, e.scope, ev.EventID, organiser.EventFields{Title: ptr("Published Days"), PerCustomerLimit: ptr(4)})
	require.NoError(t, err)
	require.Equal(t, "Published Days", ev.Title)
	require.Equal(t, 4, ev.PerCustomerLimit)

	for name, f := range map[string]organiser.EventFields{
		"prices":    {Prices: map[string]money.Money{"standing": eur(1), "balcony": eur(1)}},
		"starts_at": {StartsAt: ptr(time.Now().Add(40 * 24 * time.Hour))},
		"metered":   {Metered: ptr(false)},
	} {
		_, err = e.svc.Patch(ctx, e.scope, ev.EventID, f)
		require.ErrorIs(t, err, venues.ErrConflict, name)
		require.Contains(t, err.Error(), name)
	}
	require.Equal(t, 140, e.count(t, `SELECT count(*) FROM seats WHERE event_id = $1 AND base_price = 6000`, ev.EventID))
	// The same value is no change.
	_, err = e.svc.Patch(ctx, e.scope, ev.EventID, organiser.EventFields{Metered: ptr(true)})
	require.NoError(t, err)
}

func TestCreateNamesEveryBadFieldAtOnce(t *testing.T) {
	t.Parallel()
	// A database of its own: the test counts every event, and the other
	// tests create theirs meanwhile.
	pool, url := testenv.FreshDB(t)
	e := newEnvOn(t, pool, url)
	ctx := context.Background()
	f := e.fields("Bad")
	f.Prices = map[string]money.Money{"standing": {Amount: 3000, Currency: "USD"}, "vip": eur(9000)}
	f.OnsaleAt = ptr(f.StartsAt.Add(time.Hour))
	f.HoldTTLSeconds = ptr(5)
	before := e.count(t, `SELECT count(*) FROM events`)
	_, err := e.svc.Create(ctx, e.scope, f)
	var verr *venues.ValidationError
	require.ErrorAs(t, err, &verr)
	var fields []string
	for _, fe := range verr.Errors {
		fields = append(fields, fe.Field)
	}
	require.ElementsMatch(t, []string{"prices.standing.currency", "prices.vip", "prices.balcony", "onsale_at", "hold_ttl_seconds"}, fields)
	require.Equal(t, before, e.count(t, `SELECT count(*) FROM events`))

	f = e.fields("Elsewhere")
	_, err = e.svc.Create(ctx, venues.Organiser("org_other", "x"), f)
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "venue_id", verr.Errors[0].Field, "another organisation's venue is no venue")
}

func TestHoldsAreRefusedOutsideTheSaleWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	cases := []struct {
		name            string
		onsale, offsale time.Time
		cancel          bool
		refused         bool
		reason          string
	}{
		{name: "during the sale", onsale: now.Add(-time.Hour), offsale: now.Add(time.Hour)},
		{name: "before the on-sale time", onsale: now.Add(time.Hour), offsale: now.Add(2 * time.Hour), refused: true,
			reason: "not opened"},
		{name: "after the off-sale time", onsale: now.Add(-2 * time.Hour), offsale: now.Add(-time.Hour), refused: true,
			reason: "closed"},
		{name: "a cancelled event", onsale: now.Add(-time.Hour), offsale: now.Add(time.Hour), cancel: true, refused: true,
			reason: "cancelled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := e.fields(tc.name)
			f.OnsaleAt, f.OffsaleAt = &tc.onsale, &tc.offsale
			ev, err := e.svc.Create(ctx, e.scope, f)
			require.NoError(t, err)
			_, err = e.svc.Publish(ctx, e.scope, ev.EventID)
			require.NoError(t, err)
			if tc.cancel {
				_, err = e.pool.Exec(ctx, `UPDATE events SET status = 'CANCELLED' WHERE id = $1`, ev.EventID)
				require.NoError(t, err)
			}
			seat := balcony(ev, "B", 2)
			_, err = e.hold(ev, seat)
			// The deciding transaction refuses too, not only the early check.
			_, _, txErr := e.st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "fan-tx",
				EventID: ev.EventID, SeatIDs: []string{balcony(ev, "B", 3)}})
			if !tc.refused {
				require.NoError(t, err)
				require.NoError(t, txErr)
				return
			}
			for _, err := range []error{err, txErr} {
				var nos *store.NotOnSaleError
				require.ErrorAs(t, err, &nos)
				require.ErrorIs(t, err, store.ErrNotOnSale)
				require.Contains(t, nos.Reason, tc.reason)
				require.WithinDuration(t, tc.onsale, nos.OnsaleAt, time.Millisecond)
				require.WithinDuration(t, tc.offsale, *nos.OffsaleAt, time.Millisecond)
			}
			require.Equal(t, 0, e.count(t, `SELECT count(*) FROM seats WHERE event_id = $1 AND status <> 'AVAILABLE'`, ev.EventID))
		})
	}
}

func TestABlockedSeatIsNeverHeldAndAHeldOrSoldSeatKeepsItsBuyer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ev := e.create(t, "Blocks")
	_, err := e.svc.Publish(ctx, e.scope, ev.EventID)
	require.NoError(t, err)
	camera, sold := balcony(ev, "A", 5), balcony(ev, "A", 9)

	changed, err := e.svc.Block(ctx, e.scope, ev.EventID, organiser.SeatChange{SeatIDs: []string{camera}, Reason: "camera platform"})
	require.NoError(t, err)
	require.Equal(t, []string{camera}, changed.Changed)
	log, err := e.st.Catalogue.SeatBlocks(ctx, ev.EventID)
	require.NoError(t, err)
	require.Len(t, log, 1)
	require.Equal(t, store.SeatBlock{SeatID: camera, Action: vocab.SeatBlock, Reason: "camera platform",
		Actor: "ops@example.test", At: log[0].At}, log[0])
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM outbox WHERE payload->>'event_id' = $1`, ev.EventID),
		"seat maps hear of the block")

	_, err = e.hold(ev, camera)
	var su *store.SeatUnavailableError
	require.ErrorAs(t, err, &su, "a blocked seat is never held")
	_, err = e.hold(ev, camera, balcony(ev, "A", 6))
	require.ErrorAs(t, err, &su, "nor a cart with it")
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM seats WHERE event_id = $1 AND status <> 'AVAILABLE'`, ev.EventID))

	// A seat bought (held, then sold) cannot be blocked nor unblocked.
	ans, err := e.hold(ev, sold)
	require.NoError(t, err)
	for _, action := range []func(context.Context, venues.Scope, string, organiser.SeatChange) (organiser.SeatChanged, error){e.svc.Block, e.svc.Unblock} {
		_, err = action(ctx, e.scope, ev.EventID, organiser.SeatChange{SeatIDs: []string{sold, camera}, Reason: "try"})
		require.ErrorIs(t, err, venues.ErrConflict)
		var sc *store.SeatConflictError
		require.ErrorAs(t, err, &sc)
		require.Equal(t, map[string]vocab.SeatStatus{sold: vocab.SeatHeld}, sc.Seats)
	}
	_, err = e.pool.Exec(ctx, `UPDATE seats SET status = 'SOLD' WHERE id = $1`, sold)
	require.NoError(t, err)
	_, err = e.svc.Unblock(ctx, e.scope, ev.EventID, organiser.SeatChange{SeatIDs: []string{sold}, Reason: "oops"})
	var sc *store.SeatConflictError
	require.ErrorAs(t, err, &sc)
	require.Equal(t, map[string]vocab.SeatStatus{sold: vocab.SeatSold}, sc.Seats)
	require.Equal(t, ans.Hold.ID, uuidOf(t, e, sold), "the sold seat keeps its buyer")

	// Unblocked, the seat sells again; the log keeps both entries.
	_, err = e.svc.Unblock(ctx, e.scope, ev.EventID, organiser.SeatChange{SeatIDs: []string{camera}, Reason: "platform moved"})
	require.NoError(t, err)
	_, err = e.hold(ev, camera)
	require.NoError(t, err)
	log, err = e.st.Catalogue.SeatBlocks(ctx, ev.EventID)
	require.NoError(t, err)
	require.Len(t, log, 2)
	require.Equal(t, "platform moved", log[1].Reason)

	// Bad requests name their fields.
	_, err = e.svc.Block(ctx, e.scope, ev.EventID, organiser.SeatChange{SeatIDs: []string{"nope"}})
	var verr *venues.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "reason", verr.Errors[0].Field)
	_, err = e.svc.Block(ctx, e.scope, ev.EventID, organiser.SeatChange{SeatIDs: []string{"nope"}, Reason: "r"})
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "seat_ids", verr.Errors[0].Field)
	_, err = e.svc.Block(ctx, venues.Organiser("org_other", "x"), ev.EventID, organiser.SeatChange{SeatIDs: []string{camera}, Reason: "r"})
	require.True(t, errors.Is(err, store.ErrNotFound))
}

func uuidOf(t *testing.T, e *env, seatID string) uuid.UUID {
	var id uuid.UUID
	require.NoError(t, e.pool.QueryRow(context.Background(), `SELECT reservation_id FROM seats WHERE id = $1`, seatID).Scan(&id))
	return id
}

// TestAnEventsResalePolicyIsOffByDefaultAndTheOrganiserTurnsItOnEvenAfterPublishing:
// a new event's policy is off with face-value cap, 5 % fee and an hour's
// close; the organiser changes it on a published event (fans' purchases
// do not depend on it), percentages with decimals kept as basis points;
// out-of-range values are refused naming the field, and nothing changes.
func TestAnEventsResalePolicyIsOffByDefaultAndTheOrganiserTurnsItOnEvenAfterPublishing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ev := e.create(t, "Resale Nights")
	require.Equal(t, organiser.Resale{Enabled: false, MaxPricePercent: 100, FeePercent: 5, ClosesMinutesBeforeStart: 60}, ev.Resale)
	_, err := e.svc.Publish(ctx, e.scope, ev.EventID)
	require.NoError(t, err)

	ev, err = e.svc.Patch(ctx, e.scope, ev.EventID, organiser.EventFields{Resale: &organiser.ResaleFields{
		Enabled: ptr(true), MaxPricePercent: ptr(120.0), FeePercent: ptr(2.5), ClosesMinutesBeforeStart: ptr(30)}})
	require.NoError(t, err)
	require.Equal(t, organiser.Resale{Enabled: true, MaxPricePercent: 120, FeePercent: 2.5, ClosesMinutesBeforeStart: 30}, ev.Resale)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE id = $1 AND resale_max_price_bp = 12000 AND resale_fee_bp = 250`, ev.EventID))

	cases := map[string]organiser.ResaleFields{
		"resale.max_price_percent":           {MaxPricePercent: ptr(-1.0)},
		"resale.fee_percent":                 {FeePercent: ptr(60.0)},
		"resale.closes_minutes_before_start": {ClosesMinutesBeforeStart: ptr(-5)},
	}
	for field, r := range cases {
		_, err := e.svc.Patch(ctx, e.scope, ev.EventID, organiser.EventFields{Resale: &r})
		var verr *venues.ValidationError
		require.ErrorAs(t, err, &verr, field)
		require.Equal(t, field, verr.Errors[0].Field)
	}
	got, err := e.svc.Get(ctx, e.scope, ev.EventID)
	require.NoError(t, err)
	require.Equal(t, ev.Resale, got.Resale, "a refused change changes nothing")

	// Re-entry at the door is the event's rule too, and may change after
	// publishing.
	require.False(t, got.Reentry)
	got, err = e.svc.Patch(ctx, e.scope, ev.EventID, organiser.EventFields{Reentry: ptr(true)})
	require.NoError(t, err)
	require.True(t, got.Reentry)
}
