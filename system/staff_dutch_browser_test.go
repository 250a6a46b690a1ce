package system_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
)

// TestAnOrganiserSwitchesTheOrganiserAppToDutchAndItsEventPagesReadInDutch:
// the header's language switch shows the organiser's event pages (orders,
// sales, promotions, cancelling) in Dutch, the page's language nl, and
// back in English; the Dutch pages pass axe on a phone and a desktop.
func TestAnOrganiserSwitchesTheOrganiserAppToDutchAndItsEventPagesReadInDutch(t *testing.T) {
	t.Parallel()
	e, base := organiserStack(t)
	o := browser(t, 3*time.Minute)
	organiserSignsIn(t, o, base, "olga_"+testenv.RandomSuffix(), e.queryString(`SELECT org_id FROM events WHERE id = $1`, e.eventID))
	event := base + "/organiser/#/event/" + e.eventID
	do(t, o, "the orders in English", chromedp.Navigate(event+"/orders"), chromedp.WaitVisible(css(`#orderq`)))
	require.Equal(t, "Orders", text(t, o, `#page h2`))
	do(t, o, "switch to Dutch", chromedp.Click(css(`#langswitch`)))
	waitJS(t, o, `(document.querySelector('#page h2') || {}).textContent`, "Bestellingen", 10*time.Second)
	require.Equal(t, "nl", js(t, o, `document.documentElement.lang`))
	require.Equal(t, "Bestellingen", text(t, o, `nav.tabs a[aria-current=page]`), "the tabs")
	require.Equal(t, "Evenementen", text(t, o, `header nav a[href="#/"]`), "the header")
	require.Contains(t, text(t, o, `#orders thead`), "Koper")
	// The summary is drawn from its own read, after the table.
	waitJS(t, o, `String(((document.querySelector('#ordersummary') || {}).textContent || '').includes('betaalde boekingen'))`, "true",
		10*time.Second)
	for _, size := range phoneAndDesktop {
		do(t, o, "orders on a "+size.name, chromedp.EmulateViewport(size.w, size.h))
		requireAccessible(t, o, "Dutch orders on a "+size.name)
		screenshot(t, o, "orders in Dutch on a "+size.name)
	}
	for _, page := range []struct{ path, ready, sel, want string }{
		{"/sales", `#sales tfoot [data-field=held]`, `#sales caption`, "Tickets en omzet per vak"},
		{"/promotions", `#promoform`, `#promoformtitle`, "Nieuwe code"},
		{"/attendees", `#attendeeq`, `#attendees caption`, "Tickets en hun antwoorden"},
		{"/cancel", `#cancelstart`, `#page h2`, "Het evenement annuleren"},
	} {
		do(t, o, page.path+" in Dutch", chromedp.Navigate(event+page.path), chromedp.Reload(), chromedp.WaitVisible(css(page.ready)))
		require.Equal(t, page.want, text(t, o, page.sel), page.path)
	}
	requireAccessible(t, o, "Dutch cancel page")
	do(t, o, "back to English", chromedp.Click(css(`#langswitch`)))
	waitJS(t, o, `(document.querySelector('#page h2') || {}).textContent`, "Cancel the event", 10*time.Second)
	require.Equal(t, "en", js(t, o, `document.documentElement.lang`))
}

// TestAHotelierFindsALanguageSwitchInTheHeaderAndRunsTheHotelAppInDutch:
// the hotelier app has the switch too; in Dutch the header, the
// properties, the new property form and the calendar read in Dutch (the
// weekdays too), and a property added in Dutch is saved as typed.
func TestAHotelierFindsALanguageSwitchInTheHeaderAndRunsTheHotelAppInDutch(t *testing.T) {
	t.Parallel()
	_, base := hotelStack(t)
	h := browser(t, 3*time.Minute)
	sfx := testenv.RandomSuffix()
	hotelierSignsIn(t, h, base, "hana_"+sfx, "org_hotel_"+sfx)
	require.Equal(t, "Your properties", text(t, h, `h1`))
	do(t, h, "switch to Dutch", chromedp.Click(css(`#langswitch`)))
	waitJS(t, h, `document.querySelector('h1').textContent`, "Je accommodaties", 10*time.Second)
	require.Equal(t, "nl", js(t, h, `document.documentElement.lang`))
	require.Equal(t, "Nieuwe accommodatie", text(t, h, `header nav a[href="#/new"]`))
	require.Equal(t, "English", text(t, h, `#langswitch`), "the switch names the other language in it")
	do(t, h, "a new property in Dutch", chromedp.Navigate(base+"/hotel/#/new"), chromedp.WaitVisible(css(`#newprop input[name=name]`)))
	require.Equal(t, "Accommodatie toevoegen", text(t, h, `h1`))
	requireAccessible(t, h, "Dutch new property")
	do(t, h, "add it",
		chromedp.SetValue(css(`#newprop input[name=name]`), "Hotel Nederland"),
		chromedp.SetValue(css(`#newprop input[name=city]`), "Amsterdam"),
		chromedp.SetValue(css(`#newprop input[name=lat]`), "52.3130"),
		chromedp.SetValue(css(`#newprop input[name=lng]`), "4.9380"),
		chromedp.SetValue(css(`#newprop input[name=contact_email]`), "balie@nederland.test"),
		chromedp.Click(css(`#createprop`)),
		chromedp.WaitVisible(css(`#cal`)))
	require.Equal(t, "Nachten bewerken", text(t, h, `#bulkhead`))
	require.Equal(t, "Kalender", text(t, h, `nav.tabs a[aria-current=page]`))
	require.Contains(t, text(t, h, `fieldset.days`), "ma")
	for _, size := range phoneAndDesktop {
		do(t, h, "the calendar on a "+size.name, chromedp.EmulateViewport(size.w, size.h))
		requireAccessible(t, h, "Dutch calendar on a "+size.name)
		screenshot(t, h, "hotel calendar in Dutch on a "+size.name)
	}
}
