package system_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
)

// axeSource is axe-core 4.14.1 from npm (testdata/axe: its licence beside
// it), the accessibility engine the checks below run in the page.
//
//go:embed testdata/axe/axe.min.js
var axeSource string

// axeViolation is one rule a page breaks, with the elements that break it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any `json:"target"`
	} `json:"nodes"`
}

// requireAccessible runs axe-core's WCAG 2.x A and AA rules (2.2 included)
// on the tab's page as it stands and fails on any serious or critical
// violation, naming the rule and the elements.
func requireAccessible(t *testing.T, tab context.Context, page string) {
	t.Helper()
	var bad, minor []string
	for _, v := range axeViolations(t, tab, page) {
		if v.Impact != "serious" && v.Impact != "critical" {
			minor = append(minor, v.ID+" ("+v.Impact+")")
			continue
		}
		var where []string
		for _, n := range v.Nodes {
			where = append(where, fmt.Sprint(n.Target...))
		}
		bad = append(bad, fmt.Sprintf("%s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(where, ", ")))
	}
	if len(minor) > 0 {
		t.Logf("%s: minor or moderate findings left: %s", page, strings.Join(minor, ", "))
	}
	require.Empty(t, bad, "accessibility violations on %s", page)
}

// requireNoSidewaysScroll fails when the page is wider than the screen: a
// fan on a phone would scroll sideways to read it.
func requireNoSidewaysScroll(t *testing.T, tab context.Context, page string) {
	t.Helper()
	require.Equal(t, "fits", js(t, tab, `(() => { const d = document.documentElement;
		if (d.scrollWidth <= d.clientWidth) return 'fits';
		const clipped = el => { for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
			if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) return true; } return false };
		const wide = [...document.querySelectorAll('body *')].filter(el => el.getBoundingClientRect().right > d.clientWidth + 1 && !clipped(el))
			.slice(0, 5).map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : ''));
		const spill = [...document.querySelectorAll('body, body *')].filter(el => el.scrollWidth > el.clientWidth + 1 &&
			getComputedStyle(el).overflowX === 'visible' && el.clientWidth > 0).slice(-3)
			.map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + el.clientWidth + '<' + el.scrollWidth);
		return 'page ' + d.scrollWidth + ' px wide on a ' + d.clientWidth + ' px screen: ' + wide.concat(spill).join(', ') })()`), "%s at phone width", page)
}

// fitsAndIsSaved requires a page walked at a phone's size to fit its width,
// and saves the page, whatever the size, as "<size> <page>".
func fitsAndIsSaved(t *testing.T, tab context.Context, size, page string) {
	t.Helper()
	if size == "phone" {
		requireNoSidewaysScroll(t, tab, page)
	}
	screenshot(t, tab, size+" "+page)
}

// axeViolations runs axe-core on the tab's page as it stands.
func axeViolations(t *testing.T, tab context.Context, page string) []axeViolation {
	t.Helper()
	if js(t, tab, `String(typeof window.axe)`) != "object" {
		_, err := chromedp.Run(tab, chromedp.Evaluate[any](axeSource+";0"))
		require.NoError(t, err, "load axe-core")
	}
	require.Equal(t, "4.14.1", js(t, tab, `axe.version`))
	ctx, cancel := context.WithTimeout(tab, time.Minute)
	defer cancel()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {runOnly: {type: 'tag',
		values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}, resultTypes: ['violations']})
		.then(r => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
	require.NoError(t, err, "run axe-core on %s", page)
	var vs []axeViolation
	require.NoError(t, json.Unmarshal([]byte(out), &vs))
	return vs
}

// TestEveryPageOfTheFanAppPassesAxeCoresWCAGChecks walks a fan's pages at
// phone and desktop sizes: the events list, an event with its seat map,
// a hold, a paid booking, my bookings and my tickets.
func TestEveryPageOfTheFanAppPassesAxeCoresWCAGChecks(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	a := browser(t, 4*time.Minute)
	for _, size := range []struct {
		name string
		w, h int64
	}{{"phone", 360, 740}, {"desktop", 1366, 900}} {
		do(t, a, size.name, chromedp.EmulateViewport(size.w, size.h))
		do(t, a, "the events list", chromedp.Navigate(base+"/"), chromedp.WaitVisible(css(`#events li a`)))
		if size.name == "phone" {
			// The check can fail: a button without a name is found.
			js(t, a, `(() => { const b = document.createElement('button'); b.id = 'canary'; document.body.append(b); return 'planted' })()`)
			var ids []string
			for _, v := range axeViolations(t, a, "canary") {
				ids = append(ids, v.ID)
			}
			require.Contains(t, ids, "button-name", "axe-core finds a planted violation")
			js(t, a, `(() => { document.getElementById('canary').remove(); return 'removed' })()`)
		}
		requireAccessible(t, a, size.name+": events")
		do(t, a, "the event", chromedp.Navigate(base+"/#/event/"+e.eventID), chromedp.WaitVisible(css(`#map canvas[data-version]`)))
		requireAccessible(t, a, size.name+": event, signed out")
		if size.name == "phone" {
			requireNoSidewaysScroll(t, a, "event, signed out")
		}
	}
	// The signed-in walk is at phone width: nothing may scroll sideways.
	do(t, a, "a phone", chromedp.EmulateViewport(360, 740))
	fits := func(page string) { requireNoSidewaysScroll(t, a, page); requireAccessible(t, a, page) }
	signInAndOpen(t, a, base, "axe_"+e.eventID[4:], e.eventID)
	fits("event, signed in")
	pickSeats(t, a, 1)
	holdSelection(t, a)
	waitJS(t, a, `document.getElementById('main').dataset.paymentForm || ''`, "ready", 30*time.Second)
	fits("hold")
	payWith(t, a, e.pay.card())
	waitPaid(t, a, 1)
	fits("paid booking")
	do(t, a, "my bookings", chromedp.Navigate(base+"/#/bookings"), chromedp.WaitVisible(css(`ul.bookings li`)))
	fits("my bookings")
	do(t, a, "my tickets", chromedp.Navigate(base+"/#/tickets"), chromedp.WaitVisible(css(`#tickets img`)))
	require.Contains(t, js(t, a, `document.querySelector('#tickets li .event').textContent`), "E2E", "a ticket names its event")
	fits("my tickets")
	do(t, a, "the events list", chromedp.Navigate(base+"/"), chromedp.WaitVisible(css(`#events li a`)))
	fits("events, signed in")
}

// TestEveryPageOfTheOrganiserAppPassesAxeCoresWCAGChecks walks an
// organiser's pages: sign-in, venues, a new event's form, the event with
// its seats, promotions, sales, orders, attendees and cancellation, and
// the events list.
func TestEveryPageOfTheOrganiserAppPassesAxeCoresWCAGChecks(t *testing.T) {
	t.Parallel()
	_, base := organiserStack(t)
	o := browser(t, 4*time.Minute)
	do(t, o, "the sign-in", chromedp.Navigate(base+"/organiser/"), chromedp.WaitVisible(css(`#signin input[name=user]`)))
	requireAccessible(t, o, "organiser sign-in")
	suffix := testenv.RandomSuffix()
	organiserSignsIn(t, o, base, "axe_"+suffix, "org_axe_"+suffix)
	eventID := organiserPublishes(t, o, base, "Axe Night "+suffix)
	requireAccessible(t, o, "organiser events")
	// The rest at phone width: nothing may scroll sideways (tables scroll
	// inside their own region).
	do(t, o, "a phone", chromedp.EmulateViewport(360, 740))
	do(t, o, "events", chromedp.Navigate(base+"/organiser/#/"), chromedp.WaitVisible(css(`#events tr[data-event="`+eventID+`"]`)))
	requireNoSidewaysScroll(t, o, "organiser events")
	do(t, o, "venues", chromedp.Navigate(base+"/organiser/#/venues"), chromedp.WaitVisible(css(`#upload input[name=file]`)))
	requireAccessible(t, o, "venues")
	requireNoSidewaysScroll(t, o, "organiser venues")
	for _, tab := range []struct{ path, ready string }{
		{"", `#fanlink`}, {"/seats", `#map canvas[data-version]`}, {"/promotions", `#promoform input[name=code]`},
		{"/sales", `#sales tfoot [data-field=held]`}, {"/orders", `#orderq`}, {"/attendees", `#attendeeq`},
		{"/cancel", `#cancelform textarea[name=reason]`},
	} {
		do(t, o, "event"+tab.path, chromedp.Navigate(base+"/organiser/#/event/"+eventID+tab.path), chromedp.WaitVisible(css(tab.ready)))
		requireAccessible(t, o, "event"+tab.path)
		requireNoSidewaysScroll(t, o, "organiser event"+tab.path)
	}
}
