package system_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/system"
)

// offline cuts the tab off the network as DevTools' "Offline" does: every
// request fails, the service worker's too, and navigator.onLine is false.
func offline(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
	if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
		return chromedp.Void{}, err
	}
	yes := true
	if _, err := cdp.Call(ctx, t, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		EmulateOfflineServiceWorker: &yes,
		MatchedNetworkConditions:    []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}},
	}); err != nil {
		return chromedp.Void{}, err
	}
	_, err := cdp.Call(ctx, t, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: true, DownloadThroughput: -1, UploadThroughput: -1})
	return chromedp.Void{}, err
}

// paidTicketPage signs fan in, buys one seat and opens "My tickets" with
// its code drawn; it returns the stack, its URL and the tab.
func paidTicketPage(t *testing.T, fan string) (*e2e, string, context.Context) {
	t.Helper()
	e, base := browserStack(t)
	return e, base, paidTicketIn(t, e, base, fan, 0)
}

// paidTicketIn is paidTicketPage on a stack already up, in a browser of its
// own: fan buys the seat after the first skip of the first row, on a screen
// set by the first actions (a phone's viewport) when there are any.
func paidTicketIn(t *testing.T, e *e2e, base, fan string, skip int, screen ...chromedp.Action[chromedp.Void]) context.Context {
	t.Helper()
	// A browser of its own: the shared one's contexts are incognito, where
	// an app is never installable and a service worker's cache is the
	// context's alone.
	a := browserWith(t, 4*time.Minute, chromedp.WindowSize(1200, 900))
	if len(screen) > 0 {
		do(t, a, "the screen", screen...)
	}
	signInAndOpen(t, a, base, fan+"_"+e.eventID[4:], e.eventID)
	pickSeatsFrom(t, a, skip, 1)
	holdSelection(t, a)
	payWith(t, a, "pm_card_visa")
	waitPaid(t, a, 1)
	js(t, a, `(() => { location.hash = '#/tickets'; return 'tickets' })()`)
	waitJS(t, a, `document.querySelector('#tickets img[data-payload]') ? 'drawn' : ''`, "drawn", 20*time.Second)
	return a
}

// gateFor starts a gate on a full manifest of the stack's event, its clock
// shifted by skew.
func gateFor(t *testing.T, e *e2e, skew time.Duration) *gate.TestGate {
	t.Helper()
	keys, err := manifest.KeysFromConfig(e.cfg)
	require.NoError(t, err)
	kr, err := system.TicketKeyring(e.cfg)
	require.NoError(t, err)
	data, _, err := manifest.Export(context.Background(), e.store, kr, keys, manifest.ExportOptions{EventID: e.eventID})
	require.NoError(t, err)
	return gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &keys, Now: func() time.Time { return time.Now().Add(skew) }})
}

// TestATicketPageOpenedOnceOnlineKeepsShowingChangingCodesOfflineThatTheGateAccepts:
// at a phone's size (and a desktop's, journeySizes) the fan app is
// installable (manifest, icons, service worker); the fan opens their ticket
// online; with the network gone (DevTools' offline, the service worker cut
// off too), the page reloads from the service worker, fits the screen, and
// the code keeps changing, computed on the phone from its wallet key. The
// gate, from its manifest alone, accepts those codes; a code older than two
// periods (a screenshot) is refused.
func TestATicketPageOpenedOnceOnlineKeepsShowingChangingCodesOfflineThatTheGateAccepts(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	for i, size := range journeySizes() {
		// Each size buys a seat of its own in a browser of its own: the
		// service worker and its cache are the browser's, so the desktop's
		// walk starts as cold as the phone's did.
		a := paidTicketIn(t, e, base, "offline_"+size.name, i*2, chromedp.EmulateViewport(size.w, size.h))
		waitJS(t, a, `navigator.serviceWorker.controller ? 'controlled' : ''`, "controlled", 20*time.Second)
		do(t, a, "the app is installable", chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			out, err := cdp.Call(ctx, tg, page.GetInstallabilityErrors, cdp.Empty{})
			if err == nil && len(out.InstallabilityErrors) > 0 {
				err = fmt.Errorf("not installable: %s", out.InstallabilityErrors[0].ErrorID)
			}
			return chromedp.Void{}, err
		}))
		screenshot(t, a, size.name+" the ticket online")

		do(t, a, "the network goes", chromedp.Action[chromedp.Void](offline))
		do(t, a, "reload with no network", chromedp.Reload(), chromedp.WaitVisible(css(`#keptnote`)))
		waitJS(t, a, `document.querySelector('#tickets img[data-payload]') ? 'drawn' : ''`, "drawn", 20*time.Second)
		require.Equal(t, "false", js(t, a, `String(navigator.onLine)`))
		require.Equal(t, "offline", js(t, a, `document.querySelector('#tickets .qrstate').dataset.state`))
		require.Contains(t, js(t, a, `document.querySelector('#tickets .qrstate').textContent`), "works at the door")
		first := js(t, a, `document.querySelector('#tickets img').dataset.payload`)
		waitJS(t, a, `document.querySelector('#tickets img').dataset.payload !== '`+first+`' ? 'changed' : ''`, "changed", 20*time.Second)
		second := js(t, a, `document.querySelector('#tickets img').dataset.payload`)
		require.Equal(t, "true", js(t, a, `document.querySelector('#tickets img').complete && document.querySelector('#tickets img').naturalWidth > 0 ? 'true' : 'false'`),
			"the code is drawn as an image")
		// At the door the fan holds up the page as it opens: the first
		// ticket's code must be whole on that first screen, neither cut off
		// at the side nor below the fold.
		require.Equal(t, "whole", js(t, a, `(() => { const r = document.querySelector('#tickets img').getBoundingClientRect();
			return r.width > 0 && r.left >= 0 && r.top >= 0 && r.right <= document.documentElement.clientWidth && r.bottom <= innerHeight
				? 'whole' : [r.left, r.top, r.right, r.bottom].map(Math.round).join(',') + ' on ' + document.documentElement.clientWidth + 'x' + innerHeight })()`),
			"the code on the first screen")
		fitsAndIsSaved(t, a, size.name, "the code offline")

		g := gateFor(t, e, 0)
		_, r := g.Scan(second, "north-1")
		require.Equal(t, gate.Accepted, r.Result, r.Detail)
		_, r = g.Scan(first, "north-1")
		require.Equal(t, gate.ReasonAlreadyUsed, r.Reason, "the earlier code verifies too (then the ticket is already in): %s", r.Detail)

		later := gateFor(t, e, 31*time.Second)
		_, r = later.Scan(first, "south-1")
		require.Equal(t, gate.ReasonStaleWindow, r.Reason, "a code more than two periods old is refused: %s", r.Detail)
	}
}

// TestOpeningATicketOnAnotherPhoneEndsTheFirstPhonesCodesAtOnce: the same
// fan signs in on a second device, where the ticket says it is on another
// device, and moves it there; the first phone's page, online, stops
// showing a code within a period and says why, and the gate refuses the
// first phone's code once its manifest names the new device.
func TestOpeningATicketOnAnotherPhoneEndsTheFirstPhonesCodesAtOnce(t *testing.T) {
	t.Parallel()
	e, base, a := paidTicketPage(t, "moved")
	oldCode, shownAt := js(t, a, `document.querySelector('#tickets img').dataset.payload`), time.Now()
	user := js(t, a, `sessionStorage.getItem('user') || ''`)
	require.NotEmpty(t, user)

	b := fanTab(t, a)
	signIn(t, b, base, user)
	do(t, b, "the ticket on the second phone", chromedp.Navigate(base+"/#/tickets"))
	// The second phone does not take the ticket by opening the page: it
	// says where the ticket is and offers to move it.
	waitJS(t, b, `document.querySelector('#tickets .qrstate').dataset.state`, "refused", 20*time.Second)
	require.Contains(t, js(t, b, `document.querySelector('#tickets .qrstate').textContent`), "another device")
	js(t, b, `(() => { document.querySelector('#tickets .qrstate button').click(); return 'moved' })()`)
	waitJS(t, b, `document.querySelector('#tickets img[data-payload]') ? 'drawn' : ''`, "drawn", 20*time.Second)
	newCode := js(t, b, `document.querySelector('#tickets img').dataset.payload`)

	waitJS(t, a, `document.querySelector('#tickets .qrstate').dataset.state`, "refused", 20*time.Second)
	require.Contains(t, js(t, a, `document.querySelector('#tickets .qrstate').textContent`), "another device")
	require.Equal(t, "false", js(t, a, `String(!!document.querySelector('#tickets img').getAttribute('src'))`), "no code left on the first phone")

	// The first phone's last code, scanned as at the moment it showed (see
	// the transfer test below), and the second phone's now.
	_, r := gateFor(t, e, -time.Since(shownAt)).Scan(oldCode, "north-1")
	require.Equal(t, gate.ReasonOtherDevice, r.Reason, r.Detail)
	_, r = gateFor(t, e, 0).Scan(newCode, "north-1")
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
}

// TestAFanSendsATicketToAFriendWhoAcceptsItAndShowsItsOwnCode: from "My
// tickets" the buyer sends the ticket to a friend's address; the friend,
// signed in with it, sees the ticket waiting, accepts it and has a ticket
// with a code of its own; the buyer's list no longer holds it and the
// gate refuses its old code as transferred.
func TestAFanSendsATicketToAFriendWhoAcceptsItAndShowsItsOwnCode(t *testing.T) {
	t.Parallel()
	e, base, a := paidTicketPage(t, "sender")
	oldCode, shownAt := js(t, a, `document.querySelector('#tickets img').dataset.payload`), time.Now()
	friend := "friend_" + e.eventID[4:]

	js(t, a, `(() => { document.querySelector('#tickets .transfer details').open = true; return 'open' })()`)
	do(t, a, "send the ticket", chromedp.SendKeys(css(`#tickets .sendform input[name=to]`), friend+"@example.com"))
	js(t, a, `(() => { document.querySelector('#tickets .sendform button').click(); return 'sent' })()`)
	waitJS(t, a, `document.querySelector('#tickets .transfer [data-status=PENDING]') ? 'pending' : ''`, "pending", 20*time.Second)
	require.Contains(t, js(t, a, `document.querySelector('#tickets .transfer').textContent`), friend+"@example.com")
	requireAccessible(t, a, "a ticket being sent")

	b := fanTab(t, a)
	signIn(t, b, base, friend)
	do(t, b, "the friend's tickets", chromedp.Navigate(base+"/#/tickets"), chromedp.WaitVisible(css(`.received button`)))
	js(t, b, `(() => { document.querySelector('.received button').click(); return 'accepted' })()`)
	waitJS(t, b, `document.querySelector('#tickets img[data-payload]') ? 'drawn' : ''`, "drawn", 20*time.Second)
	newCode := js(t, b, `document.querySelector('#tickets img').dataset.payload`)
	require.NotEqual(t, strings.Split(oldCode, ".")[0], strings.Split(newCode, ".")[0], "the friend holds a new ticket")

	do(t, a, "the buyer's list again", chromedp.Reload(), chromedp.WaitVisible(css(`#tickets li[data-status=TRANSFERRED]`)))
	require.Equal(t, "0", js(t, a, `String(document.querySelectorAll('#tickets img').length)`), "no code left for the buyer")

	// The old code is scanned as at the moment it was shown (a fan who kept
	// it open, or a screenshot shown at once): on a loaded machine the
	// steps above outlast its window, and a stale window is not the refusal
	// this test is about.
	_, r := gateFor(t, e, -time.Since(shownAt)).Scan(oldCode, "north-1")
	require.Equal(t, gate.ReasonTransferred, r.Reason, r.Detail)
	_, r = gateFor(t, e, 0).Scan(newCode, "north-1")
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
}
