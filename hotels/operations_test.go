package hotels_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
)

// hotelier is a city of its own with two properties of one organisation
// made through the hotels service as a hotelier makes them: "main" (a
// double of two rooms at 100.00, and a suite) and "other" (doubles for
// walked guests), each with ten nights from tomorrow on sale.
type hotelier struct {
	svc         *hotels.Service
	holds       *holds.Service
	store       *store.Store
	scope       venues.Scope
	city        string
	main, other string
	first       time.Time
}

func newHotelier(t testing.TB, pool *pgxpool.Pool) *hotelier {
	t.Helper()
	sfx := testenv.RandomSuffix()
	st := store.New(pool, store.Options{})
	now := time.Now().UTC()
	h := &hotelier{svc: hotels.NewService(st), store: st, scope: venues.Organiser("org_h_"+sfx, "hana"), city: "City" + sfx,
		first: time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC),
		holds: &holds.Service{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxUnpaidRoomNights: 1000}}
	h.main = h.property(t, "Main", 52.3130, 4.9380, "double", 2)
	h.other = h.property(t, "Other", 52.3300, 4.9000, "double", 5)
	return h
}

func str(s string) *string     { return &s }
func num(n int) *int           { return &n }
func deg(f float64) *float64   { return &f }
func yes(b bool) *bool         { return &b }
func eur(a int64) *money.Money { return &money.Money{Amount: a, Currency: "EUR"} }

// property creates a property with a double of allotment rooms (and a
// suite for three) and puts ten nights on sale, both at 100.00 a night.
func (h *hotelier) property(t testing.TB, name string, lat, lng float64, roomType string, allotment int) string {
	t.Helper()
	ctx := context.Background()
	p, err := h.svc.Create(ctx, h.scope, hotels.PropertyFields{Name: str(name + " " + h.city), City: str(h.city),
		Address: str("1 " + name + " Street"), Lat: deg(lat), Lng: deg(lng), Timezone: str("Europe/Amsterdam"),
		ContactEmail: str(strings.ToLower(name) + "@" + strings.ToLower(h.city) + ".test"),
		RoomTypes:    []hotels.RoomTypeFields{{ID: roomType, Name: str("Double"), MaxGuests: num(2)}, {ID: "suite", Name: str("Suite"), MaxGuests: num(3)}}})
	require.NoError(t, err)
	for _, rt := range []string{roomType, "suite"} {
		_, err := h.svc.SetInventory(ctx, h.scope, p.PropertyID, hotels.InventoryRequest{RoomType: rt, From: h.day(0), To: h.day(9),
			Allotment: num(allotment), Rate: eur(10000)})
		require.NoError(t, err)
	}
	return p.PropertyID
}

func (h *hotelier) night(i int) time.Time { return h.first.AddDate(0, 0, i) }
func (h *hotelier) day(i int) string      { return h.night(i).Format(time.DateOnly) }

func (h *hotelier) stay(prop string, from, nights, rooms int) store.StayRequest {
	return store.StayRequest{PropertyID: prop, RoomType: "double", Checkin: h.night(from), Checkout: h.night(from + nights), Rooms: rooms}
}

func (h *hotelier) hold(t testing.TB, user string, stays ...store.StayRequest) (store.Hold, error) {
	t.Helper()
	ans, err := h.holds.Hold(context.Background(), session.Identity{UserID: user, Email: user + "@fans.test"}, holds.Cart{Stays: stays}, "", nil, "")
	return ans.Hold, err
}

// sell holds the stay for user and confirms the sale, as the saga does once
// paid.
func (h *hotelier) sell(t testing.TB, user string, stay store.StayRequest) store.Hold {
	t.Helper()
	hd, err := h.hold(t, user, stay)
	require.NoError(t, err)
	ok, err := h.store.Bookings.ConfirmSale(context.Background(), hd.ID)
	require.NoError(t, err)
	require.True(t, ok)
	return hd
}

func (h *hotelier) counters(t testing.TB, prop string, night int) store.RoomNight {
	t.Helper()
	rn, err := h.store.Hotels.RoomNightCounters(context.Background(), prop, "double", h.night(night))
	require.NoError(t, err)
	return rn
}

func TestAHotelierSetsAYearOfNightsInOneCallAndAnotherOrganisationSeesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotelier(t, testenv.DB(t))
	p, err := h.svc.Get(ctx, h.scope, h.main)
	require.NoError(t, err)
	require.Equal(t, h.scope.Org, p.OrgID)
	require.Equal(t, "EUR", p.Currency, "the first rate fixes the currency")
	require.Equal(t, []string{"15:00", "11:00"}, []string{p.CheckInTime, p.CheckOutTime}, "the usual times unless told")

	year := hotels.InventoryRequest{RoomType: "double", From: h.day(20), To: h.day(20 + 364), Allotment: num(30),
		OverbookLimit: num(2), Rate: eur(12900)}
	start := time.Now()
	res, err := h.svc.SetInventory(ctx, h.scope, h.main, year)
	took := time.Since(start)
	require.NoError(t, err)
	t.Logf("365 nights set in one call in %s", took)
	require.Equal(t, hotels.InventoryResult{PropertyID: h.main, RoomType: "double", From: year.From, To: year.To, Created: 365,
		Currency: "EUR"}, res)

	weekend := hotels.InventoryRequest{RoomType: "double", From: year.From, To: year.To, Weekdays: []int{5, 6}, Rate: eur(15900)}
	res, err = h.svc.SetInventory(ctx, h.scope, h.main, weekend)
	require.NoError(t, err)
	require.Zero(t, res.Created)
	require.InDelta(t, 104, res.Updated, 1, "every Friday and Saturday of the year, and nothing else")

	inv, err := h.svc.Inventory(ctx, h.scope, h.main, year.From, year.To)
	require.NoError(t, err)
	require.Len(t, inv.Nights, 365, "one room type's year: the suite has no nights there")
	for _, n := range inv.Nights {
		night, _ := time.Parse(time.DateOnly, n.Night)
		rate := int64(12900)
		if d := night.Weekday(); d == time.Friday || d == time.Saturday {
			rate = 15900
		}
		require.Equal(t, hotels.InventoryNight{Night: n.Night, RoomType: "double", Allotment: 30, OverbookLimit: 2, Available: 32,
			Rate: money.Money{Amount: rate, Currency: "EUR"}}, n)
	}

	cases := []struct {
		name  string
		req   hotels.InventoryRequest
		field string
	}{
		{"new nights without a rate", hotels.InventoryRequest{RoomType: "double", From: h.day(400), To: h.day(401), Allotment: num(1)}, "rate"},
		{"a rate in another currency", hotels.InventoryRequest{RoomType: "double", From: h.day(0), To: h.day(1),
			Rate: &money.Money{Amount: 1, Currency: "USD"}}, "rate.currency"},
		{"more than a year at once", hotels.InventoryRequest{RoomType: "double", From: h.day(0), To: h.day(366), Allotment: num(1)}, "to"},
		{"an unknown room type", hotels.InventoryRequest{RoomType: "attic", From: h.day(0), To: h.day(1), Allotment: num(1)}, "room_type"},
		{"nothing to change", hotels.InventoryRequest{RoomType: "double", From: h.day(0), To: h.day(1)}, "allotment"},
		{"an eighth day of the week", hotels.InventoryRequest{RoomType: "double", From: h.day(0), To: h.day(1), StopSell: yes(true),
			Weekdays: []int{8}}, "weekdays[0]"},
	}
	for _, c := range cases {
		t.Run(c.name+" is refused naming "+c.field, func(t *testing.T) {
			_, err := h.svc.SetInventory(ctx, h.scope, h.main, c.req)
			requireField(t, err, c.field)
		})
	}

	rival := venues.Organiser("org_rival_"+testenv.RandomSuffix(), "rex")
	_, err = h.svc.Get(ctx, rival, h.main)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = h.svc.SetInventory(ctx, rival, h.main, year)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = h.svc.Arrivals(ctx, rival, h.main, h.day(0))
	require.ErrorIs(t, err, store.ErrNotFound)
	list, err := h.svc.List(ctx, rival)
	require.NoError(t, err)
	require.Empty(t, list)
	list, err = h.svc.List(ctx, h.scope)
	require.NoError(t, err)
	require.Len(t, list, 2)
}

// requireField requires err to be a refusal naming field.
func requireField(t *testing.T, err error, field string) {
	t.Helper()
	var fields []string
	var ve *venues.ValidationError
	var ie *store.InvalidError
	switch {
	case errors.As(err, &ve):
		for _, e := range ve.Errors {
			fields = append(fields, e.Field)
		}
	case errors.As(err, &ie):
		fields = append(fields, ie.Field)
	default:
		t.Fatalf("want a refusal naming %s, got %v", field, err)
	}
	require.Contains(t, fields, field)
}

func TestAnInventoryEditThatWouldLeaveGuestsWithoutRoomsIsRefusedNamingEveryNight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotelier(t, testenv.DB(t))
	h.sell(t, "paid", h.stay(h.main, 3, 2, 1))
	_, err := h.hold(t, "holding", h.stay(h.main, 4, 2, 1))
	require.NoError(t, err)

	_, err = h.svc.SetInventory(ctx, h.scope, h.main, hotels.InventoryRequest{RoomType: "double", From: h.day(0), To: h.day(9),
		Allotment: num(1), Rate: eur(1)})
	var ic *store.InventoryConflictError
	require.ErrorAs(t, err, &ic)
	require.Equal(t, "allotment", ic.Field)
	require.Len(t, ic.Nights, 1, "only night 4 has two rooms taken")
	require.Equal(t, store.NightConflict{Night: h.night(4), Held: 1, Sold: 1, Allotment: 1}, ic.Nights[0])
	require.Contains(t, err.Error(), h.day(4))
	for n := range 10 {
		rn := h.counters(t, h.main, n)
		require.Equal(t, [2]int64{2, 10000}, [2]int64{int64(rn.Allotment), rn.Price}, "night %d: nothing changed", n)
	}

	// Overbooking makes room for both; then lowering the limit alone is
	// refused on the limit.
	_, err = h.svc.SetInventory(ctx, h.scope, h.main, hotels.InventoryRequest{RoomType: "double", From: h.day(0), To: h.day(9),
		Allotment: num(1), OverbookLimit: num(1)})
	require.NoError(t, err)
	_, err = h.svc.SetInventory(ctx, h.scope, h.main, hotels.InventoryRequest{RoomType: "double", From: h.day(4), To: h.day(4),
		OverbookLimit: num(0)})
	require.ErrorAs(t, err, &ic)
	require.Equal(t, "overbook_limit", ic.Field)
	rep, err := h.store.Holds.Audit(ctx, "", time.Hour)
	require.NoError(t, err)
	require.Zero(t, rep.RoomNightsOverLimit, rep.String())
}

func TestARateChangeDuringAHoldNeverChangesWhatTheHoldOrTheSalePays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotelier(t, testenv.DB(t))
	held, err := h.hold(t, "early", h.stay(h.main, 0, 2, 1))
	require.NoError(t, err)
	require.Equal(t, int64(2*10000), held.Total.Amount)

	_, err = h.svc.SetInventory(ctx, h.scope, h.main, hotels.InventoryRequest{RoomType: "double", From: h.day(0), To: h.day(9), Rate: eur(25000)})
	require.NoError(t, err)

	again, err := h.store.Holds.GetHold(ctx, held.ID, "")
	require.NoError(t, err)
	require.Equal(t, held.Total, again.Total, "the hold's price was frozen when it was taken")
	require.Equal(t, int64(10000), again.Stays[0].Nights[1].Price.Amount)
	late, err := h.hold(t, "late", h.stay(h.main, 0, 2, 1))
	require.NoError(t, err)
	require.Equal(t, int64(2*25000), late.Total.Amount, "a hold taken after the change pays the new rate")

	ok, err := h.store.Bookings.ConfirmSale(ctx, held.ID)
	require.NoError(t, err)
	require.True(t, ok)
	b, err := h.store.Bookings.Booking(ctx, held.ID, "")
	require.NoError(t, err)
	require.Equal(t, int64(2*10000), b.Hold.Total.Amount, "paid at the rate held")

	// A later change leaves the paid stay alone too.
	_, err = h.svc.SetInventory(ctx, h.scope, h.main, hotels.InventoryRequest{RoomType: "double", From: h.day(0), To: h.day(1), Rate: eur(5000)})
	require.NoError(t, err)
	b, err = h.store.Bookings.Booking(ctx, held.ID, "")
	require.NoError(t, err)
	require.Equal(t, int64(2*10000), b.Hold.Total.Amount)
}

func TestAStopSoldNightSellsNothingMoreAndItsGuestsKeepTheirRooms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotelier(t, testenv.DB(t))
	guest, err := h.hold(t, "before", h.stay(h.main, 1, 1, 1))
	require.NoError(t, err)
	_, err = h.svc.SetInventory(ctx, h.scope, h.main, hotels.InventoryRequest{RoomType: "double", From: h.day(1), To: h.day(1), StopSell: yes(true)})
	require.NoError(t, err)

	_, err = h.hold(t, "after", h.stay(h.main, 0, 3, 1))
	var ru *store.RoomUnavailableError
	require.ErrorAs(t, err, &ru)
	require.Equal(t, h.night(1), ru.Night.UTC(), "the stop-sold night is named")
	require.Contains(t, ru.Detail, "stop-sell")
	require.Zero(t, h.counters(t, h.main, 0).Held, "nothing held of the stay")

	rpool, err := store.OpenReader(ctx, testenv.DatabaseURL(t), store.ReaderRole, store.PoolOptions{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(rpool.Close)
	search := hotels.NewSearch(store.NewReader(rpool), time.Millisecond)
	res, err := search.Find(ctx, hotels.Query{Dest: h.main, Checkin: h.night(0), Checkout: h.night(3), Guests: 2})
	require.NoError(t, err)
	require.Len(t, res.Properties, 1)
	for _, rt := range res.Properties[0].RoomTypes {
		require.NotEqual(t, "double", rt.ID, "a room type with a stop-sold night is not on sale for the stay")
	}

	ok, err := h.store.Bookings.ConfirmSale(ctx, guest.ID)
	require.NoError(t, err)
	require.True(t, ok, "the guest who held before the stop-sell keeps the room")
	inv, err := h.svc.Inventory(ctx, h.scope, h.main, h.day(1), h.day(1))
	require.NoError(t, err)
	require.Equal(t, hotels.InventoryNight{Night: h.day(1), RoomType: "double", Allotment: 2, Sold: 1, Available: 0,
		Rate: money.Money{Amount: 10000, Currency: "EUR"}, StopSell: true}, inv.Nights[0])

	_, err = h.svc.SetInventory(ctx, h.scope, h.main, hotels.InventoryRequest{RoomType: "double", From: h.day(1), To: h.day(1), StopSell: yes(false)})
	require.NoError(t, err)
	_, err = h.hold(t, "reopened", h.stay(h.main, 0, 3, 1))
	require.NoError(t, err, "selling again once the stop-sell is lifted")
}

func TestThePropertyIsEmailedOnEveryBookingChangeCancellationAndWalkOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A database of its own: Drain sends every unsent notice of the
	// database, and other tests' belong in their own mailboxes.
	pool, _ := testenv.FreshDB(t)
	h := newHotelier(t, pool)
	stayer := h.sell(t, "stayer", h.stay(h.main, 0, 2, 1))
	walked := h.sell(t, "walked", h.stay(h.main, 0, 2, 1))
	leaver := h.sell(t, "leaver", h.stay(h.main, 5, 1, 1))
	_, err := h.store.Bookings.CancelPaid(ctx, leaver.ID)
	require.NoError(t, err)
	walks, err := h.store.Hotels.WalkBookings(ctx, h.main, h.night(0), 1, 1)
	require.NoError(t, err)
	require.Len(t, walks, 1)
	require.Equal(t, walked.ID, walks[0].ReservationID, "the last paid booking is walked first")

	mailbox := t.TempDir()
	notices := &hotels.Notices{Store: h.store, Mailer: notify.Mailbox{Dir: mailbox}, PublicURL: "https://tickets.example"}
	n, err := notices.Drain(ctx)
	require.NoError(t, err)
	require.Equal(t, 6, n, "three bookings, a cancellation, a walk off one property and into the other")
	n, err = notices.Drain(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "each is sent once")

	mail := func(kind vocab.PropertyNoticeKind, booking store.Hold, prop string) string {
		t.Helper()
		key := hotels.NoticeKey(store.PropertyNotice{Kind: kind, ReservationID: booking.ID.String(), PropertyID: prop})
		b, err := os.ReadFile(filepath.Join(mailbox, key+".eml"))
		require.NoError(t, err, "no %s email to %s", kind, prop)
		return string(b)
	}
	confirmation := func(booking store.Hold) string {
		b, err := h.store.Bookings.Booking(ctx, booking.ID, "")
		require.NoError(t, err)
		require.Len(t, b.Vouchers, 1)
		return b.Vouchers[0].Confirmation
	}
	mainAddr := "main@" + strings.ToLower(h.city) + ".test"
	booked := mail(vocab.NoticeBooked, stayer, h.main)
	for _, want := range []string{"To: <" + mainAddr + ">", "Subject: New booking at Main", stayer.ID.String(), "stayer@fans.test",
		"1 × Double: " + h.day(0) + " to " + h.day(2) + " (2 nights)", "confirmation " + confirmation(stayer), "EUR 200.00",
		"https://tickets.example/hotel/#/property/" + h.main} {
		require.Contains(t, booked, want)
	}
	require.Contains(t, mail(vocab.NoticeCancelled, leaver, h.main), "is cancelled: its rooms are free to sell again")
	off := mail(vocab.NoticeWalked, walked, h.main)
	require.Contains(t, off, "walked off the night of "+h.day(0))
	require.Contains(t, off, "They stay at "+h.other)
	in := mail(vocab.NoticeChanged, walked, h.other)
	require.Contains(t, in, "To: <other@"+strings.ToLower(h.city)+".test>")
	require.Contains(t, in, "A guest walked from "+h.main+" stays at Other")
	require.Contains(t, in, "1 × Double: "+h.day(0)+" to "+h.day(1)+" (1 night)")
	files, err := filepath.Glob(filepath.Join(mailbox, "*.eml"))
	require.NoError(t, err)
	require.Len(t, files, 6)
}

func TestArrivalsAreThePaidStaysArrivingThatDayWithTheirConfirmationNumbersAndTheirCSVIsText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotelier(t, testenv.DB(t))
	_, err := h.svc.SetInventory(ctx, h.scope, h.main, hotels.InventoryRequest{RoomType: "double", From: h.day(0), To: h.day(9), Allotment: num(5)})
	require.NoError(t, err)
	two := h.sell(t, "=HYPERLINK(\"x\")", h.stay(h.main, 2, 3, 2))
	h.sell(t, "earlier", h.stay(h.main, 1, 2, 1)) // arrives the day before, still there
	_, err = h.hold(t, "unpaid", h.stay(h.main, 2, 1, 1))
	require.NoError(t, err)
	walkedIn := h.sell(t, "walkedin", h.stay(h.other, 2, 1, 1))
	_, err = h.store.Pool().Exec(ctx, `UPDATE reservations SET fan_email = NULL WHERE id = $1`, two.ID)
	require.NoError(t, err)

	a, err := h.svc.Arrivals(ctx, h.scope, h.main, h.day(2))
	require.NoError(t, err)
	b, err := h.store.Bookings.Booking(ctx, two.ID, "")
	require.NoError(t, err)
	require.Equal(t, []hotels.ArrivalView{{BookingID: two.ID.String(), Confirmation: b.Vouchers[0].Confirmation,
		Guest: `=HYPERLINK("x")`, RoomType: "double", RoomTypeName: "Double", Rooms: 2, Nights: 3, Checkin: h.day(2),
		Checkout: h.day(5)}}, a.Arrivals, "only the paid stay that arrives that day; the guest is the account without an email")
	require.Equal(t, "15:00", a.CheckInTime)

	// A guest walked in from the other property arrives on the walked night.
	_, err = h.store.Hotels.WalkBookings(ctx, h.other, h.night(2), 1, 1)
	require.NoError(t, err)
	a, err = h.svc.Arrivals(ctx, h.scope, h.main, h.day(2))
	require.NoError(t, err)
	require.Len(t, a.Arrivals, 2)
	var in hotels.ArrivalView
	for _, x := range a.Arrivals {
		if x.BookingID == walkedIn.ID.String() {
			in = x
		}
	}
	require.Equal(t, h.other, in.WalkedFrom)
	require.Equal(t, "walkedin@fans.test", in.Guest)
	require.Equal(t, 1, in.Nights)

	var buf bytes.Buffer
	require.NoError(t, a.WriteCSV(&buf))
	recs, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"date", "booking_id", "confirmation", "guest", "room_type", "room_type_name", "rooms", "nights",
		"checkin", "checkout", "walked_from"}, recs[0])
	found := false
	for _, r := range recs[1:] {
		if r[1] == two.ID.String() {
			found = true
			require.Equal(t, `'=HYPERLINK("x")`, r[3], "a guest that looks like a formula stays text")
			require.Equal(t, []string{"2", "3"}, r[6:8], "rooms and nights are numbers")
		}
	}
	require.True(t, found)
}

func TestAWalkPreviewShowsWhoWouldBeWalkedAndWhereAndMovesNoOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotelier(t, testenv.DB(t))
	_, err := h.svc.SetInventory(ctx, h.scope, h.main, hotels.InventoryRequest{RoomType: "double", From: h.day(0), To: h.day(0), OverbookLimit: num(1)})
	require.NoError(t, err)
	var last store.Hold
	for _, g := range []string{"a", "b", "c"} {
		last = h.sell(t, "guest_"+g, h.stay(h.main, 0, 1, 1))
	}
	pv, err := h.svc.PreviewWalk(ctx, h.scope, h.main, h.day(0), 1)
	require.NoError(t, err)
	require.Equal(t, 1, pv.Overbooked, "three sold on two rooms")
	require.Len(t, pv.Walks, 1)
	require.Equal(t, hotels.WalkView{BookingID: last.ID.String(), Guest: "guest_c", Outcome: "relocated", FromRoomType: "double",
		ToProperty: h.other, ToRoomType: "double", Rooms: 1, Refund: money.Money{Amount: 10000, Currency: "EUR"},
		Compensation: money.Money{Amount: 10000, Currency: "EUR"}}, pv.Walks[0])
	require.Equal(t, 3, h.counters(t, h.main, 0).Sold, "no one moved")
	require.Zero(t, h.counters(t, h.other, 0).Sold)
	var walks int
	require.NoError(t, h.store.Pool().QueryRow(ctx, `SELECT count(*) FROM walks WHERE from_property = $1`, h.main).Scan(&walks))
	require.Zero(t, walks)

	// The walk then does what the preview said.
	done, err := h.store.Hotels.WalkBookings(ctx, h.main, h.night(0), 1, 1)
	require.NoError(t, err)
	require.Equal(t, last.ID, done[0].ReservationID)
	require.Equal(t, h.other, done[0].ToProperty)
	pv, err = h.svc.PreviewWalk(ctx, h.scope, h.main, h.day(0), 1)
	require.NoError(t, err)
	require.True(t, pv.Walks[0].Done, "a walk made is shown as made")
}

func TestAnEventsHotelsAreTheNearestToItsVenueWithTheRatesOfItsNight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	h := newHotelier(t, pool)
	far := h.property(t, "Far", 51.9225, 4.4792, "double", 5) // Rotterdam: 55 km off
	eventID := "evt_" + testenv.RandomSuffix()
	venueID := "ven_" + eventID
	require.NoError(t, demo.Create(ctx, pool, demo.Event{ID: eventID, Title: "Near", VenueID: venueID, VenueName: "Hall", City: h.city,
		Timezone: "Europe/Amsterdam", StartsAt: h.night(1).Add(19 * time.Hour), OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Sections: []demo.Section{{ID: "sec_" + eventID[4:], Name: "A", Rows: 1, PerRow: 2, BasePrice: 1000}}}))
	placed, err := h.store.Catalogue.PlaceVenue(ctx, venueID, 52.3124, 4.9371)
	require.NoError(t, err)
	require.True(t, placed)
	_, err = h.svc.SetInventory(ctx, h.scope, h.other, hotels.InventoryRequest{RoomType: "double", From: h.day(1), To: h.day(1), Rate: eur(13300)})
	require.NoError(t, err)

	rpool, err := store.OpenReader(ctx, testenv.DatabaseURL(t), store.ReaderRole, store.PoolOptions{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(rpool.Close)
	search := hotels.NewSearch(store.NewReader(rpool), time.Millisecond)
	res, err := search.NearEvent(ctx, eventID, 2, 1)
	require.NoError(t, err)
	require.Equal(t, []string{h.day(1), h.day(2)}, []string{res.Checkin, res.Checkout}, "the night of the show")
	// Other tests' hotels stand at the same places: this test's own are
	// picked out, in the order given.
	mine := func(res hotels.EventHotels) []hotels.Property {
		var out []hotels.Property
		for _, p := range res.Properties {
			require.NotNil(t, p.DistanceKM)
			if p.ID == h.main || p.ID == h.other || p.ID == far {
				out = append(out, p)
			}
		}
		return out
	}
	got := mine(res)
	require.Len(t, got, 2, "the one 55 km off is not near")
	require.Equal(t, []string{h.main, h.other}, []string{got[0].ID, got[1].ID}, "nearest first")
	require.InDelta(t, 0.1, *got[0].DistanceKM, 0.1)
	require.InDelta(t, 3.2, *got[1].DistanceKM, 0.2)
	require.Equal(t, "1 Other Street", got[1].Address)
	other := got[1].RoomTypes[0]
	require.Equal(t, "double", other.ID)
	require.Equal(t, money.Money{Amount: 13300, Currency: "EUR"}, other.Total, "the rate of the show's night")
	require.Equal(t, 5, other.Available)

	res, err = search.NearEvent(ctx, eventID, 3, 2)
	require.NoError(t, err)
	got = mine(res)
	require.Len(t, got, 2)
	require.Len(t, got[0].RoomTypes, 1)
	require.Equal(t, "suite", got[0].RoomTypes[0].ID, "only the suites sleep three")
	require.Equal(t, int64(2*10000), got[0].RoomTypes[0].Total.Amount, "two nights")

	_, err = search.NearEvent(ctx, "evt_nope_"+testenv.RandomSuffix(), 1, 1)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestTheShowsNightIsItsDayOnTheVenuesClocksOrTheDayBeforeForAnAllNighter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, at, zone, want string
	}{
		{"an evening show", "2027-06-01T19:00:00Z", "Europe/Amsterdam", "2027-06-01"},
		{"late in UTC, the next day in Tokyo", "2027-06-01T20:00:00Z", "Asia/Tokyo", "2027-06-01"},
		{"midnight in Amsterdam", "2027-06-01T22:30:00Z", "Europe/Amsterdam", "2027-06-01"},
		{"an afternoon show", "2027-06-01T13:00:00Z", "Europe/Amsterdam", "2027-06-01"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			at, err := time.Parse(time.RFC3339, c.at)
			require.NoError(t, err)
			require.Equal(t, c.want, hotels.ShowNight(at, c.zone).Format(time.DateOnly))
		})
	}
}
