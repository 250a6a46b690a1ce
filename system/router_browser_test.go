package system_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
)

// holdBackFirst makes the tab's next request for path wait (a slow
// network, a slow read) until releaseHeld is called; every other request,
// and any later one for path, goes out at once. window.heldState says
// "waiting", then "held" once the request was made, then "answered" once
// its answer arrived after the release.
func holdBackFirst(t *testing.T, tab context.Context, path string) {
	t.Helper()
	js(t, tab, `(() => {
		const real = window.realFetch || window.fetch; window.realFetch = real;
		window.heldState = 'waiting';
		window.fetch = (input, init) => {
			if (window.heldState !== 'waiting' || new URL(String(input), location.href).pathname !== '`+path+`') return real(input, init);
			window.heldState = 'held';
			return new Promise(go => { window.releaseHeld = go; })
				.then(() => real(input, init))
				.then(res => { setTimeout(() => { window.heldState = 'answered'; }, 0); return res; });
		};
		return 'holding';
	})()`)
}

// requireStays fails unless expr yields want at every look for the whole
// of within: what a stale page drawing late would change.
func requireStays(t *testing.T, tab context.Context, expr, want string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got := js(t, tab, expr); got != want {
			require.Equal(t, want, got, "%s changed (screenshot: %s)", expr, screenshot(t, tab, "drawn over"))
		}
	}
}

// leaveWhileLoading opens from (its one request for held kept back), and
// once that request is on its way goes to to and waits for ready there.
func leaveWhileLoading(t *testing.T, tab context.Context, held, from, to, ready string) {
	t.Helper()
	holdBackFirst(t, tab, held)
	js(t, tab, `location.hash = '`+from+`', 'opened'`)
	waitJS(t, tab, `window.heldState`, "held", 20*time.Second)
	js(t, tab, `location.hash = '`+to+`', 'left'`)
	do(t, tab, "the page the user went to is drawn", chromedp.WaitVisible(css(ready)))
}

// finishLate lets the held request answer, the page it belonged to long
// left, and waits for that answer to be in the page's hands.
func finishLate(t *testing.T, tab context.Context) {
	t.Helper()
	js(t, tab, `window.releaseHeld(), 'released'`)
	waitJS(t, tab, `window.heldState`, "answered", 20*time.Second)
}

// TestAPageLeftWhileItLoadsNeverDrawsOverThePageTheUserWentTo: in each of
// the three apps, at a phone's size (and a desktop's, journeySizes), a user
// opens a page whose read is slow, goes on to another page before it
// answers and types or chooses something there; when the slow answer
// finally comes, the page they left draws nothing: the page they are on
// stays, with what they typed or chose, and fits the phone's width.
func TestAPageLeftWhileItLoadsNeverDrawsOverThePageTheUserWentTo(t *testing.T) {
	t.Parallel()
	e, base := hotelStack(t)
	prop := e.hotel(2)
	// Six walks with both sizes, a few seconds each on an idle machine, many
	// more beside the rest of the suite.
	first := browser(t, 8*time.Minute)
	const settle = 3 * time.Second // a late draw comes within milliseconds of its answer

	for _, size := range journeySizes() {
		// Each size signs in users and organisations of its own: a walk
		// never finds what the other size's walk made.
		sfx := size.name + "_" + testenv.RandomSuffix()
		on := " on a " + size.name

		t.Run("the fan's slow event page over the hotel screen opened from it"+on, func(t *testing.T) {
			fan := fanTab(t, first)
			do(t, fan, size.name, chromedp.EmulateViewport(size.w, size.h))
			signIn(t, fan, base, "router_"+sfx)
			offer := `#properties li.property[data-property="` + prop + `"]`
			leaveWhileLoading(t, fan, "/v1/events/"+e.eventID, "#/event/"+e.eventID, "#/event/"+e.eventID+"/hotels",
				offer+` li.room[data-room-type="double"] button.addseats`)
			chooseNights(t, fan, offer, 2)

			finishLate(t, fan)
			requireStays(t, fan, `[!!document.querySelector('#staysearch'), !!document.querySelector('#holdform'),
				document.querySelector('#staysearch select[name=nights]')?.value, document.getElementById('problem').hidden].join()`,
				"true,false,2,true", settle)
			require.Contains(t, text(t, fan, `#staydates`), "2 nights", "the nights the fan chose are still shown")
			require.True(t, strings.HasSuffix(js(t, fan, `location.hash`), "/hotels?nights=2&guests=2&rooms=1"))
			fitsAndIsSaved(t, fan, size.name, "the hotel screen kept")
		})

		t.Run("the organiser's slow event page over a new event being typed"+on, func(t *testing.T) {
			o := fanTab(t, first)
			do(t, o, size.name, chromedp.EmulateViewport(size.w, size.h))
			organiserSignsIn(t, o, base, "olga_"+sfx, "org_router_"+sfx)
			id := organiserDrafts(t, o, base, "Slow Show")
			do(t, o, "back to the events", chromedp.Navigate(base+"/organiser/#/"), chromedp.WaitVisible(css(`#events tr[data-event="`+id+`"]`)))
			leaveWhileLoading(t, o, "/v1/admin/events/"+id, "#/event/"+id, "#/new", `#newevent input[name=title]`)
			do(t, o, "the organiser types a title", chromedp.SendKeys(css(`#newevent input[name=title]`), "Late Show"))

			finishLate(t, o)
			requireStays(t, o, `[!!document.querySelector('#newevent'), !!document.querySelector('#publish'),
				document.querySelector('#newevent input[name=title]')?.value, document.getElementById('problem').hidden].join()`,
				"true,false,Late Show,true", settle)
			fitsAndIsSaved(t, o, size.name, "the new event kept")
		})

		t.Run("the hotelier's slow property over a new property being typed"+on, func(t *testing.T) {
			h := fanTab(t, first)
			do(t, h, size.name, chromedp.EmulateViewport(size.w, size.h))
			hotelierSignsIn(t, h, base, "hana_"+sfx, "org_router_hotel_"+sfx)
			do(t, h, "add a property", chromedp.Navigate(base+"/hotel/#/new"), chromedp.WaitVisible(css(`#newprop input[name=name]`)),
				chromedp.SetValue(css(`#newprop input[name=name]`), "Slow Inn"), chromedp.SetValue(css(`#newprop input[name=city]`), "C"),
				chromedp.SetValue(css(`#newprop input[name=lat]`), "52.3130"), chromedp.SetValue(css(`#newprop input[name=lng]`), "4.9380"),
				chromedp.SetValue(css(`#newprop input[name=contact_email]`), "desk@slow.test"),
				chromedp.Click(css(`#createprop`)), chromedp.WaitVisible(css(`#cal`)))
			id := js(t, h, `decodeURIComponent(location.hash.split('/')[2].split('?')[0])`)
			do(t, h, "back to the properties", chromedp.Navigate(base+"/hotel/#/"), chromedp.WaitVisible(css(`#properties`)))
			leaveWhileLoading(t, h, "/v1/admin/properties/"+id, "#/property/"+id, "#/new", `#newprop input[name=name]`)
			do(t, h, "the hotelier types a name", chromedp.SendKeys(css(`#newprop input[name=name]`), "Late Inn"))

			finishLate(t, h)
			requireStays(t, h, `[!!document.querySelector('#newprop'), !!document.querySelector('#cal'),
				document.querySelector('#newprop input[name=name]')?.value, document.getElementById('problem').hidden].join()`,
				"true,false,Late Inn,true", settle)
			fitsAndIsSaved(t, h, size.name, "the new property kept")
		})
	}
}
