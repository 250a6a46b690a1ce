package system_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/hotels"
)

// fanSizes are the screens the fan's hotel journeys are walked at: a
// phone (390x844) and a desktop (1366x900).
var fanSizes = []struct {
	name string
	w, h int64
}{{"phone", 390, 844}, {"desktop", 1366, 900}}

// showNight is the night of the stack's event a fan sleeps near it (the
// e2e venue's clocks are UTC's), and the night after it.
func showNight(t *testing.T, e *e2e) (string, string) {
	t.Helper()
	var starts time.Time
	require.NoError(t, e.store.Pool().QueryRow(context.Background(), `SELECT starts_at FROM events WHERE id = $1`, e.eventID).Scan(&starts))
	n := hotels.ShowNight(starts, "UTC")
	return n.Format(time.DateOnly), n.AddDate(0, 0, 1).Format(time.DateOnly)
}

// openHotels follows "Hotels near this event" from the event's page and
// waits for prop's offer on the hotel screen.
func openHotels(t *testing.T, tab context.Context, base, eventID, prop string) string {
	t.Helper()
	offer := `#properties li.property[data-property="` + prop + `"]`
	// The link is followed as soon as it shows, the seat map still
	// loading: the page left draws nothing over the hotels. It is clicked
	// as the element, not at its place on the screen: the page below the
	// map still moves as the map loads (a loaded CI runner once clicked
	// beside the link on a phone).
	do(t, tab, "the fan follows the event's link to the hotels near it",
		chromedp.Navigate(base+"/#/event/"+eventID),
		chromedp.WaitVisible(css(`#hotelslink`)),
		press(`#hotelslink`),
		chromedp.WaitVisible(css(offer+` li.room[data-room-type="double"] button.addseats`)),
	)
	return offer
}

// chooseNights sets the hotel screen's nights and waits for the room's
// prices for that many nights.
func chooseNights(t *testing.T, tab context.Context, offer string, n int) {
	t.Helper()
	js(t, tab, `(() => { const s = document.querySelector('#staysearch select[name=nights]'); s.value = '`+strconv.Itoa(n)+`';
		s.dispatchEvent(new Event('change', {bubbles: true})); return 'chosen' })()`)
	waitJS(t, tab, `String(document.querySelectorAll('`+offer+` li.room[data-room-type="double"] tr[data-night]').length)`, strconv.Itoa(n), 10*time.Second)
}

// holdTotal reads a hold's total (minor units) and its seat lines' prices
// from the API, with the fan's own token.
func holdTotal(t *testing.T, e *e2e, tab context.Context, holdID string) (total, seats int64) {
	t.Helper()
	status, h := e.call(http.MethodGet, "/v1/holds/"+holdID, js(t, tab, `sessionStorage.getItem('token')`), nil)
	require.Equal(t, http.StatusOK, status, "%v", h)
	for _, it := range h["items"].([]any) {
		line := it.(map[string]any)
		seats += int64(line["price"].(map[string]any)["amount"].(float64)) * int64(line["quantity"].(float64))
	}
	return int64(h["total"].(map[string]any)["amount"].(float64)), seats
}

// euros writes minor units as the English pages write euros ("€330.00").
func euros(minor int64) string { return fmt.Sprintf("€%d.%02d", minor/100, minor%100) }

// TestAFanFindsHotelsNearAnEventWithNightlyPricesAndBooksTwoNightsWithASeatInOneHoldAndPays:
// at phone and desktop sizes, a fan follows "Hotels near this event" from
// the event's page to a screen listing the hotels near the venue with each
// room's price night by night in the hotel's currency, the show's night
// preselected; the fan makes it two nights, adds the room to their seats,
// is back on the seat map with the room chosen, holds a seat, and the hold
// (one hold: seats and room-nights together) lists the seat and both
// room-nights with their prices and the total; paying gives the ticket and
// the hotel's voucher named by the hotel.
func TestAFanFindsHotelsNearAnEventWithNightlyPricesAndBooksTwoNightsWithASeatInOneHoldAndPays(t *testing.T) {
	t.Parallel()
	e, base := hotelStack(t)
	prop := e.hotel(2)
	night, next := showNight(t, e)
	first := browser(t, 6*time.Minute)
	for i, size := range fanSizes {
		fan := fanTab(t, first)
		do(t, fan, size.name, chromedp.EmulateViewport(size.w, size.h))
		signIn(t, fan, base, fmt.Sprintf("pkg%d_%s", i, e.eventID[4:]))
		offer := openHotels(t, fan, base, e.eventID, prop)
		room := offer + ` li.room[data-room-type="double"]`

		// The show's night is chosen already, priced in euros.
		require.Equal(t, "1", js(t, fan, `document.querySelector('#staysearch select[name=nights]').value`))
		require.Equal(t, night, js(t, fan, `document.getElementById('staydates').dataset.checkin`))
		require.Equal(t, "Hotel "+prop, text(t, fan, offer+` h2`))
		require.Equal(t, "12000", js(t, fan, `document.querySelector('`+room+` tr[data-night="`+night+`"] td.price').dataset.amount`))
		require.Equal(t, "EUR", js(t, fan, `document.querySelector('`+room+` tr[data-night="`+night+`"] td.price').dataset.currency`))
		require.Equal(t, "€120.00", text(t, fan, room+` tr[data-night="`+night+`"] td.price`))

		chooseNights(t, fan, offer, 2)
		require.Equal(t, next, js(t, fan, `document.querySelector('`+room+` tr[data-night]:last-child').dataset.night`))
		require.Contains(t, text(t, fan, room+` .staytotal`), "€240.00", "two nights' total")
		require.Contains(t, text(t, fan, `#staydates`), "2 nights")
		requireAccessible(t, fan, size.name+": hotels near the event")
		if size.name == "phone" {
			do(t, fan, "a 360 px phone", chromedp.EmulateViewport(360, 740))
			requireNoSidewaysScroll(t, fan, "hotels near the event")
			do(t, fan, "back to 390 px", chromedp.EmulateViewport(size.w, size.h))
		}
		screenshot(t, fan, size.name+" hotels near the event")

		do(t, fan, "the fan adds the room to their seats",
			chromedp.Click(css(room+` button.addseats`)),
			chromedp.WaitVisible(css(`#map canvas[data-version]`)),
			chromedp.WaitVisible(css(`#hotels label[data-property="`+prop+`"]`)),
		)
		require.Equal(t, "true", js(t, fan, `String(document.querySelector('#hotels label[data-property="`+prop+`"] input').checked)`),
			"the room chosen on the hotel screen is chosen beside the seats")
		require.Contains(t, text(t, fan, `#staynote`), "2 nights")

		pickSeatsFrom(t, fan, i*2, 1)
		holdID := holdSelection(t, fan)
		lines := `#holdstays li.roomnight[data-property="` + prop + `"]`
		waitJS(t, fan, `String(document.querySelectorAll('`+lines+`').length)`, "2", 10*time.Second)
		require.Equal(t, "1", js(t, fan, `String(document.querySelectorAll('.summary li[data-label]').length)`), "the seat's line")
		require.Equal(t, night+","+next, js(t, fan, `[...document.querySelectorAll('`+lines+`')].map(li => li.dataset.night).join(',')`))
		require.Contains(t, text(t, fan, lines+`:first-child`), "Hotel "+prop+", Double", "the room by its names")
		require.Contains(t, text(t, fan, lines+`:first-child`), "€120.00")
		total, seats := holdTotal(t, e, fan, holdID)
		require.Equal(t, seats+24000, total, "one hold: the seat and the two room-nights")
		require.Contains(t, text(t, fan, `.summary .total`), euros(total))
		require.Equal(t, i+1, e.count(`SELECT held + sold FROM room_nights WHERE property_id = $1 AND room_type = 'double' AND night = $2`, prop, next),
			"the room held for both nights, the earlier fan's sold")
		waitJS(t, fan, `document.getElementById('main').dataset.paymentForm || ''`, "ready", 30*time.Second)
		requireAccessible(t, fan, size.name+": a package's hold")
		if size.name == "phone" {
			requireNoSidewaysScroll(t, fan, "a package's hold")
		}
		screenshot(t, fan, size.name+" package hold")

		payWith(t, fan, e.pay.card())
		waitPaid(t, fan, 1)
		do(t, fan, "the voucher", chromedp.WaitVisible(css(`#vouchers li[data-property="`+prop+`"]`)))
		require.Contains(t, text(t, fan, `#vouchers`), "Hotel "+prop)
		require.Equal(t, "2", js(t, fan, `String(document.querySelectorAll('.summary li.roomnight').length)`), "the booking's summary lists the nights too")
		screenshot(t, fan, size.name+" package paid")
	}
}

// TestAFanBooksAHotelRoomWithoutSeatsFromTheHotelsNearAnEventAndPaysForTheStay:
// at phone and desktop sizes, a fan on the hotel screen presses "Book the
// room only": a hold of the room alone (no seats) whose summary lists its
// night and the total, paid on the ordinary hold page, giving the hotel's
// voucher and no ticket, and "My bookings" lists the stay by its hotel
// among the upcoming. Signed out, the same button asks the fan to sign in,
// in words, and a night that sells out as the fan presses it is refused in
// a sentence naming the night.
func TestAFanBooksAHotelRoomWithoutSeatsFromTheHotelsNearAnEventAndPaysForTheStay(t *testing.T) {
	t.Parallel()
	e, base := hotelStack(t)
	prop := e.hotel(2)
	night, _ := showNight(t, e)
	first := browser(t, 5*time.Minute)
	for i, size := range fanSizes {
		fan := fanTab(t, first)
		do(t, fan, size.name, chromedp.EmulateViewport(size.w, size.h))
		room := `#properties li.property[data-property="` + prop + `"] li.room[data-room-type="double"]`
		if i == 0 {
			do(t, fan, "the app, signed out", chromedp.Navigate(base+"/"), chromedp.WaitVisible(css(`#signin input[name=user]`)))
			openHotels(t, fan, base, e.eventID, prop)
			do(t, fan, "a signed-out fan presses Book the room only", chromedp.Click(css(room+` button.roomonly`)), chromedp.WaitVisible(css(`#problem`)))
			require.Equal(t, "Please sign in to book a room.", text(t, fan, `#problem`))
		}
		signIn(t, fan, base, fmt.Sprintf("stay%d_%s", i, e.eventID[4:]))
		openHotels(t, fan, base, e.eventID, prop)
		if i == 0 {
			// The night sells out while the fan looks: the refusal (an RFC
			// 9457 room-unavailable) reads as a sentence naming the night.
			setAllotment := func(n int) {
				_, err := e.store.Pool().Exec(context.Background(), `UPDATE room_nights SET allotment = $3 WHERE property_id = $1 AND night = $2`, prop, night, n)
				require.NoError(t, err)
			}
			setAllotment(0)
			do(t, fan, "the fan presses Book the room only as the night sells out",
				chromedp.Click(css(room+` button.roomonly`)), chromedp.WaitVisible(css(`#problem`)))
			require.Regexp(t, `^Sorry, the room was just taken for the night of \S+, \S+ \d+\. Please pick another room or other nights\.$`, text(t, fan, `#problem`))
			require.Contains(t, js(t, fan, `document.getElementById('problem').dataset.type`), "room-unavailable")
			setAllotment(5)
			openHotels(t, fan, base, e.eventID, prop)
		}
		do(t, fan, "the fan books the room alone",
			chromedp.Click(css(room+` button.roomonly`)),
			chromedp.WaitVisible(css(`#countdown`)),
			chromedp.WaitVisible(css(`#holdstays li.roomnight[data-property="`+prop+`"]`)),
		)
		holdID := js(t, fan, `location.hash.slice('#/hold/'.length)`)
		require.Equal(t, "Your room on hold", text(t, fan, `main h1`))
		require.Equal(t, "0", js(t, fan, `String(document.querySelectorAll('.summary li[data-label]').length)`), "no seats")
		require.Equal(t, night, js(t, fan, `document.querySelector('#holdstays li.roomnight').dataset.night`))
		total, seats := holdTotal(t, e, fan, holdID)
		require.Zero(t, seats)
		require.Equal(t, int64(12000), total)
		require.Contains(t, text(t, fan, `.summary .total`), "€120.00")
		waitJS(t, fan, `document.getElementById('main').dataset.paymentForm || ''`, "ready", 30*time.Second)
		requireAccessible(t, fan, size.name+": a hotel-only hold")
		if size.name == "phone" {
			do(t, fan, "a 360 px phone", chromedp.EmulateViewport(360, 740))
			requireNoSidewaysScroll(t, fan, "a hotel-only hold")
			do(t, fan, "back to 390 px", chromedp.EmulateViewport(size.w, size.h))
		}
		screenshot(t, fan, size.name+" hotel-only hold")

		payWith(t, fan, e.pay.card())
		waitPaid(t, fan, 0)
		do(t, fan, "the voucher", chromedp.WaitVisible(css(`#vouchers li[data-property="`+prop+`"]`)))
		require.Contains(t, text(t, fan, `#vouchers`), "Hotel "+prop)
		screenshot(t, fan, size.name+" stay paid")

		// My bookings names the stay (it has no event) among the upcoming.
		mine := `ul.bookings li[data-booking="` + holdID + `"]`
		do(t, fan, "my bookings", chromedp.Navigate(base+"/#/bookings"), chromedp.WaitVisible(css(mine)))
		require.Equal(t, "Upcoming", text(t, fan, `#bookings h2`))
		require.Contains(t, text(t, fan, mine), "Hotel stay")
		require.Contains(t, text(t, fan, mine), "Hotel "+prop+", Double")
		require.Contains(t, text(t, fan, mine), "€120.00")
		requireAccessible(t, fan, size.name+": my bookings with a stay")
	}
}

// TestABrowserInDutchShowsTheHotelResaleAndTransferPagesInDutch: with the
// browser's language Dutch, at phone and desktop sizes, the hotels near an
// event read in Dutch with prices and nights the Dutch way; after buying a
// seat, "My tickets" offers to sell (the face value prefilled with a
// decimal comma) and to send the ticket in Dutch, a sent ticket says so in
// Dutch, and the resale page, "My listings" and a transfer's page read in
// Dutch.
func TestABrowserInDutchShowsTheHotelResaleAndTransferPagesInDutch(t *testing.T) {
	t.Parallel()
	e, base := hotelStack(t)
	_, err := e.store.Pool().Exec(context.Background(), `UPDATE events SET resale_enabled = true, resale_max_price_bp = 10000, resale_fee_bp = 500 WHERE id = $1`, e.eventID)
	require.NoError(t, err)
	prop := e.hotel(2)
	first := browser(t, 5*time.Minute)
	for i, size := range fanSizes {
		fan := fanTab(t, first)
		do(t, fan, size.name, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+"/"), chromedp.WaitVisible(css(`#signin input[name=user]`)))
		inDutch(t, fan)
		do(t, fan, "reload in Dutch", chromedp.Reload(), chromedp.WaitVisible(css(`#events li a`)))
		require.Equal(t, "nl", js(t, fan, `document.documentElement.lang`))
		signIn(t, fan, base, fmt.Sprintf("nlstay%d_%s", i, e.eventID[4:]))

		// The hotels.
		offer := openHotels(t, fan, base, e.eventID, prop)
		room := offer + ` li.room[data-room-type="double"]`
		require.Equal(t, "Hotels bij dit evenement", text(t, fan, `main h1`))
		require.Equal(t, "Nachten", js(t, fan, `document.querySelector('#staysearch label').firstChild.textContent.trim()`))
		require.Contains(t, text(t, fan, `#staydates`), "1 nacht")
		require.Contains(t, text(t, fan, `#staydates`), "Inchecken")
		require.Equal(t, "€\u00a0120,00", js(t, fan, `document.querySelector('`+room+` td.price').textContent`), "euros the Dutch way")
		require.Equal(t, "Bij mijn plaatsen "+"Double, Hotel "+prop, text(t, fan, room+` button.addseats`))
		require.Contains(t, text(t, fan, room+` button.roomonly`), "Alleen de kamer boeken")
		require.Contains(t, text(t, fan, room+` .staytotal`), "Totaal voor het verblijf")
		requireAccessible(t, fan, size.name+": hotels in Dutch")
		screenshot(t, fan, size.name+" hotels in Dutch")

		// A ticket, to sell or send.
		do(t, fan, "the event", chromedp.Navigate(base+"/#/event/"+e.eventID), chromedp.WaitVisible(css(`#map canvas[data-version]`)),
			chromedp.WaitVisible(css(`#hotelslink`)))
		require.Equal(t, "Hotels bij dit evenement", text(t, fan, `#hotelslink`))
		pickSeatsFrom(t, fan, i*2, 1)
		holdSelection(t, fan)
		payWith(t, fan, e.pay.card())
		waitPaid(t, fan, 1)
		do(t, fan, "my tickets", chromedp.Navigate(base+"/#/tickets"), chromedp.WaitVisible(css(`#tickets .transfer summary`)),
			chromedp.WaitVisible(css(`#tickets .resale summary`)))
		require.Equal(t, "Verkoop dit ticket", text(t, fan, `#tickets .resale summary`))
		require.Equal(t, "Stuur dit ticket naar iemand", text(t, fan, `#tickets .transfer summary`))
		do(t, fan, "open both", chromedp.Click(css(`#tickets .resale summary`)), chromedp.Click(css(`#tickets .transfer summary`)))
		require.Equal(t, "Te koop zetten", text(t, fan, `#tickets .resale form button`))
		waitJS(t, fan, `(v => /^\d+,\d\d$/.test(v) ? 'a Dutch amount' : v)(document.querySelector('#tickets .sellform input[name=price]').value)`,
			"a Dutch amount", 10*time.Second)
		require.Contains(t, text(t, fan, `#tickets .resale form .note`), "Een andere fan koopt het")
		require.Equal(t, "Ticket versturen", text(t, fan, `#tickets .transfer form button`))
		requireAccessible(t, fan, size.name+": selling and sending in Dutch")
		screenshot(t, fan, size.name+" my tickets in Dutch")
		do(t, fan, "send the ticket to a friend",
			chromedp.SendKeys(css(`#tickets .transfer input[name=to]`), fmt.Sprintf("friend%d@example.com", i)),
			chromedp.Click(css(`#tickets .transfer form button`)),
			chromedp.WaitVisible(css(`#tickets .transfer p[data-status=PENDING]`)))
		require.Contains(t, text(t, fan, `#tickets .transfer p[data-status=PENDING]`), "Verstuurd naar")
		require.Equal(t, "Terugtrekken", text(t, fan, `#tickets .transfer button`))

		// Resale, listings, a transfer's page.
		do(t, fan, "the resale page", chromedp.Navigate(base+"/#/event/"+e.eventID+"/resale"), chromedp.WaitVisible(css(`#nolistings`)))
		require.Equal(t, "Doorverkochte tickets", text(t, fan, `main h1`))
		require.Contains(t, text(t, fan, `#main .note`), "Tickets die andere fans niet kunnen gebruiken")
		require.Contains(t, text(t, fan, `#nolistings`), "Er worden nu geen tickets doorverkocht")
		requireAccessible(t, fan, size.name+": resale in Dutch")
		if size.name == "phone" {
			do(t, fan, "a 360 px phone", chromedp.EmulateViewport(360, 740))
			requireNoSidewaysScroll(t, fan, "resale in Dutch")
			do(t, fan, "back to 390 px", chromedp.EmulateViewport(size.w, size.h))
		}
		screenshot(t, fan, size.name+" resale in Dutch")
		do(t, fan, "my listings", chromedp.Navigate(base+"/#/listings"), chromedp.WaitVisible(css(`#mylistings p a[href="#/tickets"]`)))
		require.Equal(t, "Mijn aanbiedingen", text(t, fan, `main h1`))
		require.Contains(t, text(t, fan, `#mylistings`), "Je hebt geen ticket te koop gezet")
		do(t, fan, "a transfer that is not theirs", chromedp.Navigate(base+"/#/transfer/trf_nobody"), chromedp.WaitVisible(css(`#transfer p`)))
		require.Equal(t, "Een ticket voor jou", text(t, fan, `main h1`))
		require.Contains(t, text(t, fan, `#transfer p`), "Deze overdracht is niet aan jou gericht")
		requireAccessible(t, fan, size.name+": a transfer in Dutch")
	}
}
