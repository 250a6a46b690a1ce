package store_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// onSaleEvent creates an event on sale since an hour, a month ahead, whose
// ID is prefix and a random suffix: one seated section "sec_<event>"
// (named A) of rows by perRow seats at 10.00 EUR and, when general > 0, a
// standing section "ga_<event>" of that many places. It returns the ID.
func onSaleEvent(t testing.TB, st *store.Store, prefix string, rows, perRow, general int) string {
	t.Helper()
	ev := prefix + testenv.RandomSuffix()
	sections := []store.SectionSpec{{ID: "sec_" + ev, Name: "A", Rows: rows, PerRow: perRow, BasePrice: 1000}}
	if general > 0 {
		sections = append(sections, store.SectionSpec{ID: "ga_" + ev, Name: "Floor", General: true, Capacity: general, BasePrice: 500})
	}
	require.NoError(t, st.Catalogue.CreateEvent(context.Background(), store.EventSpec{ID: ev, Title: "T", VenueID: "ven_" + prefix,
		VenueName: "V", City: "C", StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour),
		Currency: "EUR", Sections: sections}))
	return ev
}

// raceTen starts ten calls of each (by index, 0 to 9) and one of rival
// at once, rival sixth so that it is neither first nor last to start, and
// counts the calls that succeeded. An error lost does not accept as the
// way a call loses the race fails the test.
func raceTen(t *testing.T, each func(i int) error, rival func() error, lost func(error) bool) (eachWon, rivalWon int) {
	t.Helper()
	errs := make([]error, 11)
	var wg sync.WaitGroup
	for i := range 11 {
		wg.Go(func() {
			switch {
			case i == 5:
				errs[i] = rival()
			case i < 5:
				errs[i] = each(i)
			default:
				errs[i] = each(i - 1)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case err == nil && i == 5:
			rivalWon++
		case err == nil:
			eachWon++
		case !lost(err):
			t.Errorf("call %d: %v", i, err)
		}
	}
	return eachWon, rivalWon
}

// holdSeat places user's hold of one seat of event ev and returns its ID.
func holdSeat(t testing.TB, st *store.Store, ev, user, seat string) uuid.UUID {
	t.Helper()
	h, _, err := st.Holds.CreateHold(context.Background(), store.HoldRequest{ReservationID: uuid.New(), UserID: user,
		EventID: ev, SeatIDs: []string{seat}})
	require.NoError(t, err)
	return h.ID
}

// listening runs a booking-change listener on pool until the test ends and
// returns it once it listens.
func listening(t testing.TB, pool *pgxpool.Pool) *store.BookingChanges {
	t.Helper()
	changes := store.NewBookingChanges(pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { changes.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, changes.Listening, 10*time.Second, 10*time.Millisecond)
	return changes
}
