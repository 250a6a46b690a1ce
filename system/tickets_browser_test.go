package system_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestATicketsCodeSurvivesANetworkBlipSaysSoAndRefreshesByItself(t *testing.T) {
	t.Parallel()
	_, a, _ := oneSeatHeld(t, "blip")
	payWith(t, a, "pm_card_visa")
	waitPaid(t, a, 1)
	first := js(t, a, `document.querySelector('#tickets img').src`)

	// The signal drops: every code fetch fails as a lost connection does.
	js(t, a, `(() => { window.realFetch = window.fetch; window.fetch = (input, init) => String(input).includes('/qr')
		? Promise.reject(new TypeError('Failed to fetch')) : window.realFetch(input, init); return 'offline' })()`)
	// At the code's next refresh (within a window), the page keeps the last
	// code, greys it once expired, and says what is happening in words.
	waitJS(t, a, `document.querySelector('#tickets .qrstate').dataset.state`, "offline", 20*time.Second)
	require.Equal(t, "Could not refresh the code. Trying again…", js(t, a, `document.querySelector('#tickets .qrstate').textContent`))
	require.Equal(t, first, js(t, a, `document.querySelector('#tickets img').src`), "the last code stays on screen")
	waitJS(t, a, `String(document.querySelector('#tickets img').classList.contains('stale'))`, "true", 5*time.Second)
	require.Equal(t, "true", js(t, a, `String(document.getElementById('problem').hidden)`), "no raw browser error in the banner")
	require.NotContains(t, js(t, a, `document.body.innerText`), "Failed to fetch")

	// The signal comes back: the page tries again by itself and shows a
	// fresh code, with nothing pressed and nothing reloaded.
	js(t, a, `window.notReloaded = 'yes'`)
	js(t, a, `(() => { window.fetch = window.realFetch; return 'online' })()`)
	waitJS(t, a, `document.querySelector('#tickets .qrstate').dataset.state`, "live", 10*time.Second)
	require.NotEqual(t, first, js(t, a, `document.querySelector('#tickets img').src`))
	require.Equal(t, "false", js(t, a, `String(document.querySelector('#tickets img').classList.contains('stale'))`))
	require.Equal(t, "yes", js(t, a, `window.notReloaded`))
}
