package system_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/vocab"
)

// TestTheOrganiserWatchesTheDoorFillPerGateAndZoneAsGatesReport: with the
// doors open, the event's Door page shows admitted and inside now, entries
// per gate, a bar per minute and who is inside per zone, and follows new
// reports by itself.
func TestTheOrganiserWatchesTheDoorFillPerGateAndZoneAsGatesReport(t *testing.T) {
	t.Parallel()
	e, base := organiserStack(t)
	tab := browser(t, 3*time.Minute)
	ownTheStacksEvent(t, e, tab, base, "dora")
	ctx := context.Background()

	now := time.Now()
	scan := func(gate, zone string, dir vocab.Direction, ago time.Duration) store.DoorScan {
		return store.DoorScan{TicketID: tickets.NewTicketID(), GateID: gate, DeviceID: "scanner", Direction: dir, Zone: zone, ScannedAt: now.Add(-ago)}
	}
	_, err := e.store.Door.RecordScans(ctx, e.eventID, []store.DoorScan{
		scan("north-1", "", vocab.DirectionIn, 3*time.Minute), scan("north-1", "vip", vocab.DirectionIn, 2*time.Minute),
		scan("south-2", "", vocab.DirectionIn, time.Minute),
	})
	require.NoError(t, err)

	do(t, tab, "the door page", chromedp.Navigate(base+"/organiser/#/event/"+e.eventID+"/door"),
		chromedp.WaitVisible(css(`#gates tr[data-gate="north-1"]`)))
	require.Equal(t, "3 admitted, 3 inside now.", js(t, tab, `document.getElementById('doorsum').textContent`))
	require.Equal(t, "2", js(t, tab, `document.querySelector('#gates tr[data-gate="north-1"] [data-field=in]').textContent`))
	require.Equal(t, "1", js(t, tab, `document.querySelector('#zones tr[data-zone="vip"] [data-field=inside]').textContent`))
	require.Equal(t, "3", js(t, tab, `String(document.querySelectorAll('#perminute .bar').length)`), "a bar a minute with entries")
	requireAccessible(t, tab, "the door page")

	// The event's re-entry rule, which the gates read from the manifest.
	js(t, tab, `(() => { document.querySelector('#reentryform input').click(); return 'clicked' })()`)
	waitJS(t, tab, `document.getElementById('announce').textContent`, "Re-entry allowed", 10*time.Second)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM events WHERE id = $1 AND reentry`, e.eventID))

	// A gate reports more: the page follows without a reload.
	_, err = e.store.Door.RecordScans(ctx, e.eventID, []store.DoorScan{scan("south-2", "", vocab.DirectionIn, 0)})
	require.NoError(t, err)
	waitJS(t, tab, `document.getElementById('doorsum').textContent`, "4 admitted, 4 inside now.", 15*time.Second)
}

// ownTheStacksEvent signs an organiser of a fresh organisation in on tab and
// makes the stack's event, and a copy of its venue (the stacks share
// theirs), that organisation's.
func ownTheStacksEvent(t *testing.T, e *e2e, tab context.Context, base, name string) {
	t.Helper()
	suffix := testenv.RandomSuffix()
	org := "org_" + name + "_" + suffix
	organiserSignsIn(t, tab, base, name+"_"+suffix, org)
	ctx := context.Background()
	_, err := e.store.Pool().Exec(ctx, `INSERT INTO venues
		SELECT (jsonb_populate_record(NULL::venues, to_jsonb(v) || jsonb_build_object('id', $1::text, 'org_id', $2::text))).*
		FROM venues v WHERE v.id = (SELECT venue_id FROM events WHERE id = $3)`, "ven_"+suffix, org, e.eventID)
	require.NoError(t, err)
	_, err = e.store.Pool().Exec(ctx, `UPDATE events SET org_id = $1, venue_id = $2 WHERE id = $3`, org, "ven_"+suffix, e.eventID)
	require.NoError(t, err)
}
