package system_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
)

// inTimezone has the tab's clocks read zone's time, as a visitor's there.
func inTimezone(zone string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		return chromedp.Void{}, err
	}
}

// TestAVisitorFromNewYorkOnAPhoneAndADesktopReadsTheShowInAmsterdamTimeTheSeatsByNameAndFindsTheBookingAgain
// walks a fan's purchase at phone (390x844) and desktop (1366x900) sizes, a
// fan each, with the browser's clock in New York, for a show in Amsterdam.
// Times read in the venue's zone, labelled with it, the visitor's own time
// beside them; the hold, the booking and its ticket name the event, the venue
// and the seat by its labels, never by its ID; the status reads in words; and
// "My bookings" lists the booking with a link back to it, whose page states
// the cancellation's deadline and refund before the fan confirms, then shows
// the booking refunded.
func TestAVisitorFromNewYorkOnAPhoneAndADesktopReadsTheShowInAmsterdamTimeTheSeatsByNameAndFindsTheBookingAgain(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	ctx := context.Background()
	// The stack's venue is in Amsterdam, the show at 20:00 UTC.
	_, err := e.store.Pool().Exec(ctx, `UPDATE venues SET city = 'Amsterdam', timezone = 'Europe/Amsterdam', name = 'E2E Hall'
		WHERE id = (SELECT venue_id FROM events WHERE id = $1)`, e.eventID)
	require.NoError(t, err)
	starts := time.Now().AddDate(0, 1, 0).Truncate(24 * time.Hour).Add(20 * time.Hour)
	_, err = e.store.Pool().Exec(ctx, `UPDATE events SET starts_at = $2 WHERE id = $1`, e.eventID, starts)
	require.NoError(t, err)
	ams, err := time.LoadLocation("Europe/Amsterdam")
	require.NoError(t, err)
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	// Headless Chromium's locale is en-US: a 12-hour clock.
	venueClock, visitorClock := starts.In(ams).Format("03:04 PM"), starts.In(ny).Format("03:04 PM")

	first := browser(t, 6*time.Minute)
	for i, size := range journeySizes() {
		a := fanTab(t, first)
		do(t, a, "a "+size.name+" in New York", chromedp.EmulateViewport(size.w, size.h), inTimezone("America/New_York"))
		signInAndOpen(t, a, base, fmt.Sprintf("nyc%d_%s", i, e.eventID[4:]), e.eventID)
		when := js(t, a, `document.querySelector('#main .when').textContent`)
		t.Logf("the show reads %q", when)
		require.Contains(t, when, venueClock, "the show's time on Amsterdam's clocks")
		require.Contains(t, when, "Amsterdam time")
		require.Contains(t, when, visitorClock, "and on the visitor's: %s", when)
		require.Contains(t, when, "your time")

		seat := pickSeatsFrom(t, a, i*2, 1)[0]
		var row string
		var number int
		require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT row_label, number FROM seats WHERE id = $1`, seat).Scan(&row, &number))
		label := fmt.Sprintf("A, Row %s, Seat %d", row, number)
		hold := holdSelection(t, a)
		waitJS(t, a, `String(!!document.querySelector('.summary li[data-label]'))`, "true", 10*time.Second)
		summary := js(t, a, `document.querySelector('.summary').textContent`)
		require.Contains(t, summary, label, "the hold names the seat as the venue does")
		require.Contains(t, summary, "E2E Hall, Amsterdam")
		require.Contains(t, summary, "Amsterdam time")
		require.NotContains(t, js(t, a, `document.getElementById('main').textContent`), seat, "no seat ID on the hold page")
		require.Equal(t, "0", js(t, a, `String(document.documentElement.scrollWidth - document.documentElement.clientWidth)`),
			"the hold page fits the screen's width")
		screenshot(t, a, size.name+" hold named")

		payWith(t, a, e.pay.card())
		waitPaid(t, a, 1)
		require.Equal(t, "Paid", js(t, a, `document.getElementById('bstatus').textContent`), "the status in words")
		require.Equal(t, label, js(t, a, `document.querySelector('#tickets h3').textContent`), "the ticket names its seat")
		require.Contains(t, js(t, a, `document.querySelector('#bsummary').textContent`), label)
		require.NotContains(t, js(t, a, `document.getElementById('main').textContent`), seat, "no seat ID on the booking page")
		screenshot(t, a, size.name+" booking named")

		do(t, a, "my bookings", chromedp.Navigate(base+"/#/bookings"), chromedp.WaitVisible(css(`li[data-booking="`+hold+`"]`)))
		entry := js(t, a, `document.querySelector('li[data-booking="`+hold+`"]').textContent`)
		require.Contains(t, entry, "Paid")
		require.Contains(t, entry, label)
		require.Contains(t, entry, "E2E")
		require.True(t, strings.HasSuffix(js(t, a, `document.querySelector('li[data-booking="`+hold+`"] a').href`), "#/booking/"+hold),
			"the entry links to its booking")
		require.Contains(t, js(t, a, `document.querySelector('#bookings').textContent`), "Upcoming")
		screenshot(t, a, size.name+" my bookings")

		// Back on the booking, the cancellation's terms come before the
		// confirmation: until when (in the venue's zone) and how much.
		do(t, a, "open the booking from the list", chromedp.Click(css(`li[data-booking="`+hold+`"] a`)), chromedp.WaitVisible(css(`#terms`)))
		terms := js(t, a, `document.getElementById('terms').textContent`)
		require.Contains(t, terms, "You can cancel until")
		require.Contains(t, terms, "Amsterdam time")
		require.Equal(t, js(t, a, `document.querySelector('.summary .total strong').textContent`), js(t, a, `document.querySelector('#terms strong').textContent`),
			"the refund is the total paid")
		screenshot(t, a, size.name+" cancellation terms")
		// Pressed from the page: the tickets' codes load meanwhile and move the
		// button, which a click at its earlier place would miss.
		press := `(() => { document.getElementById('cancelbtn').click(); return document.getElementById('cancelbtn').textContent })()`
		require.Contains(t, js(t, a, press), "Yes, cancel and refund", "a second press confirms")
		js(t, a, press)
		waitJS(t, a, `(document.getElementById('bstatus') || {dataset: {}}).dataset.status || ''`, "REFUNDED", time.Minute)
		require.Equal(t, "Cancelled and refunded", js(t, a, `document.getElementById('bstatus').textContent`))
		require.Contains(t, js(t, a, `document.querySelector('#bsummary').textContent`), label, "the page still says what was booked")
	}
}

// TestAFansPendingHoldIsOnePressAwayFromTheHeaderAndFromTheRefusalOfASecondHold:
// at phone and desktop sizes, a fan who left a hold unpaid sees it in the
// header, with its time left, on every page; a second hold for the event is
// refused with a button that leads back to the first.
func TestAFansPendingHoldIsOnePressAwayFromTheHeaderAndFromTheRefusalOfASecondHold(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	first := browser(t, 5*time.Minute)
	for i, size := range journeySizes() {
		a := fanTab(t, first)
		do(t, a, size.name, chromedp.EmulateViewport(size.w, size.h))
		signInAndOpen(t, a, base, fmt.Sprintf("back%d_%s", i, e.eventID[4:]), e.eventID)
		pickSeatsFrom(t, a, i*4, 1)
		hold := holdSelection(t, a)

		do(t, a, "back to the event", chromedp.Navigate(base+"/#/event/"+e.eventID), chromedp.WaitVisible(css(`#map canvas[data-version]`)),
			chromedp.WaitVisible(css(`#pendinghold`)))
		require.True(t, strings.HasSuffix(js(t, a, `document.getElementById('pendinghold').href`), "#/hold/"+hold))
		require.Regexp(t, `^Your hold: \d+:\d\d left$`, js(t, a, `document.getElementById('pendinghold').textContent`))
		screenshot(t, a, size.name+" the hold in the header")

		pickSeatsFrom(t, a, i*4+2, 1)
		do(t, a, "a second hold", chromedp.Click(css(`#hold`)), chromedp.WaitVisible(css(`#problem button`)))
		require.Equal(t, "/problems/pending-checkout", js(t, a, `document.getElementById('problem').dataset.type`))
		require.Equal(t, "Go to your hold", js(t, a, `document.querySelector('#problem button').textContent`))
		do(t, a, "go to the first hold", chromedp.Click(css(`#problem button`)), chromedp.WaitVisible(css(`#countdown`)))
		require.Equal(t, "#/hold/"+hold, js(t, a, `location.hash`))
		require.Equal(t, "true", js(t, a, `String(document.getElementById('pendinghold').hidden)`), "the header's link hides on the hold itself")
	}
}

// TestAFailedThreeDSecureCheckSaysOneThingAndOffersAnotherCard: at phone and
// desktop sizes, after the bank's check fails, the booking page says so once,
// with a way to pay with another card, and nothing that still asks to confirm
// or to wait.
func TestAFailedThreeDSecureCheckSaysOneThingAndOffersAnotherCard(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	first := browser(t, 5*time.Minute)
	for i, size := range journeySizes() {
		a := fanTab(t, first)
		do(t, a, size.name, chromedp.EmulateViewport(size.w, size.h))
		signInAndOpen(t, a, base, fmt.Sprintf("fails3ds%d_%s", i, e.eventID[4:]), e.eventID)
		pickSeatsFrom(t, a, i*2, 1)
		hold := holdSelection(t, a)
		payWith(t, a, "pm_card_threeDSecure2Required")
		do(t, a, "the bank's page", chromedp.WaitVisible(`//button[@value="fail"]`))
		do(t, a, "fail the check", chromedp.Click(`//button[@value="fail"]`))
		do(t, a, "back on the booking page", chromedp.WaitVisible(css(`#bstatus`)), chromedp.WaitVisible(css(`#problem button`)))
		require.Equal(t, "#/booking/"+hold, js(t, a, `location.hash`))
		require.Contains(t, js(t, a, `document.getElementById('problem').textContent`), "did not go through")
		require.Equal(t, "Try another card", js(t, a, `document.querySelector('#problem button').textContent`))
		require.Equal(t, "Payment not completed", js(t, a, `document.getElementById('bstatus').textContent`))
		page := js(t, a, `document.getElementById('main').textContent`)
		require.NotContains(t, page, "Waiting", "no waiting once the check failed")
		require.NotContains(t, page, "Confirm the payment", "no confirming a failed check")
		require.Equal(t, "false", js(t, a, `String(!!document.getElementById('verify'))`))
		screenshot(t, a, size.name+" the failed check")
	}
}

// TestASignedOutFanOnAPhoneOrADesktopIsAskedToSignInBesideTheHoldButtonAndKeepsTheSeatsChosen:
// at phone and desktop sizes, signed out, "Hold" asks for sign-in right where
// the fan is looking (inside the phone's screen), the button stays usable, and
// after signing in with the header's form the same seats are still chosen and
// held.
func TestASignedOutFanOnAPhoneOrADesktopIsAskedToSignInBesideTheHoldButtonAndKeepsTheSeatsChosen(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	first := browser(t, 5*time.Minute)
	for i, size := range journeySizes() {
		a := fanTab(t, first)
		do(t, a, "a "+size.name+", signed out, on the event", chromedp.EmulateViewport(size.w, size.h),
			chromedp.Navigate(base+"/#/event/"+e.eventID), chromedp.WaitVisible(css(`#map canvas[data-version]`)))
		chosen := pickSeatsFrom(t, a, i*3, 2)
		do(t, a, "hold while signed out", chromedp.Click(css(`#hold`)), chromedp.WaitVisible(css(`#holdprompt`)))
		require.Contains(t, js(t, a, `document.getElementById('holdprompt').textContent`), "Sign in to hold these seats")
		require.Equal(t, "inside", js(t, a, `(() => { const r = document.getElementById('holdprompt').getBoundingClientRect();
			return r.top >= 0 && r.bottom <= innerHeight ? 'inside' : 'outside ' + r.top + '-' + r.bottom + ' of ' + innerHeight })()`),
			"the prompt is on the screen, where the fan pressed")
		require.Equal(t, "false", js(t, a, `String(document.getElementById('hold').disabled)`), "the button stays usable")

		screenshot(t, a, size.name+" asked to sign in")
		user := fmt.Sprintf("%s_%s", size.name, e.eventID[4:])
		do(t, a, "sign in from the prompt", chromedp.Click(css(`#holdprompt button`)),
			chromedp.SendKeys(css(`#signin input[name=user]`), user), chromedp.SendKeys(css(`#signin input[name=email]`), user+"@example.com"),
			chromedp.Click(css(`#signin button`)), chromedp.WaitVisible(css(`#signout`)))
		waitJS(t, a, `[...document.querySelectorAll('#selection li[data-seat]')].map(li => li.dataset.seat).join(',')`,
			strings.Join(chosen, ","), 20*time.Second)
		screenshot(t, a, size.name+" the seats kept")
		hold := holdSelection(t, a)
		require.Equal(t, 2, e.count(`SELECT count(*) FROM seats WHERE reservation_id = $1 AND id = ANY($2)`, hold, chosen),
			"the seats chosen before signing in are the ones held")
	}
}

// TestAPageThatCannotLoadIsReplacedByAPlainExplanationAndLoadsOnTryAgain:
// at phone and desktop sizes, reads ride out a short loss of connection by
// themselves; a longer one replaces the page (not the previous page left on
// screen under an error) with what happened in words, never the browser's own
// text, and a Try again that loads it once the connection is back.
func TestAPageThatCannotLoadIsReplacedByAPlainExplanationAndLoadsOnTryAgain(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	first := browser(t, 4*time.Minute)
	for _, size := range journeySizes() {
		a := fanTab(t, first)
		do(t, a, "the events list on a "+size.name, chromedp.EmulateViewport(size.w, size.h),
			chromedp.Navigate(base+"/"), chromedp.WaitVisible(css(`#events li a`)))
		// The event's page fails twice, as a blip does, then loads: no error.
		js(t, a, `(() => { window.realFetch = window.fetch; window.failures = 2; window.fetch = (input, init) =>
			String(input).includes('/v1/events/`+e.eventID+`') && window.failures-- > 0
				? Promise.reject(new TypeError('Failed to fetch')) : window.realFetch(input, init); return 'blip' })()`)
		do(t, a, "open the event through the blip", chromedp.Click(css(`#events li a`)), chromedp.WaitVisible(css(`#map canvas[data-version]`)))
		require.Equal(t, "true", js(t, a, `String(document.getElementById('problem').hidden)`), "a blip the retries rode out says nothing")

		// Then the connection is gone for good.
		js(t, a, `(() => { window.fetch = (input, init) => String(input).includes('/v1/events')
			? Promise.reject(new TypeError('Failed to fetch')) : window.realFetch(input, init); return 'offline' })()`)
		do(t, a, "back to the list, offline", chromedp.Navigate(base+"/#/"), chromedp.WaitVisible(css(`#retry`)))
		page := js(t, a, `document.getElementById('main').innerText`)
		require.Contains(t, page, "We could not show this page")
		require.Contains(t, page, "could not reach Encore")
		require.NotContains(t, js(t, a, `document.body.innerText`), "Failed to fetch", "no browser error text reaches the fan")
		require.Equal(t, "false", js(t, a, `String(!!document.querySelector('#map'))`), "the previous page is gone")
		screenshot(t, a, size.name+" the error page")

		js(t, a, `(() => { window.fetch = window.realFetch; return 'online' })()`)
		do(t, a, "try again", chromedp.Click(css(`#retry`)), chromedp.WaitVisible(css(`#events li a`)))
		require.Equal(t, "true", js(t, a, `String(document.getElementById('problem').hidden)`))
	}
}

// TestAnOrganiserInNewYorkTypesTheShowsTimeOnTheAmsterdamVenuesClocks: at
// phone and desktop sizes, an organiser whose browser is in New York creates
// an event at a venue in Amsterdam; the 20:00 typed is 20:00 in Amsterdam
// (18:00 UTC in June), and the event's page shows it so, the zone named. The
// venue form no longer fills in the browser's zone for the venue's.
func TestAnOrganiserInNewYorkTypesTheShowsTimeOnTheAmsterdamVenuesClocks(t *testing.T) {
	t.Parallel()
	e, base := organiserStack(t)
	first := browser(t, 4*time.Minute)
	suffix := testenv.RandomSuffix()
	layout, err := filepath.Abs(filepath.Join("testdata", "organiser_layout.json"))
	require.NoError(t, err)
	for i, size := range journeySizes() {
		o := fanTab(t, first)
		do(t, o, "a "+size.name+" in New York", chromedp.EmulateViewport(size.w, size.h), inTimezone("America/New_York"))
		organiserSignsIn(t, o, base, fmt.Sprintf("nyc%d_%s", i, suffix), fmt.Sprintf("org_nyc%d_%s", i, suffix))
		do(t, o, "upload the Amsterdam venue", chromedp.Navigate(base+"/organiser/#/venues"), chromedp.WaitVisible(css(`#upload input[name=file]`)))
		require.Empty(t, js(t, o, `document.querySelector('#upload input[name=timezone]').value`), "the venue's zone is not the browser's")
		do(t, o, "uploaded", chromedp.SetUploadFiles(css(`#upload input[name=file]`), []string{layout}), chromedp.Click(css(`#uploadbtn`)),
			chromedp.WaitVisible(css(`#newhere`)))
		do(t, o, "a draft at 20:00", chromedp.Click(css(`#newhere`)), chromedp.WaitVisible(css(`#newevent input[name="prices.stalls"]`)))
		require.Contains(t, js(t, o, `document.getElementById('zone').textContent`), "Europe/Amsterdam")
		require.True(t, strings.HasSuffix(js(t, o, `document.querySelector('#newevent input[name=starts_at]').value`), "T20:00"),
			"the default start is 20:00 on the venue's clocks")
		do(t, o, "create", chromedp.SetValue(css(`#newevent input[name=title]`), "Summer Night "+size.name+" "+suffix),
			chromedp.SetValue(css(`#newevent input[name=starts_at]`), "2027-06-01T20:00"),
			chromedp.SetValue(css(`#newevent input[name="prices.stalls"]`), "45"), chromedp.SetValue(css(`#newevent input[name="prices.standing"]`), "25"),
			chromedp.Click(css(`#create`)), chromedp.WaitVisible(css(`#publish`)))
		eventID := js(t, o, `decodeURIComponent(location.hash.split('/')[2])`)
		var starts time.Time
		require.NoError(t, e.store.Pool().QueryRow(context.Background(), `SELECT starts_at FROM events WHERE id = $1`, eventID).Scan(&starts))
		require.Equal(t, time.Date(2027, 6, 1, 18, 0, 0, 0, time.UTC), starts.UTC(), "20:00 in Amsterdam, not in New York")
		facts := js(t, o, `document.querySelector('.facts').textContent`)
		require.Contains(t, facts, "8:00 PM (Europe/Amsterdam)", "the page shows the venue's clock: %s", facts)
		screenshot(t, o, size.name+" the venue's clock")
	}
}

// TestAKeyboardUserSkipsToTheContentAndToTheSeatMapInFourKeysAndSeesWhereTheFocusIs:
// at phone and desktop sizes, the first Tab reaches "Skip to content", Enter
// lands in the page, the next Tab reaches "Skip to the seat map", and Enter
// puts the focus on the map (the issue counted 26 Tabs); the focus ring stands
// out at least 3:1 against the page.
func TestAKeyboardUserSkipsToTheContentAndToTheSeatMapInFourKeysAndSeesWhereTheFocusIs(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	first := browser(t, 3*time.Minute)
	for i, size := range journeySizes() {
		a := fanTab(t, first)
		do(t, a, size.name, chromedp.EmulateViewport(size.w, size.h))
		signInAndOpen(t, a, base, fmt.Sprintf("keys%d_%s", i, e.eventID[4:]), e.eventID)
		// A fresh load: the keyboard starts from the top of the page.
		do(t, a, "load the event's page", chromedp.Reload(), chromedp.WaitVisible(css(`#map canvas[data-version]`)))
		focused := `(() => { const f = document.activeElement; return f ? (f.id || f.tagName.toLowerCase()) : '' })()`
		do(t, a, "Tab", chromedp.KeyEvent(kb.Tab))
		require.Equal(t, "skip", js(t, a, focused))
		require.Equal(t, "Skip to content", js(t, a, `document.activeElement.textContent`))
		ring := js(t, a, `getComputedStyle(document.activeElement).outlineColor`)
		do(t, a, "Enter", chromedp.KeyEvent(kb.Enter))
		require.Equal(t, "main", js(t, a, focused))
		do(t, a, "Tab", chromedp.KeyEvent(kb.Tab))
		require.Equal(t, "tomap", js(t, a, focused))
		do(t, a, "Enter", chromedp.KeyEvent(kb.Enter))
		require.Equal(t, "canvas", js(t, a, focused), "the seat map has the focus")
		screenshot(t, a, size.name+" the focus on the map")

		var r, g, b int
		_, err := fmt.Sscanf(ring, "rgb(%d, %d, %d)", &r, &g, &b)
		require.NoError(t, err, ring)
		require.GreaterOrEqual(t, contrast(r, g, b, 255, 255, 255), 3.0, "the focus ring %s against the white page", ring)
	}
}

// contrast is WCAG's contrast ratio of two sRGB colours.
func contrast(r1, g1, b1, r2, g2, b2 int) float64 {
	lum := func(r, g, b int) float64 {
		c := func(v int) float64 {
			x := float64(v) / 255
			if x <= 0.03928 {
				return x / 12.92
			}
			return math.Pow((x+0.055)/1.055, 2.4)
		}
		return 0.2126*c(r) + 0.7152*c(g) + 0.0722*c(b)
	}
	l1, l2 := lum(r1, g1, b1), lum(r2, g2, b2)
	return (max(l1, l2) + 0.05) / (min(l1, l2) + 0.05)
}

// TestZoomingIntoTheSeatMapShowsEachRowsLabel: at phone and desktop sizes,
// zoomed in far enough to tell seats apart, the map labels each row beside
// its first seat, as the venue's signs do.
func TestZoomingIntoTheSeatMapShowsEachRowsLabel(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	first := browser(t, 3*time.Minute)
	for i, size := range journeySizes() {
		a := fanTab(t, first)
		do(t, a, size.name, chromedp.EmulateViewport(size.w, size.h))
		signInAndOpen(t, a, base, fmt.Sprintf("zoom%d_%s", i, e.eventID[4:]), e.eventID)
		do(t, a, "zoom in", chromedp.Click(css(`#zin`)), chromedp.Click(css(`#zin`)), chromedp.Click(css(`#zin`)))
		waitJS(t, a, `(() => { const n = Number(document.querySelector('#map canvas').dataset.rowLabels || 0); return n > 0 ? 'labelled' : String(n) })()`,
			"labelled", 10*time.Second)
		screenshot(t, a, size.name+" rows labelled")
	}
}

// TestAMouseRestingOnASeatShowsItsRowNumberStateAndPrice: hover details on
// the seat map, beside the pointer, gone when the pointer leaves, on a
// desktop (a phone's finger resting on a seat is
// TestOnAPhoneBestAvailableComesFirstATapZoomsToFingerSizedSeatsAndALongPressShowsASeat).
func TestAMouseRestingOnASeatShowsItsRowNumberStateAndPrice(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	a := browser(t, 2*time.Minute)
	do(t, a, "the event on a desktop", chromedp.EmulateViewport(1366, 900),
		chromedp.Navigate(base+"/#/event/"+e.eventID), chromedp.WaitVisible(css(`#map canvas[data-version]`)))
	// Zoomed in on the first seat, where a seat is large enough to aim at.
	at := js(t, a, `(() => { const m = document.getElementById('map').seatmap, c = m.canvas.getBoundingClientRect();
		m.zoom(6, m.xs[0] * m.view.k + m.view.x, m.ys[0] * m.view.k + m.view.y);
		return (c.left + m.xs[0] * m.view.k + m.view.x) + ',' + (c.top + m.ys[0] * m.view.k + m.view.y) })()`)
	var x, y float64
	_, err := fmt.Sscanf(at, "%g,%g", &x, &y)
	require.NoError(t, err)
	do(t, a, "rest the mouse on the seat", chromedp.MouseEvent(chromedp.MouseMoved, x, y))
	waitJS(t, a, `document.querySelector('#map .seattip').hidden ? '' : 'shown'`, "shown", 5*time.Second)
	tip := js(t, a, `document.querySelector('#map .seattip').textContent`)
	require.Regexp(t, `Row \S+, seat \d+, available, `, tip)
	require.Equal(t, js(t, a, `document.getElementById('map').seatmap.seats[0].id`), js(t, a, `document.querySelector('#map .seattip').dataset.seat`))
	screenshot(t, a, "desktop seat details")
	do(t, a, "move the mouse away", chromedp.MouseEvent(chromedp.MouseMoved, 1, 1))
	waitJS(t, a, `document.querySelector('#map .seattip').hidden ? 'hidden' : ''`, "hidden", 5*time.Second)
}

// TestAvailableSeatsAreColouredByPriceWithALegendOfThePrices: at phone and
// desktop sizes, a map with several prices colours each available seat by its price, dearest first,
// and the legend names each colour's price.
func TestAvailableSeatsAreColouredByPriceWithALegendOfThePrices(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	// The stack's one section gets two prices: its first row dearer.
	_, err := e.store.Pool().Exec(context.Background(), `UPDATE seats SET base_price = 9000
		WHERE event_id = $1 AND row_label = (SELECT min(row_label) FROM seats WHERE event_id = $1)`, e.eventID)
	require.NoError(t, err)
	first := browser(t, 3*time.Minute)
	for _, size := range journeySizes() {
		a := fanTab(t, first)
		do(t, a, "the event on a "+size.name, chromedp.EmulateViewport(size.w, size.h),
			chromedp.Navigate(base+"/#/event/"+e.eventID), chromedp.WaitVisible(css(`.legend [data-price]`)))
		prices := js(t, a, `(() => { const m = document.getElementById('map').seatmap;
			return [...new Set(m.seats.map(s => s.price.amount))].sort((x, y) => y - x).join(',') })()`)
		distinct := strings.Split(prices, ",")
		require.GreaterOrEqual(t, len(distinct), 2)
		require.Equal(t, "9000", distinct[0])
		require.Equal(t, fmt.Sprint(min(len(distinct), 4)), js(t, a, `String(document.querySelectorAll('.legend [data-price]').length)`))
		require.Contains(t, js(t, a, `document.querySelector('.legend [data-price]').textContent`), "available, ")
		require.Equal(t, "9000", js(t, a, `document.querySelector('.legend [data-price]').dataset.price`), "dearest first")
		require.Equal(t, "false", js(t, a, `String(!!document.querySelector('.legend [data-state=available]'))`))
		// A seat of the dearest price is painted in the first price colour, one
		// of the next price in the second.
		colourAt := `(i => { const m = document.getElementById('map').seatmap, c = m.canvas, d = window.devicePixelRatio || 1;
			m.zoom(6, m.xs[i] * m.view.k + m.view.x, m.ys[i] * m.view.k + m.view.y); m.paint();
			const p = c.getContext('2d').getImageData(Math.round((m.xs[i] * m.view.k + m.view.x) * d) - 1, Math.round((m.ys[i] * m.view.k + m.view.y + m.sections[0].radius * m.view.k * 0.6) * d), 1, 1).data;
			return [p[0], p[1], p[2]].join(',') })`
		seatOf := func(amount string) string {
			return `document.getElementById('map').seatmap.seats.findIndex(s => s.price.amount === ` + amount + ` && s.status.toLowerCase() === 'available')`
		}
		screenshot(t, a, size.name+" prices by colour")
		dear := js(t, a, colourAt+`(`+seatOf(distinct[0])+`)`)
		next := js(t, a, colourAt+`(`+seatOf(distinct[1])+`)`)
		require.Equal(t, "30,122,58", dear, "the dearer row in the first price colour")
		require.Equal(t, "10,106,138", next, "the next price's colour")
	}
}

// TestOnAPhoneTheSeatMapIsOnTheFirstScreenWithTheSectionListFolded: at
// phone size the section list starts folded (one line to open it), so the
// seat map starts inside the first screen; on a desktop the list is open.
func TestOnAPhoneTheSeatMapIsOnTheFirstScreenWithTheSectionListFolded(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	a := browser(t, 2*time.Minute)
	do(t, a, "a phone on the event", chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(base+"/#/event/"+e.eventID), chromedp.WaitVisible(css(`#map canvas[data-version]`)))
	require.Equal(t, "false", js(t, a, `String(document.getElementById('sectionlist').open)`))
	require.Equal(t, "inside", js(t, a, `document.getElementById('map').getBoundingClientRect().top < innerHeight ? 'inside' : 'below'`),
		"the map starts on the first screen")
	js(t, a, `(() => { document.querySelector('#sectionlist summary').click(); return 'opened' })()`)
	waitJS(t, a, `String(document.querySelectorAll('#sectionlist .sections a').length > 0 && document.querySelector('#sectionlist .sections a').offsetParent !== null)`, "true", 5*time.Second)
	requireAccessible(t, a, "the event page on a phone")

	do(t, a, "a desktop on the event", chromedp.EmulateViewport(1366, 900), chromedp.Reload(), chromedp.WaitVisible(css(`#map canvas[data-version]`)))
	require.Equal(t, "true", js(t, a, `String(document.getElementById('sectionlist').open)`))
}
