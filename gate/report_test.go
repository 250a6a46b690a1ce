package gate_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
)

// doorAPI stands for the API's door endpoint over loopback: it keeps what
// gates report, and fails while told to (the venue's internet is down).
type doorAPI struct {
	mu    sync.Mutex
	down  bool
	scans []gate.ReportedScan
	auth  []string
}

func (d *doorAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.auth = append(d.auth, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	if d.down {
		http.Error(w, "no route to the internet", http.StatusBadGateway)
		return
	}
	var body struct{ Scans []gate.ReportedScan }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	d.scans = append(d.scans, body.Scans...)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{}`))
}

// TestTheGateReportsAdmissionsAndExitsToTheDoorViewAndCatchesUpAfterAnOutage:
// the gate admits while the API is unreachable, and its next report carries
// what it missed: first entries with their zone and device, then an exit.
func TestTheGateReportsAdmissionsAndExitsToTheDoorViewAndCatchesUpAfterAnOutage(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 2, "sec_vip")
	zones := gate.Zones{}
	require.NoError(t, zones.ParseZone("vip=sec_vip"))
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_report"}, ts, gate.TestOptions{Reentry: true, Zones: zones})
	api := &doorAPI{down: true}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	rep := &gate.Reporter{Store: g.Store, EventID: "evt_report", Zones: zones, URL: srv.URL, Token: "organiser-token"}
	ctx := context.Background()

	_, r := g.Scan(ts[0].code(clk.t), "north-1")
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
	since, err := rep.Once(ctx, 0)
	require.Error(t, err, "the API is down: the report waits")
	require.Zero(t, since)

	api.mu.Lock()
	api.down = false
	api.mu.Unlock()
	clk.t = clk.t.Add(2 * time.Second)
	_, err = g.Gate.Try(ctx, gate.Attempt{Payload: ts[0].code(clk.t), GateID: "north-1", Direction: gate.Out})
	require.NoError(t, err)
	since, err = rep.Once(ctx, since)
	require.NoError(t, err)
	require.Equal(t, clk.t.UnixMilli(), since)

	api.mu.Lock()
	defer api.mu.Unlock()
	require.Len(t, api.scans, 2)
	require.Equal(t, gate.ReportedScan{TicketID: ts[0].ID, GateID: "north-1", DeviceID: gate.TestDevice, Direction: "in", Zone: "vip",
		ScannedAt: showtime.Truncate(time.Millisecond)}, api.scans[0])
	require.Equal(t, "out", api.scans[1].Direction)
	require.Equal(t, "POST /v1/admin/events/evt_report/door/scans Bearer organiser-token", api.auth[len(api.auth)-1])
}
