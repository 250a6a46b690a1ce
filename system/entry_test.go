package system_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/system"
)

// TestAPaidBookingGetsInOnceAtTheGate: a booking paid through the saga, a
// manifest export, the fan's rotating code scanned at one gate (accepted) and
// again at another gate (rejected as already used, naming the first gate).
func TestAPaidBookingGetsInOnceAtTheGate(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan := e.fan("concertgoer")
	seat := e.seat(9, 9)
	id, _ := e.buy(fan, seat)
	var ticketID string
	require.Eventually(t, func() bool {
		_, b := e.call(http.MethodGet, "/v1/bookings/"+id, fan, nil)
		ts, _ := b["tickets"].([]any)
		if len(ts) != 1 {
			return false
		}
		ticketID = ts[0].(map[string]any)["id"].(string)
		return true
	}, 20*time.Second, 50*time.Millisecond)

	keyring, err := system.TicketKeyring(e.cfg)
	require.NoError(t, err)
	keys, err := manifest.KeysFromConfig(e.cfg)
	require.NoError(t, err)
	data, _, err := manifest.Export(context.Background(), e.store, keyring, keys, manifest.ExportOptions{EventID: e.eventID})
	require.NoError(t, err)

	status, qr := e.call(http.MethodGet, "/v1/tickets/"+ticketID+"/qr", fan, nil)
	require.Equal(t, http.StatusOK, status, "%v", qr)
	payload := qr["payload"].(string)

	north := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &keys})
	code, first := north.Scan(payload, "north-1")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "accepted", first.Result, "%+v", first)
	require.Equal(t, seat, first.SeatID)

	south := gate.StartForTest(t, gate.TestOptions{DBPath: north.DBPath(), Keys: &keys, EventID: e.eventID})
	_, second := south.Scan(payload, "south-2")
	require.Equal(t, "rejected", second.Result)
	require.Equal(t, "already_used", second.Reason)
	require.Equal(t, "north-1", second.FirstGateID)
	require.NotNil(t, second.FirstEntryAt)
}
