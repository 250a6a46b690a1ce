package hotels_test

import (
	"context"

	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fixture is a city of its own with two hotels: "main" (a double of
// allotment rooms, overbook limit, and a family room for four) and "other"
// (where walked guests go), nights from tomorrow.
type fixture struct {
	svc         *holds.Service
	store       *store.Store
	city        string
	main, other string
	first       time.Time
}

func newFixture(t testing.TB, allotment, limit int) *fixture {
	t.Helper()
	return newFixtureOn(t, testenv.DB(t), allotment, limit)
}

// newFixtureOn is newFixture in the database of pool.
func newFixtureOn(t testing.TB, pool *pgxpool.Pool, allotment, limit int) *fixture {
	t.Helper()
	sfx := testenv.RandomSuffix()
	st := store.New(pool, store.Options{})
	now := time.Now().UTC()
	f := &fixture{store: st, city: "City" + sfx, main: "prop_main_" + sfx, other: "prop_other_" + sfx,
		first: time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)}
	ctx := context.Background()
	require.NoError(t, st.Hotels.CreateProperty(ctx, store.PropertySpec{ID: f.main, Name: "Main " + sfx, City: f.city, Currency: "EUR",
		RoomTypes: []store.RoomTypeSpec{
			{ID: "double", Name: "Double", MaxGuests: 2, Allotment: allotment, OverbookLimit: limit, Price: 10000},
			{ID: "family", Name: "Family", MaxGuests: 4, Allotment: 3, Price: 20000},
		}}, f.first, 10))
	require.NoError(t, st.Hotels.CreateProperty(ctx, store.PropertySpec{ID: f.other, Name: "Other " + sfx, City: f.city, Currency: "EUR", MinStay: 2,
		RoomTypes: []store.RoomTypeSpec{{ID: "double", Name: "Double", MaxGuests: 2, Allotment: 10, Price: 15000}}}, f.first, 10))
	// The fixture's accounts fill whole floors to set a scene (five rooms for
	// two nights at once): these tests are about allotments and overbooking,
	// so the per-account hoarding cap (api tests cover it) is lifted.
	f.svc = &holds.Service{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxUnpaidRoomNights: 1000}
	return f
}

func (f *fixture) night(i int) time.Time { return f.first.AddDate(0, 0, i) }

func (f *fixture) stay(prop, roomType string, from, nights, rooms int) store.StayRequest {
	return store.StayRequest{PropertyID: prop, RoomType: roomType, Checkin: f.night(from), Checkout: f.night(from + nights), Rooms: rooms}
}

func (f *fixture) hold(t testing.TB, user string, cart holds.Cart) (store.Hold, error) {
	t.Helper()
	ans, err := f.svc.Hold(context.Background(), session.Identity{UserID: user}, cart, "", nil, "")
	return ans.Hold, err
}

// holdStay holds one stay alone (no event), which must succeed.
func (f *fixture) holdStay(t testing.TB, user string, stay store.StayRequest) store.Hold {
	t.Helper()
	h, err := f.hold(t, user, holds.Cart{Stays: []store.StayRequest{stay}})
	require.NoError(t, err)
	return h
}

func (f *fixture) counters(t testing.TB, prop, roomType string, night int) store.RoomNight {
	t.Helper()
	rn, err := f.store.Hotels.RoomNightCounters(context.Background(), prop, roomType, f.night(night))
	require.NoError(t, err)
	return rn
}

func (f *fixture) requireAuditClean(t testing.TB) {
	t.Helper()
	rep, err := f.store.Holds.Audit(context.Background(), "", time.Hour)
	require.NoError(t, err)
	require.Zero(t, rep.RoomNightsOverLimit, rep.String())
	require.Zero(t, rep.RoomNightsMiscounted, rep.String())
}

func TestFiftyGuestsOnTheLastRoomsNeverPassAllotmentPlusLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 6, 2) // 8 rooms can be sold
	ctx := context.Background()
	// All but three rooms are gone already.
	f.holdStay(t, "early", f.stay(f.main, "double", 0, 2, 5))

	var wg sync.WaitGroup
	var held, refused atomic.Int64
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.hold(t, "guest"+uuid.NewString()[:8], holds.Cart{Stays: []store.StayRequest{f.stay(f.main, "double", 0, 2, 1+i%2)}})
			var ru *store.RoomUnavailableError
			switch {
			case err == nil:
				held.Add(1)
			case errors.As(err, &ru), errors.Is(err, store.ErrBusy):
				refused.Add(1)
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(50), held.Load()+refused.Load())
	require.GreaterOrEqual(t, held.Load(), int64(2), "the last three rooms go to one or two guests at least")
	for night := range 2 {
		rn := f.counters(t, f.main, "double", night)
		require.LessOrEqual(t, rn.Held+rn.Sold, rn.Allotment+rn.OverbookLimit)
		require.GreaterOrEqual(t, rn.Held, 7, "at most one room is left over: no guest asks for less than one")
	}
	var over int
	require.NoError(t, f.store.Pool().QueryRow(ctx, `SELECT count(*) FROM room_nights WHERE held + sold > allotment + overbook_limit`).Scan(&over))
	require.Zero(t, over)
	f.requireAuditClean(t)
}

func TestAThreeNightStayWithTheMiddleNightFullIsRefusedNamingThatNight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, 0)
	// Night 1 is full.
	f.holdStay(t, "first", f.stay(f.main, "double", 1, 1, 2))
	before := []store.RoomNight{f.counters(t, f.main, "double", 0), f.counters(t, f.main, "double", 1), f.counters(t, f.main, "double", 2)}

	_, err := f.hold(t, "second", holds.Cart{Stays: []store.StayRequest{f.stay(f.main, "double", 0, 3, 1)}})
	var ru *store.RoomUnavailableError
	require.ErrorAs(t, err, &ru)
	require.Equal(t, f.night(1), ru.Night.UTC())
	require.Equal(t, f.main, ru.PropertyID)
	require.Equal(t, "double", ru.RoomType)

	after := []store.RoomNight{f.counters(t, f.main, "double", 0), f.counters(t, f.main, "double", 1), f.counters(t, f.main, "double", 2)}
	require.Equal(t, before, after, "nothing held")
	f.requireAuditClean(t)
}

func TestAHotelOnlyHoldLivesFifteenMinutesAndGivesItsNightsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2, 0)
	stay := f.stay(f.main, "double", 0, 2, 2)
	h := f.holdStay(t, "sleeper", stay)
	require.Empty(t, h.EventID)
	require.WithinDuration(t, h.CreatedAt.Add(store.StayHoldTTL), h.ExpiresAt, time.Second)
	require.Equal(t, int64(2*2*10000), h.Total.Amount, "two rooms, two nights, prices frozen")
	require.Len(t, h.Stays, 1)
	require.Len(t, h.Stays[0].Nights, 2)
	require.Equal(t, 2, f.counters(t, f.main, "double", 0).Held)

	expire := func(id uuid.UUID) {
		_, err := f.store.Pool().Exec(ctx, `UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
		require.NoError(t, err)
	}

	// The steps are serial: each starts from the hold the one before left.
	t.Run("lazy expiry: the next guest gets the nights of an expired hold", func(t *testing.T) {
		expire(h.ID)
		h2 := f.holdStay(t, "next", stay)
		got, err := f.store.Holds.GetHold(ctx, h.ID, "")
		require.NoError(t, err)
		require.Equal(t, "EXPIRED", string(got.Status))
		require.Equal(t, 2, f.counters(t, f.main, "double", 0).Held)
		h = h2
	})
	t.Run("the sweeper gives the nights back", func(t *testing.T) {
		expire(h.ID)
		n, err := f.svc.Sweep(ctx, 100)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, 1)
		require.Zero(t, f.counters(t, f.main, "double", 0).Held)
		require.Zero(t, f.counters(t, f.main, "double", 1).Held)
	})
	t.Run("a release gives the nights back", func(t *testing.T) {
		h3 := f.holdStay(t, "leaver", stay)
		released, err := f.svc.Release(ctx, session.Identity{UserID: "leaver"}, h3.ID)
		require.NoError(t, err)
		require.True(t, released)
		require.Zero(t, f.counters(t, f.main, "double", 1).Held)
	})
	f.requireAuditClean(t)
}

func TestAPackageHoldIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 1, 0)
	eventID := "evt_" + testenv.RandomSuffix()
	require.NoError(t, demo.Create(ctx, f.store.Pool(), demo.Event{
		ID: eventID, Title: "Show", VenueID: "ven_" + eventID, VenueName: "Hall", City: f.city, Currency: "EUR",
		StartsAt: f.night(0).Add(20 * time.Hour), OnsaleAt: time.Now().Add(-time.Hour),
		Sections: []demo.Section{{ID: eventID + "_a", Name: "A", Rows: 2, PerRow: 5, BasePrice: 5000}},
	}))
	seat := func(n int) string { return demo.SeatID(eventID+"_a", 0, n) }
	seatStatus := func(id string) string {
		var s string
		require.NoError(t, f.store.Pool().QueryRow(ctx, `SELECT status FROM seats WHERE id = $1`, id).Scan(&s))
		return s
	}

	// The steps are serial: they share the room type's one room.
	t.Run("a seat taken: no room-night is held", func(t *testing.T) {
		_, err := f.hold(t, "rival", holds.Cart{EventID: eventID, SeatIDs: []string{seat(1)}})
		require.NoError(t, err)
		_, err = f.hold(t, "fan1", holds.Cart{EventID: eventID, SeatIDs: []string{seat(1), seat(2)},
			Stays: []store.StayRequest{f.stay(f.main, "double", 0, 1, 1)}})
		var su *store.SeatUnavailableError
		require.ErrorAs(t, err, &su)
		require.Zero(t, f.counters(t, f.main, "double", 0).Held)
		require.Equal(t, "AVAILABLE", seatStatus(seat(2)))
	})
	t.Run("a night full: no seat is held", func(t *testing.T) {
		f.holdStay(t, "sleeper", f.stay(f.main, "double", 1, 1, 1))
		_, err := f.hold(t, "fan2", holds.Cart{EventID: eventID, SeatIDs: []string{seat(3), seat(4)},
			Stays: []store.StayRequest{f.stay(f.main, "double", 0, 2, 1)}})
		var ru *store.RoomUnavailableError
		require.ErrorAs(t, err, &ru)
		require.Equal(t, f.night(1), ru.Night.UTC())
		require.Equal(t, "AVAILABLE", seatStatus(seat(3)))
		require.Equal(t, "AVAILABLE", seatStatus(seat(4)))
		require.Zero(t, f.counters(t, f.main, "double", 0).Held)
	})
	t.Run("both free: one hold, one total, the shorter TTL", func(t *testing.T) {
		h, err := f.hold(t, "fan3", holds.Cart{EventID: eventID, SeatIDs: []string{seat(5)},
			Stays: []store.StayRequest{f.stay(f.main, "family", 0, 1, 1)}})
		require.NoError(t, err)
		require.Equal(t, eventID, h.EventID)
		require.Equal(t, h.Items[0].Price.Amount+20000, h.Total.Amount)
		require.LessOrEqual(t, h.ExpiresAt.Sub(h.CreatedAt), store.StayHoldTTL+time.Second)
		require.Equal(t, 1, f.counters(t, f.main, "family", 0).Held)

		ok, err := f.store.Bookings.ConfirmSale(ctx, h.ID)
		require.NoError(t, err)
		require.True(t, ok)
		rn := f.counters(t, f.main, "family", 0)
		require.Equal(t, [2]int{0, 1}, [2]int{rn.Held, rn.Sold}, "sold with the seats in one transaction")
		require.Equal(t, "SOLD", seatStatus(seat(5)))
		b, err := f.store.Bookings.Booking(ctx, h.ID, "fan3")
		require.NoError(t, err)
		require.Len(t, b.Vouchers, 1)
		require.Equal(t, f.main, b.Vouchers[0].PropertyID)
		require.NotEmpty(t, b.Vouchers[0].Confirmation)

		// A failure after payment (the capture never succeeds, or the fan
		// cancels) undoes the sale: every part at once.
		_, err = f.store.Bookings.CancelPaid(ctx, h.ID)
		require.NoError(t, err)
		rn = f.counters(t, f.main, "family", 0)
		require.Equal(t, [2]int{0, 0}, [2]int{rn.Held, rn.Sold})
		require.Equal(t, "AVAILABLE", seatStatus(seat(5)))
		b, err = f.store.Bookings.Booking(ctx, h.ID, "fan3")
		require.NoError(t, err)
		require.Equal(t, "VOID", b.Vouchers[0].Status)
	})
	f.requireAuditClean(t)
}

func TestSearchShowsEachNightsAvailabilityAndPriceUnderTheStayRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 4, 1)
	f.holdStay(t, "early", f.stay(f.main, "double", 1, 1, 2))
	_, err := f.store.Pool().Exec(ctx, `UPDATE room_nights SET price = 12500 WHERE property_id = $1 AND room_type = 'double' AND night = $2`,
		f.main, f.night(1))
	require.NoError(t, err)
	rpool, err := store.OpenReader(ctx, testenv.DatabaseURL(t), store.ReaderRole, store.PoolOptions{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(rpool.Close)
	search := hotels.NewSearch(store.NewReader(rpool), time.Millisecond)

	find := func(guests, nights int) hotels.Results {
		t.Helper()
		res, err := search.Find(ctx, hotels.Query{Dest: f.city, Checkin: f.night(0), Checkout: f.night(nights), Guests: guests})
		require.NoError(t, err)
		return res
	}
	ids := func(res hotels.Results) []string {
		var out []string
		for _, p := range res.Properties {
			for _, rt := range p.RoomTypes {
				out = append(out, p.ID+"/"+rt.ID)
			}
		}
		return out
	}

	res := find(2, 2)
	require.Equal(t, []string{f.main + "/double", f.main + "/family", f.other + "/double"}, ids(res))
	double := res.Properties[0].RoomTypes[0]
	require.Equal(t, []hotels.Night{
		{Date: f.night(0).Format(time.DateOnly), Available: 5, Price: moneyEUR(10000)},
		{Date: f.night(1).Format(time.DateOnly), Available: 3, Price: moneyEUR(12500)},
	}, double.Nights)
	require.Equal(t, 3, double.Available, "the fewest rooms of any night")
	require.Equal(t, moneyEUR(22500), double.Total)
	require.Equal(t, moneyEUR(11250), double.PricePerNight)

	require.Equal(t, []string{f.main + "/double", f.main + "/family"}, ids(find(2, 1)), "the other hotel sells two nights at least")
	require.Equal(t, []string{f.main + "/family"}, ids(find(3, 2)), "only the family room sleeps three")
	require.Empty(t, ids(find(5, 2)), "no room sleeps five")
}

func TestAWalkRelocatesRefundsAndTellsTwoGuestsOnceEvenWhenRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2, 2) // 4 rooms sold on an allotment of 2
	var paid []uuid.UUID
	for i := range 4 {
		h := f.holdStay(t, "guest"+string(rune('a'+i)), f.stay(f.main, "double", 0, 2, 1))
		ok, err := f.store.Bookings.ConfirmSale(ctx, h.ID)
		require.NoError(t, err)
		require.True(t, ok)
		paid = append(paid, h.ID)
	}
	require.Equal(t, 4, f.counters(t, f.main, "double", 0).Sold)
	mailbox := t.TempDir()
	walks := &hotels.Walks{Store: f.store, Mailer: notify.Mailbox{Dir: mailbox}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}

	for range 2 { // the second call is a retry
		got, err := walks.Walk(ctx, hotels.WalkRequest{PropertyID: f.main, Night: f.night(0), Rooms: 2})
		require.NoError(t, err)
		require.Len(t, got, 2)
		for _, w := range got {
			require.Equal(t, f.other, w.ToProperty)
			require.Equal(t, int64(10000), w.Refund)
			require.Equal(t, int64(10000), w.Compensation)
			require.True(t, w.Notified)
			require.Contains(t, paid[2:], w.ReservationID, "the last bookings are walked first")
		}
	}
	rn := f.counters(t, f.main, "double", 0)
	require.Equal(t, 2, rn.Sold, "the walked nights are given back")
	require.Equal(t, 2, f.counters(t, f.other, "double", 0).Sold, "and taken at the other hotel")
	require.Equal(t, 4, f.counters(t, f.main, "double", 1).Sold, "the second night is not walked")
	mails, err := filepath.Glob(filepath.Join(mailbox, "walk-*.eml"))
	require.NoError(t, err)
	require.Len(t, mails, 2)
	body, err := os.ReadFile(mails[0])
	require.NoError(t, err)
	require.Contains(t, string(body), "refunded (EUR 100.00)")
	var n int
	require.NoError(t, f.store.Pool().QueryRow(ctx, `SELECT count(*) FROM walks WHERE from_property = $1`, f.main).Scan(&n))
	require.Equal(t, 2, n)
	walked, err := f.store.Holds.GetHold(ctx, paid[3], "")
	require.NoError(t, err)
	require.Equal(t, int64(2*10000), walked.Stays[0].Total.Amount, "a walked booking still shows the nights it paid for")
	f.requireAuditClean(t)
}

func moneyEUR(amount int64) money.Money { return money.Money{Amount: amount, Currency: "EUR"} }

// BenchmarkRoomNightHolds measures two-night hotel-only holds per second on
// one room type with room for every hold, each a full transaction
// (reservation, conditional UPDATE of both nights, frozen nights).
func BenchmarkRoomNightHolds(b *testing.B) {
	f := newFixture(b, 1_000_000, 0)
	cart := holds.Cart{Stays: []store.StayRequest{f.stay(f.main, "double", 0, 2, 1)}}
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := f.hold(b, "bench"+uuid.NewString()[:8], cart); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "holds/s")
}
