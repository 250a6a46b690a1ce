package gate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
)

// TestACodeFromAPhoneTheTicketLeftIsRefusedOnceADeltaNamesTheNewPhone: the
// gate verifies a phone's offline codes from the manifest alone; a code of
// a generation newer than the manifest knows is let in (the fan moved the
// ticket after the export), and once a delta carries the new generation,
// the old phone's codes are refused with reason other_device while the new
// phone's are accepted.
func TestACodeFromAPhoneTheTicketLeftIsRefusedOnceADeltaNamesTheNewPhone(t *testing.T) {
	t.Parallel()
	keys := devKeys(t)
	ts := makeTickets(t, 3, "sec_a")
	for i := range ts {
		ts[i].Generation = 1 // each opened on a first phone before the export
	}
	g, clk := startAtShowtime(t, keys, manifest.Header{EventID: "evt_phones"}, ts, gate.TestOptions{})

	_, r := g.Scan(ts[0].deviceCode(1, clk.t), "north-1")
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
	_, r = g.Scan(ts[1].deviceCode(2, clk.t), "north-1")
	require.Equal(t, gate.Accepted, r.Result, "a phone newer than the manifest: %s", r.Detail)

	moved := ts[2]
	moved.Generation = 2
	m, err := manifest.Open(sealed(t, keys, manifest.Header{EventID: "evt_phones", Kind: manifest.KindDelta,
		BaseVersion: showtime.Add(-24 * time.Hour).UnixMicro(), Version: showtime.Add(-time.Hour).UnixMicro()}, []ticket{moved}), keys, clk.t)
	require.NoError(t, err)
	_, err = g.Store.Import(context.Background(), m, clk.t)
	require.NoError(t, err)

	_, r = g.Scan(ts[2].deviceCode(1, clk.t), "north-1")
	require.Equal(t, gate.Rejected, r.Result)
	require.Equal(t, gate.ReasonOtherDevice, r.Reason, r.Detail)
	_, r = g.Scan(ts[2].code(clk.t), "north-1")
	require.Equal(t, gate.ReasonOtherDevice, r.Reason, "the server's own code (generation 0) is older than any phone's")
	_, r = g.Scan(ts[2].deviceCode(2, clk.t), "north-1")
	require.Equal(t, gate.Accepted, r.Result, r.Detail)

	// A screenshot of the new phone's code stops working after two periods.
	shot := ts[1].deviceCode(2, clk.t)
	clk.t = clk.t.Add(30 * time.Second)
	_, r = g.Scan(shot, "north-1")
	require.Equal(t, gate.ReasonStaleWindow, r.Reason, r.Detail)
}
