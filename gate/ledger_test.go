package gate_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
)

func TestOnlyANewerManifestOrADeltaOnItsBaseIsImported(t *testing.T) {
	t.Parallel()
	keys := devKeys(t)
	ts := makeTickets(t, 4, "sec_v")
	v1 := showtime.Add(-48 * time.Hour).UnixMicro()
	v2 := showtime.Add(-24 * time.Hour).UnixMicro()
	v3 := showtime.Add(-2 * time.Hour).UnixMicro()
	g, clk := startAtShowtime(t, keys, manifest.Header{EventID: "evt_v", Version: v2}, ts[:3], gate.TestOptions{})
	ctx := context.Background()
	open := func(h manifest.Header, list []ticket, revoked ...string) *manifest.Manifest {
		h.EventID = "evt_v"
		m, err := manifest.Open(sealed(t, keys, h, list, revoked...), keys, clk.t)
		require.NoError(t, err)
		return m
	}
	var verr *gate.VersionError

	_, err := g.Store.Import(ctx, open(manifest.Header{Version: v1}, ts), clk.t)
	require.ErrorAs(t, err, &verr)
	require.ErrorContains(t, err, "not newer", "an earlier export never replaces a later one")

	_, err = g.Store.Import(ctx, open(manifest.Header{Version: v2}, ts), clk.t)
	require.ErrorAs(t, err, &verr, "the same version twice is refused")

	_, err = g.Store.Import(ctx, open(manifest.Header{Kind: manifest.KindDelta, BaseVersion: v2 + 1, Version: v3}, nil), clk.t)
	require.ErrorContains(t, err, "import the export it follows first")

	// ts[3] is issued and ts[0] refunded after v2: a delta from v2 carries both.
	res, err := g.Store.Import(ctx, open(manifest.Header{Kind: manifest.KindDelta, BaseVersion: v2, Version: v3}, ts[3:], ts[0].ID), clk.t)
	require.NoError(t, err)
	require.Equal(t, 1, res.Revoked)
	_, r := g.Scan(ts[0].code(clk.t), "n")
	require.Equal(t, gate.ReasonRevoked, r.Reason)
	_, r = g.Scan(ts[3].code(clk.t), "n")
	require.Equal(t, gate.Accepted, r.Result)

	// A later full export supersedes: ts[1] is no longer listed, so it is
	// revoked; ts[3]'s entry stays in the ledger.
	res, err = g.Store.Import(ctx, open(manifest.Header{Version: v3 + 1}, []ticket{ts[2], ts[3]}), clk.t)
	require.NoError(t, err)
	require.Equal(t, 1, res.Revoked)
	_, r = g.Scan(ts[1].code(clk.t), "n")
	require.Equal(t, gate.ReasonRevoked, r.Reason)
	_, r = g.Scan(ts[3].code(clk.t), "n")
	require.Equal(t, gate.ReasonAlreadyUsed, r.Reason)
	_, r = g.Scan(ts[2].code(clk.t), "n")
	require.Equal(t, gate.Accepted, r.Result)

	ms, err := g.Store.Manifests(ctx)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Equal(t, v3+1, ms[0].Version)
	require.Equal(t, 2, ms[0].Tickets)
	require.Equal(t, 2, ms[0].Revoked)
	require.Equal(t, 2, ms[0].Entries)

	other := gate.StartForTest(t, gate.TestOptions{Keys: &keys, Now: clk.Now, DBPath: t.TempDir() + "/empty.db", EventID: "evt_v"})
	_, err = other.Store.Import(ctx, open(manifest.Header{Kind: manifest.KindDelta, BaseVersion: v2, Version: v3}, nil), clk.t)
	require.ErrorContains(t, err, "needs a full one first")
}

func TestOfflineScannersLetADoubleEntryThroughAndSyncReportsIt(t *testing.T) {
	t.Parallel()
	keys := devKeys(t)
	clk := &clock{t: showtime}
	ctx := context.Background()
	ts := makeTickets(t, 4, "sec_off")
	data := sealed(t, keys, manifest.Header{EventID: "evt_off"}, ts)
	ledger := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &keys, Now: clk.Now})
	east := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &keys, Now: clk.Now, Mode: gate.ModeOffline})
	west := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &keys, Now: clk.Now, Mode: gate.ModeOffline})

	// The LAN is down. A copied code gets in at both offline scanners: the
	// trade-off of staying open.
	_, r := east.Scan(ts[0].code(clk.t), "east-1")
	require.Equal(t, gate.Accepted, r.Result)
	clk.t = clk.t.Add(20 * time.Second)
	_, r = west.Scan(ts[0].code(clk.t), "west-1")
	require.Equal(t, gate.Accepted, r.Result, "an offline scanner cannot know about the other's entry")
	_, r = east.Scan(ts[1].code(clk.t), "east-1")
	require.Equal(t, gate.Accepted, r.Result)
	// Meanwhile the ledger gate let ts[1] in too.
	_, r = ledger.Scan(ts[1].code(clk.t.Add(-5*time.Second)), "main-1")
	require.Equal(t, gate.Accepted, r.Result)
	// Each scanner still refuses its own replays.
	_, r = west.Scan(ts[0].code(clk.t), "west-1")
	require.Equal(t, gate.ReasonAlreadyUsed, r.Reason)

	now := clk.t.Add(time.Minute)
	rep, err := gate.Sync(ctx, ledger.Store, east.Store, now)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Pushed)
	require.Len(t, rep.Doubles, 1)
	require.Equal(t, ts[1].ID, rep.Doubles[0].TicketID)
	require.Equal(t, "main-1", rep.Doubles[0].First.GateID, "the earlier entry comes first")
	require.Equal(t, "east-1", rep.Doubles[0].Second.GateID)
	require.Zero(t, rep.Pulled, "east already had both entries the ledger holds")

	rep, err = gate.Sync(ctx, ledger.Store, west.Store, now)
	require.NoError(t, err)
	require.Zero(t, rep.Pushed)
	require.Len(t, rep.Doubles, 1)
	require.Equal(t, ts[0].ID, rep.Doubles[0].TicketID)
	require.Equal(t, "east-1", rep.Doubles[0].First.GateID)
	require.Equal(t, "west-1", rep.Doubles[0].Second.GateID)
	require.Equal(t, ts[0].SeatID, rep.Doubles[0].SeatID)
	require.Equal(t, 1, rep.Pulled, "west learns of ts[1], let in at main-1")

	// Syncing again finds nothing new; the ledger keeps both doubles.
	rep, err = gate.Sync(ctx, ledger.Store, east.Store, now)
	require.NoError(t, err)
	require.Zero(t, rep.Pushed+len(rep.Doubles))
	all, err := ledger.Store.DoubleEntries(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)

	// After syncing, the offline scanner knows what the ledger knows.
	code, r := west.Scan(ts[1].code(clk.t), "west-1")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, gate.ReasonAlreadyUsed, r.Reason)
	require.Equal(t, "main-1", r.FirstGateID)
}
