package system_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// organiserStack is the browser stack with the organiser routes wired as
// encore dev wires them (system.Process.adminAPI): venues, events, the
// audit log, and the sales report (here on the buy plane's pool; the
// process reads it from the browse plane's read-only one).
func organiserStack(t *testing.T) (*e2e, string) {
	t.Helper()
	return browserStack(t, func(t *testing.T, e *e2e, a *api.Server) {
		a.Admin = &api.Admin{Venues: venues.NewService(e.store), Events: organiser.NewService(e.store),
			Sales: &organiser.Sales{Reader: store.NewReader(e.store.Pool())}, Store: e.store}
	})
}

// organiserAndFan starts the organiser stack and a browser (bounded by
// within) with an organiser of an organisation of the test's own signed in
// on one tab, and another browser context for a fan. It returns the stack,
// its URL, the organiser's and the fan's tabs, and the suffix that names the
// test's organisation and users.
func organiserAndFan(t *testing.T, within time.Duration) (*e2e, string, context.Context, context.Context, string) {
	t.Helper()
	e, base := organiserStack(t)
	org := browser(t, within)
	fan := fanTab(t, org)
	suffix := testenv.RandomSuffix()
	organiserSignsIn(t, org, base, "olga_"+suffix, "org_ui_"+suffix)
	return e, base, org, fan, suffix
}

// organiserSignsIn signs in with the organiser app's demo form as an
// organiser of org.
func organiserSignsIn(t *testing.T, ctx context.Context, base, user, org string) {
	t.Helper()
	do(t, ctx, "the organiser signs in",
		chromedp.Navigate(base+"/organiser/"),
		chromedp.WaitVisible(css(`#signin input[name=user]`)),
		chromedp.SetValue(css(`#signin input[name=user]`), user),
		chromedp.SetValue(css(`#signin input[name=email]`), user+"@example.com"),
		chromedp.SetValue(css(`#signin input[name=org]`), org),
		chromedp.Click(css(`#signin button`)),
		chromedp.WaitVisible(css(`#whoami`)),
	)
	require.Equal(t, user, js(t, ctx, `document.getElementById('whoami').textContent`))
}

// organiserPublishes uploads the test layout through the organiser app
// (after a broken one, whose mistake must be named by its line), creates
// an event on it priced per category, publishes it and returns its ID.
func organiserPublishes(t *testing.T, ctx context.Context, base, title string) string {
	t.Helper()
	bad, err := filepath.Abs(filepath.Join("testdata", "organiser_layout_bad.csv"))
	require.NoError(t, err)
	good, err := filepath.Abs(filepath.Join("testdata", "organiser_layout.json"))
	require.NoError(t, err)

	do(t, ctx, "a layout with a mistake is refused and its line named",
		chromedp.Navigate(base+"/organiser/#/venues"),
		chromedp.WaitVisible(css(`#upload input[name=file]`)),
		chromedp.SetUploadFiles(css(`#upload input[name=file]`), []string{bad}),
		chromedp.Click(css(`#uploadbtn`)),
		chromedp.WaitVisible(css(`#upload-errors li`)),
	)
	require.Contains(t, js(t, ctx, `document.getElementById('upload-errors').textContent`), "line 3, column seat")

	do(t, ctx, "the layout is uploaded",
		chromedp.SetUploadFiles(css(`#upload input[name=file]`), []string{good}),
		chromedp.Click(css(`#uploadbtn`)),
		chromedp.WaitVisible(css(`#newhere`)),
	)
	require.Contains(t, js(t, ctx, `document.getElementById('uploaded').textContent`), "12 numbered seats")
	require.Contains(t, js(t, ctx, `document.getElementById('venues').textContent`), "Organiser Test Hall")

	do(t, ctx, "a draft is created with a price for each of the layout's categories",
		chromedp.Click(css(`#newhere`)),
		chromedp.WaitVisible(css(`#newevent input[name="prices.stalls"]`)),
		chromedp.SetValue(css(`#newevent input[name=title]`), title),
		chromedp.SetValue(css(`#newevent input[name=artist]`), "The Organisers"),
		chromedp.SetValue(css(`#newevent input[name="prices.stalls"]`), "45.50"),
		chromedp.SetValue(css(`#newevent input[name="prices.standing"]`), "25"),
		chromedp.Click(css(`#create`)),
		chromedp.WaitVisible(css(`#publish`)),
	)
	require.Equal(t, "DRAFT", js(t, ctx, `document.querySelector('h1 .badge').dataset.status`))
	require.Contains(t, js(t, ctx, `document.querySelector('#prices li[data-category=stalls]').textContent`), "45.50",
		"4550 minor units shown as 45.50")
	eventID := js(t, ctx, `decodeURIComponent(location.hash.split('/')[2])`)
	require.True(t, strings.HasPrefix(eventID, "evt_"), eventID)

	do(t, ctx, "the draft is published, confirming", chromedp.Click(css(`#publish`)), chromedp.WaitVisible(css(`#confirmpublish`)),
		chromedp.Click(css(`#confirmpublish`)), chromedp.WaitVisible(css(`#fanlink`)))
	require.Equal(t, "ON_SALE", js(t, ctx, `document.querySelector('h1 .badge').dataset.status`))

	do(t, ctx, "the event list shows it, newest first",
		chromedp.Navigate(base+"/organiser/#/"),
		chromedp.WaitVisible(css(`#events tr[data-event="`+eventID+`"]`)),
	)
	require.Equal(t, eventID, js(t, ctx, `document.querySelector('#events tbody tr').dataset.event`))
	require.Equal(t, "ON_SALE", js(t, ctx, `document.querySelector('#events tbody tr .badge').dataset.status`))
	return eventID
}

func TestAnOrganiserUploadsALayoutPublishesAnEventAndAFanFindsItAndOpensItsSeatMap(t *testing.T) {
	t.Parallel()
	_, base, org, fan, suffix := organiserAndFan(t, 4*time.Minute)
	title := "Organiser Night " + suffix
	eventID := organiserPublishes(t, org, base, title)

	// Another browser context: a fan who never saw the organiser app.
	do(t, fan, "a fan searches for the event",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css(`#q`)),
		chromedp.SendKeys(css(`#q`), title),
		chromedp.WaitVisible(css(`#events a[href="#/event/`+eventID+`"]`)),
	)
	require.Contains(t, js(t, fan, `document.getElementById('events').textContent`), "The Organisers")
	do(t, fan, "the fan opens its seat map",
		chromedp.Click(css(`#events a[href="#/event/`+eventID+`"]`)),
		chromedp.WaitVisible(css(`#map canvas[data-version]`)),
	)
	require.Equal(t, "12", js(t, fan, `String(document.querySelector('#map').seatmap.seats.length)`), "the layout's twelve seats")
	require.Equal(t, "available", js(t, fan, `document.querySelector('#map').seatmap.stateById('`+store.SectionPrefix(eventID)+`stalls-B-6')`))
}

func TestAnOrganiserBlocksSeatsAFanSeesThemBlockedAndTheDashboardFollowsTheFansHoldUntilTheEventIsCancelled(t *testing.T) {
	t.Parallel()
	e, base, org, fan, suffix := organiserAndFan(t, 5*time.Minute)
	eventID := organiserPublishes(t, org, base, "Blocked Night "+suffix)
	seat := func(id string) string { return store.SectionPrefix(eventID) + "stalls-" + id }
	fanState := func(id, want string) {
		waitJS(t, fan, `document.querySelector('#map').seatmap.stateById('`+seat(id)+`')`, want, 30*time.Second)
	}
	signInAndOpen(t, fan, base, "fan_"+suffix, eventID)

	// The organiser picks with the keyboard and blocks them.
	do(t, org, "the organiser opens the seat map",
		chromedp.Navigate(base+"/organiser/#/event/"+eventID+"/seats"),
		chromedp.WaitVisible(css(`#map canvas[data-version]`)),
	)
	do(t, org, "the organiser selects two seats and blocks them",
		chromedp.Focus(css(`#map canvas`)),
		chromedp.KeyEvent(kb.Enter), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`#selection li[data-seat="`+seat("A-2")+`"]`)),
		chromedp.SetValue(css(`#blockform input[name=reason]`), "camera platform"),
		chromedp.Click(css(`#block`)),
	)
	waitJS(t, org, `document.getElementById('blockedcount').textContent`, "2", 20*time.Second)
	require.Equal(t, "0", js(t, org, `document.getElementById('selcount').textContent`), "the selection is cleared")
	fanState("A-1", "blocked")
	fanState("A-2", "blocked")
	require.Equal(t, 2, e.count(`SELECT count(*) FROM seat_blocks WHERE event_id = $1 AND reason = 'camera platform'`, eventID))

	// Unblocking one gives it back to the fan.
	do(t, org, "the organiser unblocks one seat",
		chromedp.Click(css(`#blocked input[value="`+seat("A-1")+`"]`)),
		chromedp.SetValue(css(`#unblockform input[name=reason]`), "platform moved"),
		chromedp.Click(css(`#unblock`)),
	)
	waitJS(t, org, `document.getElementById('blockedcount').textContent`, "1", 20*time.Second)
	fanState("A-1", "available")
	fanState("A-2", "blocked")

	// A promotion code is created and disabled, with a confirm step.
	code := "UI" + strings.ToUpper(suffix)
	do(t, org, "the organiser creates a promotion code",
		chromedp.Navigate(base+"/organiser/#/event/"+eventID+"/promotions"),
		chromedp.WaitVisible(css(`#promoform input[name=code]`)),
		chromedp.SetValue(css(`#promoform input[name=code]`), code),
		chromedp.SetValue(css(`#promoform input[name=value]`), "15"),
		chromedp.Click(css(`#addpromo`)),
		chromedp.WaitVisible(css(`#promotions tr[data-code="`+code+`"] button[data-disable]`)),
	)
	require.Equal(t, "active", js(t, org, `document.querySelector('#promotions tr[data-code="`+code+`"] .badge').dataset.state`))
	require.Contains(t, js(t, org, `document.querySelector('#promotions tr[data-code="`+code+`"]').textContent`), "15% off")
	do(t, org, "the organiser changes the code to 25 % and 40 uses",
		chromedp.Click(css(`#promotions button[data-edit="`+code+`"]`)),
		chromedp.WaitVisible(css(`#canceledit`)),
		chromedp.SetValue(css(`#promoform input[name=value]`), "25"),
		chromedp.SetValue(css(`#promoform input[name=max_uses]`), "40"),
		chromedp.Click(css(`#addpromo`)),
	)
	waitJS(t, org, `((document.querySelector('#promotions tr[data-code="`+code+`"]') || {}).textContent || '').includes('25% off') ? 'changed' : ''`,
		"changed", 15*time.Second)
	require.Contains(t, js(t, org, `document.querySelector('#promotions tr[data-code="`+code+`"]').textContent`), "of 40")
	require.Equal(t, "true", js(t, org, `String(document.getElementById('canceledit').hidden)`), "the form is back to a new code")
	do(t, org, "the organiser disables it, confirming once",
		chromedp.Click(css(`#promotions button[data-disable="`+code+`"]`)),
		chromedp.WaitVisible(css(`#promotions button[data-sure=yes]`)),
		chromedp.Click(css(`#promotions button[data-disable="`+code+`"]`)),
		chromedp.WaitVisible(css(`#promotions tr[data-code="`+code+`"] .badge[data-state=disabled]`)),
	)

	// The fan holds A-3 (the keyboard: two steps right of A-1); the sales
	// dashboard, polling, counts it held.
	do(t, org, "the organiser opens the sales dashboard",
		chromedp.Navigate(base+"/organiser/#/event/"+eventID+"/sales"),
		chromedp.WaitVisible(css(`#sales tfoot [data-field=held]`)),
	)
	require.Equal(t, "0", js(t, org, `document.querySelector('#sales tfoot [data-field=held]').textContent`))
	require.Equal(t, "1", js(t, org, `document.querySelector('#sales tr[data-section$="_stalls"] [data-field=blocked]').textContent`))
	do(t, fan, "the fan holds a seat",
		chromedp.Focus(css(`#map canvas`)),
		chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`#selection li[data-seat="`+seat("A-3")+`"]`)),
		chromedp.Focus(css(`#hold`)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`#countdown`)),
	)
	waitJS(t, org, `document.querySelector('#sales tfoot [data-field=held]').textContent`, "1", 15*time.Second)
	require.Contains(t, js(t, org, `document.getElementById('summary').textContent`), "1 held")

	// Paid, the dashboard counts it sold with its revenue.
	payWith(t, fan, "pm_card_visa")
	do(t, fan, "the fan pays", chromedp.WaitVisible(css(`#bstatus`)))
	waitJS(t, fan, `document.getElementById('bstatus').dataset.status`, "PAID", 90*time.Second)
	waitJS(t, org, `document.querySelector('#sales tfoot [data-field=sold]').textContent`, "1", 15*time.Second)
	require.Equal(t, "4550", js(t, org, `document.querySelector('#sales tfoot [data-field=revenue]').dataset.minor`))
	require.Contains(t, js(t, org, `document.querySelector('#sales tfoot [data-field=revenue]').textContent`), "45.50")

	// Cancelling asks first, then follows the refund job to its end.
	do(t, org, "the organiser asks to cancel the event",
		chromedp.Navigate(base+"/organiser/#/event/"+eventID+"/cancel"),
		chromedp.WaitVisible(css(`#cancelform textarea[name=reason]`)),
		chromedp.SetValue(css(`#cancelform textarea[name=reason]`), "the hall flooded"),
		chromedp.Click(css(`#cancelstart`)),
		chromedp.WaitVisible(css(`#confirmcancel`)),
	)
	require.Equal(t, "ON_SALE", js(t, org, `document.querySelector('h1 .badge').dataset.status`), "nothing happens before the confirmation")
	do(t, org, "the organiser confirms and follows the refunds",
		chromedp.Click(css(`#confirmcancel`)),
		chromedp.WaitVisible(css(`#progress`)),
	)
	require.Equal(t, "CANCELLED", js(t, org, `document.querySelector('h1 .badge').dataset.status`), "the header says cancelled at once")
	waitJS(t, org, `document.getElementById('jobstatus').dataset.status`, "done", 2*time.Minute)
	require.Equal(t, "1", js(t, org, `String(document.getElementById('progress').value)`))
	require.Equal(t, "1", js(t, org, `String(document.getElementById('progress').max)`))
	require.Contains(t, js(t, org, `document.getElementById('jobtext').textContent`), "1 of 1 paid bookings refunded")
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payments p JOIN reservations r ON r.id = p.reservation_id
		WHERE r.event_id = $1 AND p.status = 'REFUNDED'`, eventID), "the fan's payment is refunded")
}
