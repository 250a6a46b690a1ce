package system_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// hotelStack is the browser stack with the hotelier's routes wired as
// encore dev wires them (system.Process.adminAPI) and the fans' hotel
// search (here on the buy plane's pool, its answers cached for a
// millisecond), its event's venue placed on the map.
func hotelStack(t *testing.T) (*e2e, string) {
	t.Helper()
	e, base := browserStack(t, func(t *testing.T, e *e2e, a *api.Server) {
		a.Admin = &api.Admin{Venues: venues.NewService(e.store), Events: organiser.NewService(e.store), Store: e.store,
			Hotels: hotels.NewService(e.store)}
		a.Browse.Hotels = hotels.NewSearch(store.NewReader(e.store.Pool()), time.Millisecond)
	})
	_, err := e.store.Catalogue.PlaceVenue(context.Background(), "ven_e2e", 52.3124, 4.9371)
	require.NoError(t, err)
	return e, base
}

// hotelierSignsIn signs in with the hotelier app's demo form as a hotelier
// of org.
func hotelierSignsIn(t *testing.T, ctx context.Context, base, user, org string) {
	t.Helper()
	do(t, ctx, "the hotelier signs in",
		chromedp.Navigate(base+"/hotel/"),
		chromedp.WaitVisible(css(`#signin input[name=user]`)),
		chromedp.SetValue(css(`#signin input[name=user]`), user),
		chromedp.SetValue(css(`#signin input[name=email]`), user+"@example.com"),
		chromedp.SetValue(css(`#signin input[name=org]`), org),
		chromedp.Click(css(`#signin button`)),
		chromedp.WaitVisible(css(`#whoami`)),
		// The properties list is drawn: the sign-in is over.
		chromedp.WaitVisible(css(`#properties`)),
	)
}

func TestAHotelierEditsANightInTheCalendarAndTheFansOfferChangesUntilAStopSell(t *testing.T) {
	t.Parallel()
	e, base := hotelStack(t)
	hotelier := browser(t, 5*time.Minute)
	fan := fanTab(t, hotelier)
	sfx := testenv.RandomSuffix()
	var starts time.Time
	require.NoError(t, e.store.Pool().QueryRow(context.Background(), `SELECT starts_at FROM events WHERE id = $1`, e.eventID).Scan(&starts))
	night := hotels.ShowNight(starts, "UTC").Format(time.DateOnly)

	hotelierSignsIn(t, hotelier, base, "hana_"+sfx, "org_hotel_"+sfx)
	requireAccessible(t, hotelier, "hotelier properties")
	do(t, hotelier, "the hotelier adds a property next to the venue",
		chromedp.Navigate(base+"/hotel/#/new"),
		chromedp.WaitVisible(css(`#newprop input[name=name]`)),
		chromedp.SetValue(css(`#newprop input[name=name]`), "Browser Inn"),
		chromedp.SetValue(css(`#newprop input[name=city]`), "C"),
		chromedp.SetValue(css(`#newprop input[name=address]`), "2 Arena Road"),
		chromedp.SetValue(css(`#newprop input[name=lat]`), "52.3130"),
		chromedp.SetValue(css(`#newprop input[name=lng]`), "4.9380"),
		chromedp.SetValue(css(`#newprop input[name=contact_email]`), "desk@browserinn.test"),
		chromedp.Click(css(`#createprop`)),
		chromedp.WaitVisible(css(`#cal`)),
	)
	prop := js(t, hotelier, `decodeURIComponent(location.hash.split('/')[2].split('?')[0])`)
	require.True(t, strings.HasPrefix(prop, "prop_"), prop)
	cell := `#cal td[data-room-type="double"][data-night="` + night + `"]`

	// The show's night is put on sale from the calendar.
	do(t, hotelier, "the calendar opens at the show's night",
		chromedp.Navigate(base+"/hotel/#/property/"+prop+"?from="+night),
		chromedp.WaitVisible(css(cell+` button.night`)),
	)
	require.Contains(t, js(t, hotelier, `document.querySelector('`+cell+`').className`), "off", "a night not on sale shows as such")
	setNight := func(step, rate string, extra ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		actions := append([]chromedp.Action[chromedp.Void]{
			chromedp.Click(css(cell + ` button.night`)),
			chromedp.WaitVisible(css(cell + ` button.night[aria-pressed=true]`)),
		}, extra...)
		actions = append(actions, chromedp.SetValue(css(`#bulk input[name=rate]`), rate), chromedp.Click(css(`#apply`)),
			chromedp.WaitVisible(css(`#applied`)))
		do(t, hotelier, step, actions...)
	}
	setNight("the hotelier selects the night and puts three rooms on sale at 120", "120",
		chromedp.SetValue(css(`#bulk input[name=allotment]`), "3"))
	require.Equal(t, "12000", js(t, hotelier, `document.querySelector('`+cell+`').dataset.rate`))
	require.Equal(t, night, js(t, hotelier, `document.querySelector('#bulk input[name=from]').value`))
	requireAccessible(t, hotelier, "hotelier calendar")

	offer := `#hotels label.hotel[data-property="` + prop + `"]`
	signIn(t, fan, base, "fan_"+sfx)
	do(t, fan, "the fan opens the event and sees the hotel beside the seats",
		chromedp.Navigate(base+"/#/event/"+e.eventID),
		chromedp.WaitVisible(css(offer)),
	)
	require.Equal(t, "12000", js(t, fan, `document.querySelector('`+offer+` .price').dataset.amount`))
	require.Contains(t, js(t, fan, `document.querySelector('`+offer+`').textContent`), "120.00")

	// The hotelier changes the rate; the fan's offer follows.
	setNight("the hotelier raises the night's rate to 150", "150")
	waitJS(t, hotelier, `document.querySelector('`+cell+`').dataset.rate`, "15000", 10*time.Second)
	do(t, fan, "the fan looks again", chromedp.Reload(), chromedp.WaitVisible(css(offer)))
	require.Equal(t, "15000", js(t, fan, `document.querySelector('`+offer+` .price').dataset.amount`))

	// The fan holds a seat and the room in one hold (a package).
	do(t, fan, "the fan chooses the room and a seat and holds both",
		chromedp.Click(css(offer+` input`)),
		chromedp.WaitVisible(css(`#map canvas[data-version]`)),
		chromedp.Focus(css(`#map canvas`)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`#selection li[data-seat]`)),
		chromedp.Click(css(`#hold`)),
		chromedp.WaitVisible(css(`#holdstays li[data-property="`+prop+`"]`)),
	)
	require.Contains(t, js(t, fan, `document.getElementById('holdstays').textContent`), "150.00", "the room at the rate held")
	require.Equal(t, 1, e.count(`SELECT held FROM room_nights WHERE property_id = $1 AND night = $2`, prop, night))

	// Stop-sell by click: the held room stays the fan's; no one else is
	// offered the night.
	do(t, hotelier, "the hotelier stops selling the night",
		chromedp.Navigate(base+"/hotel/#/property/"+prop+"?from="+night),
		chromedp.WaitVisible(css(cell+` button.stop[aria-pressed=false]`)),
		chromedp.Click(css(cell+` button.stop`)),
		chromedp.WaitVisible(css(cell+` button.stop[aria-pressed=true]`)),
	)
	require.Equal(t, "1", js(t, hotelier, `document.querySelector('`+cell+`').dataset.held`))
	do(t, fan, "the fan looks at the event again",
		chromedp.Navigate(base+"/#/event/"+e.eventID),
		chromedp.WaitVisible(css(`#staynote`)),
	)
	waitJS(t, fan, `document.querySelector('`+offer+`') ? 'offered' : 'gone'`, "gone", 10*time.Second)

	// The calendar's arrivals and walk preview answer for the night.
	do(t, hotelier, "the hotelier previews a walk of the night",
		chromedp.Navigate(base+"/hotel/#/property/"+prop+"/walks"),
		chromedp.WaitVisible(css(`#walkform input[name=night]`)),
		chromedp.SetValue(css(`#walkform input[name=night]`), night),
		chromedp.Click(css(`#preview`)),
		chromedp.WaitVisible(css(`#overbooked`)),
	)
	require.Contains(t, js(t, hotelier, `document.getElementById('walklist').textContent`), "Nobody would be walked", "the fan's room is held, not paid")
	requireAccessible(t, hotelier, "hotelier walks")
}
