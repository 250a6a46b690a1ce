package system_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
)

// standingEvent adds an event to the browser stack beside its own: a seated
// section of ten rows whose first two rows are dearer (two prices, the
// front rows' seats of their own price category), and a
// standing floor of 40 places at €30. It returns the event's and the
// floor's IDs.
func standingEvent(t *testing.T, e *e2e) (string, string) {
	t.Helper()
	ctx := context.Background()
	suffix := testenv.RandomSuffix()
	id, floor := "evt_gig_"+suffix, "sec_floor_"+suffix
	require.NoError(t, demo.Create(ctx, e.store.Pool(), demo.Event{ID: id, Title: "Floor Gig", VenueID: "ven_gig_" + suffix, VenueName: "Gig Hall",
		City: "Amsterdam", Timezone: "Europe/Amsterdam", Currency: "EUR", StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour),
		Sections: []demo.Section{
			{ID: "sec_seats_" + suffix, Name: "Balcony", Rows: 10, PerRow: 16, BasePrice: 4000, Category: "balcony"},
			{ID: floor, Name: "Floor", General: true, Capacity: 40, BasePrice: 3000, Category: "standing"},
		}}))
	_, err := e.store.Pool().Exec(ctx, `UPDATE seats SET (base_price, category) = (SELECT * FROM (VALUES (9000, 'front'), (4000, 'balcony')) p (price, category)
		WHERE (price = 9000) = (row_label IN (SELECT DISTINCT row_label FROM seats WHERE event_id = $1 ORDER BY row_label LIMIT 2))) WHERE event_id = $1`, id)
	require.NoError(t, err)
	return id, floor
}

// rect is an element's box on the page as "left,top,right,bottom".
func rect(t *testing.T, ctx context.Context, selector string) [4]float64 {
	t.Helper()
	var r [4]float64
	out := js(t, ctx, `(() => { const r = document.querySelector('`+selector+`').getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom].join(',') })()`)
	_, err := fmt.Sscanf(out, "%g,%g,%g,%g", &r[0], &r[1], &r[2], &r[3])
	require.NoError(t, err, out)
	return r
}

// seatAt is where seat i of the map is on the page, "x,y".
const seatAt = `(i => { const m = document.getElementById('map').seatmap, c = m.canvas.getBoundingClientRect();
	return (c.left + m.xs[i] * m.view.k + m.view.x) + ',' + (c.top + m.ys[i] * m.view.k + m.view.y) })`

func point(t *testing.T, ctx context.Context, expr string) (float64, float64) {
	t.Helper()
	var x, y float64
	out := js(t, ctx, expr)
	_, err := fmt.Sscanf(out, "%g,%g", &x, &y)
	require.NoError(t, err, out)
	return x, y
}

// touch sends a finger's press at (x, y) on the seat map's canvas, lifted
// after ms (a negative ms leaves it down): pointer events of type touch,
// as a phone sends them.
func touch(t *testing.T, ctx context.Context, x, y float64, ms int) {
	t.Helper()
	js(t, ctx, fmt.Sprintf(`(() => { const c = document.querySelector('#map canvas');
		const o = { pointerId: 11, pointerType: 'touch', isPrimary: true, clientX: %g, clientY: %g, bubbles: true, cancelable: true };
		c.dispatchEvent(new PointerEvent('pointerdown', o));
		if (%d >= 0) setTimeout(() => c.dispatchEvent(new PointerEvent('pointerup', o)), %d);
		return 'touched' })()`, x, y, ms, ms))
}

// lift ends a touch left down at (x, y).
func lift(t *testing.T, ctx context.Context, x, y float64) {
	t.Helper()
	js(t, ctx, fmt.Sprintf(`(() => { document.querySelector('#map canvas').dispatchEvent(new PointerEvent('pointerup',
		{ pointerId: 11, pointerType: 'touch', isPrimary: true, clientX: %g, clientY: %g, bubbles: true })); return 'lifted' })()`, x, y))
}

// TestOnADesktopTheSeatMapShowsTheStageTheStandingFloorAndALegendOfThePricesAndTheFloorHoldsAQuantity:
// at 1366x900 the map draws the stage on the side of row A, the standing
// floor between the stage and the seats as a button with its price, and the
// legend lists each price in the colour its seats are painted, the stage
// and the standing area; a seat under a resting mouse names its row, number
// and price, zoomed in each row is labelled; pressing the floor asks how
// many tickets and holds that many.
func TestOnADesktopTheSeatMapShowsTheStageTheStandingFloorAndALegendOfThePricesAndTheFloorHoldsAQuantity(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	id, floor := standingEvent(t, e)
	a := browser(t, 3*time.Minute)
	do(t, a, "a desktop", chromedp.EmulateViewport(1366, 900))
	signInAndOpen(t, a, base, "floor_"+id[8:], id)

	// The stage, on the side of the first row, inside the map.
	do(t, a, "the stage", chromedp.WaitVisible(css(`#map .stage`)))
	require.Equal(t, "Stage", js(t, a, `document.querySelector('#map .stage').textContent`))
	stage, mapBox := rect(t, a, `#map .stage`), rect(t, a, `#map`)
	require.True(t, stage[1] >= mapBox[1] && stage[3] <= mapBox[3], "the stage %v is inside the map %v", stage, mapBox)
	_, firstY := point(t, a, seatAt+`(0)`)
	_, lastY := point(t, a, seatAt+`(document.getElementById('map').seatmap.seats.length - 1)`)
	mid := (stage[1] + stage[3]) / 2
	require.Less(t, abs(mid-firstY), abs(mid-lastY), "the stage faces row A")
	require.Contains(t, js(t, a, `document.querySelector('#map canvas').getAttribute('aria-label')`), "The stage is at the")

	// The standing floor: drawn between the stage and the seats, named and priced.
	area := `#map button.area[data-area="` + floor + `"]`
	do(t, a, "the floor", chromedp.WaitVisible(css(area)))
	label := js(t, a, `document.querySelector('`+area+`').textContent`)
	require.Contains(t, label, "Floor")
	require.Contains(t, label, "€30.00")
	box := rect(t, a, area)
	require.True(t, box[1] >= min(stage[3], firstY) && box[3] <= max(stage[1], firstY), "the floor %v lies between the stage %v and row A at %g", box, stage, firstY)
	require.GreaterOrEqual(t, box[3]-box[1], 24.0, "the floor is a target of at least 24 px")

	// The legend: each price in its colour, then the stage and the floor.
	do(t, a, "the legend", chromedp.WaitVisible(css(`.legend [data-price]`)))
	require.Equal(t, "9000,4000", js(t, a, `[...document.querySelectorAll('.legend [data-price]')].map(s => s.dataset.price).join(',')`))
	require.Contains(t, js(t, a, `document.querySelector('.legend [data-price="9000"]').textContent`), "€90.00 (front)", "the price's category named")
	require.Contains(t, js(t, a, `document.querySelector('.legend [data-price="4000"]').textContent`), "€40.00 (balcony)")
	legendColours := js(t, a, `[...document.querySelectorAll('.legend [data-price]')].map(s => {
		const p = s.querySelector('canvas').getContext('2d').getImageData(10, 10, 1, 1).data;
		return s.dataset.colour === '#' + [p[0], p[1], p[2]].map(v => v.toString(16).padStart(2, '0')).join('') ? 'same' : s.dataset.colour + ' drawn ' + [...p].join('/') }).join(',')`)
	require.Equal(t, "same,same", legendColours, "each price's swatch is drawn in its colour")
	require.Equal(t, js(t, a, `document.getElementById('map').seatmap.priceTiers.map(p => p.colour).join(',')`),
		js(t, a, `[...document.querySelectorAll('.legend [data-price]')].map(s => s.dataset.colour).join(',')`), "the seats' colours")
	require.Equal(t, "true", js(t, a, `String(!!document.querySelector('.legend [data-legend=stage]') && !!document.querySelector('.legend [data-legend=standing]'))`))

	// Zoomed in on row A's first seat: rows labelled, a resting mouse names it.
	js(t, a, `(() => { const m = document.getElementById('map').seatmap; m.zoom(6, m.xs[0] * m.view.k + m.view.x, m.ys[0] * m.view.k + m.view.y); m.paint(); return 'zoomed' })()`)
	waitJS(t, a, `String(Number(document.querySelector('#map canvas').dataset.rowLabels || 0) > 0)`, "true", 5*time.Second)
	x, y := point(t, a, seatAt+`(0)`)
	do(t, a, "rest the mouse on seat 1", chromedp.MouseEvent(chromedp.MouseMoved, x, y))
	waitJS(t, a, `document.querySelector('#map .seattip').hidden ? '' : 'shown'`, "shown", 5*time.Second)
	require.Regexp(t, `^Row \S+, seat 1, available, €90\.00$`, js(t, a, `document.querySelector('#map .seattip').textContent`))
	screenshot(t, a, "desktop map zoomed")

	// The floor asks how many, and holds them.
	js(t, a, `(() => { document.getElementById('map').seatmap.fit(); return 'fit' })()`)
	// With the keyboard: the floor is the next Tab stop after the map.
	do(t, a, "Tab from the map to the floor", chromedp.WaitVisible(css(area)), chromedp.Focus(css(`#map canvas`)), chromedp.KeyEvent(kb.Tab))
	require.Equal(t, floor, js(t, a, `document.activeElement.dataset.area || document.activeElement.tagName`))
	do(t, a, "Enter on the floor", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(css(`#areapanel input[name=qty]`)))
	require.Equal(t, "true", js(t, a, `document.querySelector('`+area+`').getAttribute('aria-expanded')`))
	require.Equal(t, "qty", js(t, a, `document.activeElement.name`), "the quantity has the focus")
	require.Contains(t, js(t, a, `document.getElementById('areapanel').textContent`), "40 of 40 places left")
	requireAccessible(t, a, "the event with the floor chosen")
	screenshot(t, a, "desktop floor chosen")
	do(t, a, "close", chromedp.Click(css(`#areaclose`)))
	require.Equal(t, floor, js(t, a, `document.activeElement.dataset.area || ''`), "closing gives the focus back to the floor")
	require.Equal(t, "true", js(t, a, `String(document.getElementById('areapanel').hidden)`))
	// With the mouse.
	do(t, a, "press the floor", chromedp.Click(css(area)), chromedp.WaitVisible(css(`#areapanel input[name=qty]`)))
	do(t, a, "three tickets", chromedp.SetValue(css(`#areapanel input[name=qty]`), "3"), chromedp.Click(css(`#areahold`)), chromedp.WaitVisible(css(`#countdown`)))
	hold := strings.TrimPrefix(js(t, a, `location.hash`), "#/hold/")
	require.Equal(t, 3, e.count(`SELECT coalesce(sum(quantity), 0) FROM reservation_items WHERE reservation_id = $1 AND section_id = $2`, hold, floor),
		"three standing places held")
	waitJS(t, a, `String(!!document.querySelector('.summary li[data-label]'))`, "true", 10*time.Second)
	require.Contains(t, js(t, a, `document.querySelector('.summary').textContent`), "3 ×")
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// TestOnAPhoneBestAvailableComesFirstATapZoomsToFingerSizedSeatsAndALongPressShowsASeat:
// at 390x844 the "best available" form comes before the map (on a desktop
// after it); a finger's tap on the whole venue zooms in until seats are at
// least 24 px apart (rows labelled) rather than picking a seat it cannot
// aim at; then a tap picks the seat under it, a finger resting on
// another seat shows its row, number and price without choosing it, and the
// standing floor pressed holds a quantity the hold names.
func TestOnAPhoneBestAvailableComesFirstATapZoomsToFingerSizedSeatsAndALongPressShowsASeat(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	id, floor := standingEvent(t, e)
	a := browser(t, 3*time.Minute)
	do(t, a, "a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	signInAndOpen(t, a, base, "thumb_"+id[8:], id)
	best, mapBox := rect(t, a, `#bestbox`), rect(t, a, `#map`)
	require.Less(t, best[3], mapBox[1], "best available comes before the map")
	require.Less(t, best[1], 844.0, "and starts on the first screen")
	require.Equal(t, "Best available", js(t, a, `document.getElementById('besthead').textContent`))
	require.Contains(t, js(t, a, `document.getElementById('maphead').textContent`), "on the map")
	require.Equal(t, "true", js(t, a, `String(!document.querySelector('#map .stage').hidden && !document.querySelector('#map button.area[data-area="`+floor+`"]').hidden)`))
	requireNoSidewaysScroll(t, a, "the event on a phone")
	screenshot(t, a, "phone event")

	// A tap on the whole venue zooms in: the seats are too close for a finger.
	x, y := point(t, a, seatAt+`(20)`)
	pitch := func(x, y float64) float64 {
		out := js(t, a, fmt.Sprintf(`(() => { const m = document.getElementById('map').seatmap, c = m.canvas.getBoundingClientRect(); return String(m.pitchAt(%g - c.left, %g - c.top)) })()`, x, y))
		f, err := strconv.ParseFloat(out, 64)
		require.NoError(t, err, out)
		return f
	}
	require.Less(t, pitch(x, y), 24.0, "the whole venue's seats are closer than a finger")
	touch(t, a, x, y, 40)
	waitJS(t, a, `String(document.getElementById('map').seatmap.moved)`, "true", 5*time.Second)
	require.Equal(t, "0", js(t, a, `String(document.querySelectorAll('#selection li[data-seat]').length)`), "no seat picked by a blind tap")
	x, y = point(t, a, seatAt+`(20)`)
	require.GreaterOrEqual(t, pitch(x, y), 24.0, "zoomed until seats are a finger apart")
	waitJS(t, a, `String(Number(document.querySelector('#map canvas').dataset.rowLabels || 0) > 0)`, "true", 5*time.Second)

	// Now a tap picks the seat under the finger.
	touch(t, a, x, y, 40)
	waitJS(t, a, `[...document.querySelectorAll('#selection li[data-seat]')].map(li => li.dataset.seat).join(',')`,
		js(t, a, `document.getElementById('map').seatmap.seats[20].id`), 5*time.Second)

	// A long press on the next seat shows its details and chooses nothing.
	x, y = point(t, a, seatAt+`(21)`)
	touch(t, a, x, y, -1)
	waitJS(t, a, `document.querySelector('#map .seattip').hidden ? '' : 'shown'`, "shown", 5*time.Second)
	tip := js(t, a, `document.querySelector('#map .seattip').textContent`)
	require.Regexp(t, `^Row \S+, seat \d+, available, €\d+\.\d\d$`, tip)
	require.Equal(t, js(t, a, `document.getElementById('map').seatmap.seats[21].id`), js(t, a, `document.querySelector('#map .seattip').dataset.seat`))
	tr, mr := rect(t, a, `#map .seattip`), rect(t, a, `#map`)
	require.True(t, tr[3] <= y && tr[1] >= mr[1], "the details show above the finger %v, inside the map %v", tr, mr)
	screenshot(t, a, "phone long press")
	lift(t, a, x, y)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, "1", js(t, a, `String(document.querySelectorAll('#selection li[data-seat]').length)`), "the long press chose nothing")
	requireAccessible(t, a, "the event on a phone, zoomed")

	// The standing floor, pressed on the phone, asks how many and holds
	// them; the hold names the floor and the quantity, not an empty seat.
	js(t, a, `(() => { document.getElementById('map').seatmap.fit(); return 'fit' })()`)
	area := `#map button.area[data-area="` + floor + `"]`
	do(t, a, "press the floor", chromedp.WaitVisible(css(area)), chromedp.Click(css(area)), chromedp.WaitVisible(css(`#areapanel input[name=qty]`)))
	do(t, a, "two tickets", chromedp.SetValue(css(`#areapanel input[name=qty]`), "2"), chromedp.Click(css(`#areahold`)), chromedp.WaitVisible(css(`#countdown`)))
	waitJS(t, a, `String(!!document.querySelector('.summary li[data-label]'))`, "true", 10*time.Second)
	require.Contains(t, text(t, a, `.summary li[data-label]`), "2 × Floor")
	requireNoSidewaysScroll(t, a, "a standing hold on a phone")
	screenshot(t, a, "phone standing hold")

	do(t, a, "a desktop", chromedp.EmulateViewport(1366, 900), chromedp.Navigate(base+"/#/event/"+id), chromedp.Reload(),
		chromedp.WaitVisible(css(`#map canvas[data-version]`)))
	best, mapBox = rect(t, a, `#bestbox`), rect(t, a, `#map`)
	require.Greater(t, best[1], mapBox[3], "on a desktop the map comes first")
}

// inDutch has the tab's browser speak Dutch: navigator.language(s), the
// Accept-Language header and Intl's default locale, as a browser set to
// Dutch has them.
func inDutch(t *testing.T, ctx context.Context) {
	t.Helper()
	ua := js(t, ctx, `navigator.userAgent`)
	do(t, ctx, "a Dutch browser", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, tg, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: "nl-NL,nl"}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, tg, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "nl-NL"})
		return chromedp.Void{}, err
	})
}

// TestABrowserInDutchShowsTheEventAndTheCheckoutInDutchAndTheSwitchFlipsToEnglish:
// with the browser's language Dutch, the event page, the seat map and the
// hold's checkout read in Dutch, prices and dates written the Dutch way;
// the header's switch shows the same page in English (and remembers it),
// and back; the paid booking, the bookings and the tickets read in Dutch;
// the organiser's app follows the same choice.
func TestABrowserInDutchShowsTheEventAndTheCheckoutInDutchAndTheSwitchFlipsToEnglish(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	id, _ := standingEvent(t, e)
	a := browser(t, 3*time.Minute)
	do(t, a, "the app", chromedp.Navigate(base+"/"), chromedp.WaitVisible(css(`#signin input[name=user]`)))
	inDutch(t, a)
	do(t, a, "reload in Dutch", chromedp.Reload(), chromedp.WaitVisible(css(`#events li a`)))
	t.Logf("navigator.language %s", js(t, a, `navigator.language`))
	require.Equal(t, "nl", js(t, a, `document.documentElement.lang`))
	require.Equal(t, "Evenementen", js(t, a, `document.querySelector('main h1').textContent`))
	require.Equal(t, "Mijn boekingen", js(t, a, `document.querySelector('nav a[href="#/bookings"]').textContent`))
	require.Equal(t, "English", js(t, a, `document.getElementById('langswitch').textContent`))
	require.Equal(t, "en", js(t, a, `document.getElementById('langswitch').lang`))

	signInAndOpen(t, a, base, "nl_"+id[8:], id)
	require.Equal(t, "Kies je plaatsen", js(t, a, `document.getElementById('maphead').textContent`))
	require.Equal(t, "Reserveer deze plaatsen", js(t, a, `document.getElementById('hold').textContent`))
	require.Equal(t, "Of laat ons kiezen", js(t, a, `document.getElementById('besthead').textContent`))
	require.Equal(t, "Podium", js(t, a, `document.querySelector('#map .stage').textContent`))
	require.Contains(t, js(t, a, `document.querySelector('#map button.area').textContent`), "€\u00a030,00", "money the Dutch way")
	require.Contains(t, js(t, a, `document.querySelector('#main .when').textContent`), "tijd in Amsterdam")
	require.Contains(t, js(t, a, `document.querySelector('.legend').textContent`), "beschikbaar, €\u00a090,00")
	require.Contains(t, js(t, a, `document.querySelector('#map canvas').getAttribute('aria-label')`), "Gebruik de pijltjestoetsen")
	requireAccessible(t, a, "the event in Dutch")
	screenshot(t, a, "event in Dutch")

	pickSeats(t, a, 1)
	require.Regexp(t, `^Rij \S+, stoel 1 — €\x{a0}90,00`, js(t, a, `document.querySelector('#selection li').textContent`))
	holdSelection(t, a)
	waitJS(t, a, `String(!!document.querySelector('.summary li[data-label]'))`, "true", 10*time.Second)
	require.Equal(t, "Je reservering", js(t, a, `document.querySelector('main h1').textContent`))
	require.Contains(t, js(t, a, `document.getElementById('main').textContent`), "Tijd om te betalen")
	require.Equal(t, "Betaal €\u00a090,00", js(t, a, `document.getElementById('paybtn').textContent`))
	require.Contains(t, js(t, a, `document.querySelector('.summary .total').textContent`), "Totaal")
	require.Equal(t, "Vrijgeven", js(t, a, `document.getElementById('release').textContent`))
	waitJS(t, a, `document.getElementById('main').dataset.paymentForm || ''`, "ready", 30*time.Second)
	requireAccessible(t, a, "the checkout in Dutch")
	screenshot(t, a, "checkout in Dutch")

	// The switch: the same page in English, kept across a reload; and back.
	do(t, a, "switch to English", chromedp.Click(css(`#langswitch`)))
	waitJS(t, a, `document.querySelector('main h1').textContent`, "Your hold", 10*time.Second)
	require.Equal(t, "en", js(t, a, `document.documentElement.lang`))
	require.Equal(t, "Pay €90.00", js(t, a, `document.getElementById('paybtn').textContent`))
	require.Equal(t, "My bookings", js(t, a, `document.querySelector('nav a[href="#/bookings"]').textContent`))
	require.Equal(t, "Nederlands", js(t, a, `document.getElementById('langswitch').textContent`))
	do(t, a, "reload", chromedp.Reload(), chromedp.WaitVisible(css(`#countdown`)))
	require.Equal(t, "Your hold", js(t, a, `document.querySelector('main h1').textContent`), "the choice is kept")
	do(t, a, "switch back to Dutch", chromedp.Click(css(`#langswitch`)))
	waitJS(t, a, `document.querySelector('main h1').textContent`, "Je reservering", 10*time.Second)

	// Paid: the booking, the bookings and the tickets in Dutch.
	payWith(t, a, e.pay.card())
	waitPaid(t, a, 1)
	require.Equal(t, "Je boeking", js(t, a, `document.querySelector('main h1').textContent`))
	require.Equal(t, "Betaald", js(t, a, `document.getElementById('bstatus').textContent`))
	require.Contains(t, js(t, a, `document.getElementById('terms').textContent`), "Je kunt annuleren tot")
	do(t, a, "my bookings", chromedp.Navigate(base+"/#/bookings"), chromedp.WaitVisible(css(`ul.bookings li`)))
	require.Equal(t, "Mijn boekingen", js(t, a, `document.querySelector('main h1').textContent`))
	require.Equal(t, "Binnenkort", js(t, a, `document.querySelector('#bookings h2').textContent`))
	require.Contains(t, js(t, a, `document.querySelector('ul.bookings li').textContent`), "Betaald")
	do(t, a, "my tickets", chromedp.Navigate(base+"/#/tickets"), chromedp.WaitVisible(css(`#tickets img`)))
	require.Equal(t, "Mijn tickets", js(t, a, `document.querySelector('main h1').textContent`))
	require.Contains(t, js(t, a, `document.querySelector('#tickets img').alt`), "QR-code")
	requireAccessible(t, a, "my tickets in Dutch")

	// The organiser's app reads the same choice (signed out: the fan is
	// no organiser).
	js(t, a, `(() => { sessionStorage.clear(); return 'signed out' })()`)
	do(t, a, "the organiser's app", chromedp.Navigate(base+"/organiser/"), chromedp.WaitVisible(css(`#signin input[name=user]`)))
	require.Equal(t, "Inloggen als organisator", js(t, a, `document.querySelector('main h1').textContent`))
	require.Equal(t, "Zalen", js(t, a, `document.querySelector('nav a[href="#/venues"]').textContent`))
	requireAccessible(t, a, "the organiser's sign-in in Dutch")
	do(t, a, "switch the organiser's app to English", chromedp.Click(css(`#langswitch`)))
	waitJS(t, a, `document.querySelector('main h1').textContent`, "Sign in as an organiser", 10*time.Second)
	require.Equal(t, "Venues", js(t, a, `document.querySelector('nav a[href="#/venues"]').textContent`))
}
