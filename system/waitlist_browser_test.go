package system_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitlist"
)

// withWaitlist serves the waitlist routes over the flash sale's room (put
// it after withFlashSale) and returns its offers, whose rounds the test
// runs itself.
func withWaitlist(offers **waitlist.Offers) stackOption {
	return func(t *testing.T, e *e2e, a *api.Server) {
		o := &waitlist.Offers{Store: e.store, Room: a.Room, Mailer: notify.Mailbox{Dir: e.mailbox}, TTL: time.Minute}
		o.Register(prometheus.NewRegistry())
		a.Waitlist, *offers = o, o
	}
}

func TestAFanOfASoldOutSaleJoinsTheWaitlistAndTheSeatsThatComeBackOpenOnTheirSeatMap(t *testing.T) {
	t.Parallel()
	var flash string
	var offers *waitlist.Offers
	e, base := browserStack(t, withFlashSale(&flash), withWaitlist(&offers))
	ctx := context.Background()

	// Every seat is held by other fans, four each.
	rows, err := e.store.Pool().Query(ctx, `SELECT id FROM seats WHERE event_id = $1 ORDER BY section_id, row_label, number`, flash)
	require.NoError(t, err)
	var seats []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		seats = append(seats, id)
	}
	require.NoError(t, rows.Err())
	var first uuid.UUID
	for i := 0; i < len(seats); i += 4 {
		id := uuid.New()
		_, _, err := e.store.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: id, UserID: fmt.Sprintf("buyer-%d-%s", i, flash),
			EventID: flash, SeatIDs: seats[i:min(i+4, len(seats))]})
		require.NoError(t, err)
		if i == 0 {
			first = id
		}
	}

	a := browser(t, 4*time.Minute)
	signIn(t, a, base, "waiter_"+flash[4:])
	do(t, a, "open the sold-out event", chromedp.Navigate(base+"/#/event/"+flash), chromedp.WaitVisible(css(`#qstate`)))
	waitJS(t, a, `document.getElementById('qstate').dataset.status`, "sold_out", 30*time.Second)
	do(t, a, "join the waitlist for two seats",
		chromedp.SetValue(css(`#waitlist select[name=qty]`), "2"),
		chromedp.Click(css(`#waitlist button`)))
	waitJS(t, a, `document.getElementById('wlstate').dataset.status || ''`, "WAITING", 10*time.Second)
	require.Contains(t, js(t, a, `document.getElementById('wlstate').textContent`), "number 1 on the waitlist for 2 seats")

	// The first buyer lets their four seats go: the next round offers two
	// to the fan, whose open page takes them to the seat map with a pass.
	_, err = e.store.Holds.Release(ctx, first, "buyer-0-"+flash)
	require.NoError(t, err)
	round, err := offers.Round(ctx, flash)
	require.NoError(t, err)
	require.Len(t, round.Offered, 1)
	do(t, a, "the offer opens the seat map", chromedp.WaitVisible(css(`#map canvas[data-version]`)))
	require.NotEmpty(t, js(t, a, `sessionStorage.getItem('pass:`+flash+`') || ''`), "the offer's pass is kept")
	pickSeats(t, a, 2)
	require.NotEmpty(t, holdSelection(t, a), "the offer's pass lets the fan hold")
}
