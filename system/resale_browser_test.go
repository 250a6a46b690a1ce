package system_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestTheOrganiserAllowsResaleWithACapAndAFeeAndABadFeeIsNamed: on the
// event's overview the organiser turns resale on at 120 % of face value
// with a 2.5 % fee; a fee past the limit is refused naming the field, and
// what was saved stays.
func TestTheOrganiserAllowsResaleWithACapAndAFeeAndABadFeeIsNamed(t *testing.T) {
	t.Parallel()
	e, base := organiserStack(t)
	tab := browser(t, 3*time.Minute)
	ownTheStacksEvent(t, e, tab, base, "rita")

	do(t, tab, "the overview", chromedp.Navigate(base+"/organiser/#/event/"+e.eventID), chromedp.WaitVisible(css(`#resale`)))
	requireAccessible(t, tab, "the resale settings")
	js(t, tab, `(() => { const f = document.getElementById('resale'); f.elements['resale.enabled'].checked = true;
		f.elements['resale.max_price_percent'].value = '120'; f.elements['resale.fee_percent'].value = '2.5';
		f.querySelector('#saveresale').click(); return 'saved' })()`)
	waitJS(t, tab, `document.getElementById('announce').textContent`, "Resale allowed up to 120% of face value", 15*time.Second)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM events WHERE id = $1 AND resale_enabled AND resale_max_price_bp = 12000 AND resale_fee_bp = 250`, e.eventID))

	js(t, tab, `(() => { const f = document.getElementById('resale'); f.elements['resale.fee_percent'].value = '60';
		f.querySelector('#saveresale').click(); return 'saved' })()`)
	waitJS(t, tab, `document.getElementById('resale-errors').hidden ? '' : document.getElementById('resale-errors').textContent.includes('resale.fee_percent') ? 'named' : 'other'`,
		"named", 15*time.Second)
	require.Equal(t, "true", js(t, tab, `document.querySelector('#resale [name="resale.fee_percent"]').getAttribute('aria-invalid') || ''`))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM events WHERE id = $1 AND resale_fee_bp = 250`, e.eventID), "the refused fee changed nothing")
}
