package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
)

// call sends one request to a test gate with a bearer token ("" for none)
// and decodes the JSON answer into out (when not nil).
func call(t *testing.T, url, token, method, path, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil {
		require.NoError(t, json.Unmarshal(raw, out), "%d %s", resp.StatusCode, raw)
	}
	return resp.StatusCode
}

func scanBody(payload, gateID, direction, zone string) string {
	b, _ := json.Marshal(gate.ScanRequest{Payload: payload, GateID: gateID, Direction: direction, Zone: zone})
	return string(b)
}

func TestWithReentryAFanWhoWentOutComesBackInOnceAndWithoutItASecondInIsAlreadyUsed(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 2, "sec_a")
	keys := devKeys(t)
	open, clk := startAtShowtime(t, keys, manifest.Header{EventID: "evt_reentry"}, ts, gate.TestOptions{Reentry: true})
	closed := gate.StartForTest(t, gate.TestOptions{Manifest: sealed(t, keys, manifest.Header{EventID: "evt_noreentry"}, ts),
		Keys: &keys, Now: clk.Now})

	for _, g := range []*gate.TestGate{open, closed} {
		var r gate.Result
		require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "north-1", "", ""), &r))
		require.Equal(t, gate.Accepted, r.Result, r.Detail)
		require.Equal(t, gate.In, r.Direction, "in is the default")
		clk.t = clk.t.Add(time.Minute)
		require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "south-2", "out", ""), &r))
		require.Equal(t, gate.Accepted, r.Result, "out: %s", r.Detail)
		require.Equal(t, gate.Out, r.Direction)
		call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "south-2", "out", ""), &r)
		require.Equal(t, gate.ReasonNotInside, r.Reason, "a second out: the fan is not inside")
		require.NotNil(t, r.MovedAt)
		call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(ts[1].code(clk.t), "south-2", "out", ""), &r)
		require.Equal(t, gate.ReasonNotInside, r.Reason, "out before ever coming in")
		require.Contains(t, r.Detail, "never came in")
	}

	var r gate.Result
	call(t, open.URL, open.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "east-3", "in", ""), &r)
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
	require.True(t, r.Reentry)
	call(t, open.URL, open.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "east-3", "in", ""), &r)
	require.Equal(t, gate.ReasonAlreadyUsed, r.Reason, "back in already: a second in is refused")
	require.Equal(t, "north-1", r.FirstGateID)
	require.Equal(t, "east-3", r.MovedGateID)
	require.True(t, *r.Inside)

	call(t, closed.URL, closed.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "east-3", "in", ""), &r)
	require.Equal(t, gate.Rejected, r.Result)
	require.Equal(t, gate.ReasonAlreadyUsed, r.Reason, "no re-entry: out and back in is refused")
	require.Equal(t, "north-1", r.FirstGateID)
	require.Equal(t, showtime.Add(time.Minute), *r.FirstEntryAt, "the closed gate let it in a minute after the open one")
	require.False(t, *r.Inside)
	require.Contains(t, r.Detail, "no re-entry")
}

func TestTwoGatesRacingOnAReturningFanLetThemBackInExactlyOnce(t *testing.T) {
	t.Parallel()
	const n = 40
	ts := makeTickets(t, n, "sec_a")
	a, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_race_back"}, ts, gate.TestOptions{Reentry: true})
	b := gate.StartForTest(t, gate.TestOptions{DBPath: a.DBPath(), Now: clk.Now, Reentry: true}) // another gate, same ledger
	for _, tk := range ts {
		_, r := a.Scan(tk.code(clk.t), "north-1")
		require.Equal(t, gate.Accepted, r.Result)
		_, err := a.Gate.Try(context.Background(), gate.Attempt{Payload: tk.code(clk.t), GateID: "north-1", Direction: gate.Out})
		require.NoError(t, err)
	}
	accepted := make([]int, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, tk := range ts {
		for _, g := range []*gate.TestGate{a, b, a, b} {
			wg.Go(func() {
				_, r := g.Scan(tk.code(clk.t), "door")
				if r.Result == gate.Accepted {
					mu.Lock()
					accepted[i]++
					mu.Unlock()
				} else if r.Reason != gate.ReasonAlreadyUsed {
					t.Errorf("%s: %s %s", tk.ID, r.Reason, r.Detail)
				}
			})
		}
	}
	wg.Wait()
	for i, got := range accepted {
		require.Equal(t, 1, got, "ticket %d: four racing scans back in, one accepted", i)
	}
	c, err := a.Store.Counts(context.Background(), "evt_race_back")
	require.NoError(t, err)
	require.Equal(t, n, c.Inside)
	require.Equal(t, n, c.Entered)
}

func TestAScannerInAZoneAdmitsOnlyTicketsOfItsSections(t *testing.T) {
	t.Parallel()
	vip, floor := makeTickets(t, 1, "sec_vip")[0], makeTickets(t, 1, "sec_floor")[0]
	zones := gate.Zones{}
	require.NoError(t, zones.ParseZone("vip=sec_vip, sec_box"))
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_zones"}, []ticket{vip, floor}, gate.TestOptions{Zones: zones})

	var r gate.Result
	call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(floor.code(clk.t), "lounge-1", "in", "vip"), &r)
	require.Equal(t, gate.Rejected, r.Result)
	require.Equal(t, gate.ReasonWrongZone, r.Reason, r.Detail)
	require.Equal(t, "vip", r.Zone)
	call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(vip.code(clk.t), "lounge-1", "in", "vip"), &r)
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
	call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(floor.code(clk.t), "north-1", "in", ""), &r)
	require.Equal(t, gate.Accepted, r.Result, "the main doors admit every ticket: %s", r.Detail)

	var p map[string]any
	require.Equal(t, http.StatusUnprocessableEntity, call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(vip.code(clk.t), "x", "in", "backstage"), &p))
	require.Equal(t, "zone", p["errors"].([]any)[0].(map[string]any)["field"])

	for _, bad := range []string{"vip", "=a", "vip=", "vip= , ", "v i p=a"} {
		require.Error(t, gate.Zones{}.ParseZone(bad), bad)
	}
	require.Error(t, zones.ParseZone("vip=sec_x"), "a zone named twice")
}

// bookedTickets are tickets with bookings and attendees, as an export
// from the database lists them.
func bookedTickets(t *testing.T) []ticket {
	ts := makeTickets(t, 4, "sec_a")
	ts[0].BookingCode, ts[0].Attendee = "3f2a9c1b-0000-4000-8000-000000000001", "ada.lovelace@example.com"
	ts[1].BookingCode, ts[1].Attendee = "3f2a9c1b-0000-4000-8000-000000000001", "ada.lovelace@example.com"
	ts[2].BookingCode, ts[2].Attendee = "77aa0000-0000-4000-8000-000000000002", "grace_hopper@example.com"
	ts[3].BookingCode, ts[3].Attendee = "88bb0000-0000-4000-8000-000000000003", "100%real@example.com"
	return ts
}

func TestStaffFindATicketByBookingCodeOrNameAndAdmitItWithTheSameChecks(t *testing.T) {
	t.Parallel()
	ts := bookedTickets(t)
	keys := devKeys(t)
	g := gate.StartForTest(t, gate.TestOptions{Manifest: sealed(t, keys, manifest.Header{EventID: "evt_lookup"}, ts, ts[3].ID),
		Keys: &keys, Now: (&clock{t: showtime}).Now})

	type found struct {
		Tickets []gate.Found `json:"tickets"`
	}
	var f found
	require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "GET", "/v1/lookup?q=3F2A-9c1b", "", &f))
	require.Len(t, f.Tickets, 2, "a booking's two tickets, by a short booking code, case and dashes ignored")
	require.Equal(t, "ada.lovelace@example.com", f.Tickets[0].Attendee)
	require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "GET", "/v1/lookup?q=HOPPER", "", &f))
	require.Len(t, f.Tickets, 1, "by part of the name, case ignored")
	require.Equal(t, ts[2].ID, f.Tickets[0].TicketID)
	require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "GET", "/v1/lookup?q=0%25", "", &f))
	require.Len(t, f.Tickets, 1, "a wildcard is a character, not everyone")
	require.True(t, f.Tickets[0].Revoked, "a revoked ticket is listed as revoked, so staff can say why")
	require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "GET", "/v1/lookup?q=_h", "", &f))
	require.Len(t, f.Tickets, 1)

	var r gate.Result
	admit := func(id string) string {
		b, _ := json.Marshal(gate.AdmitRequest{TicketID: id, GateID: "box-office"})
		return string(b)
	}
	require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "POST", "/v1/admit", admit(ts[2].ID), &r))
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
	require.True(t, r.Manual)
	require.Equal(t, ts[2].SeatID, r.SeatID)
	call(t, g.URL, g.Token, "POST", "/v1/admit", admit(ts[2].ID), &r)
	require.Equal(t, gate.ReasonAlreadyUsed, r.Reason, "a manual admit burns the ticket like a scan")
	call(t, g.URL, g.Token, "POST", "/v1/admit", admit(ts[3].ID), &r)
	require.Equal(t, gate.ReasonRevoked, r.Reason)
	call(t, g.URL, g.Token, "POST", "/v1/admit", admit("tkt_nosuchticket"), &r)
	require.Equal(t, gate.ReasonUnknownTicket, r.Reason)

	require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "GET", "/v1/lookup?q=hopper", "", &f))
	require.Equal(t, "box-office", f.Tickets[0].GateID, "the lookup shows the entry")
	require.NotNil(t, f.Tickets[0].EnteredAt)

	var p map[string]any
	for _, q := range []string{"", "a", strings.Repeat("x", 65)} {
		require.Equal(t, http.StatusUnprocessableEntity, call(t, g.URL, g.Token, "GET", "/v1/lookup?q="+q, "", &p), q)
		require.Equal(t, "/problems/invalid-request", p["type"])
		require.Equal(t, "q", p["errors"].([]any)[0].(map[string]any)["field"])
	}
	require.Equal(t, http.StatusUnauthorized, call(t, g.URL, "", "GET", "/v1/lookup?q=hopper", "", &p), "a lookup needs a device token")
	require.Equal(t, http.StatusUnauthorized, call(t, g.URL, "", "POST", "/v1/admit", admit(ts[0].ID), &p))
}

func TestCountsSayHowManyCameInThroughEachGateAndHowManyAreInside(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 5, "sec_a")
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_counts"}, ts, gate.TestOptions{Reentry: true})
	var c gate.Counts
	require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "GET", "/v1/counts", "", &c))
	require.Equal(t, gate.Counts{EventID: "evt_counts", Tickets: 5, Reentry: true, Gates: []gate.GateCount{}}, c)
	for i, gid := range []string{"north-1", "north-1", "south-2"} {
		_, r := g.Scan(ts[i].code(clk.t), gid)
		require.Equal(t, gate.Accepted, r.Result)
	}
	call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "south-2", "out", ""), nil)
	require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "GET", "/v1/counts", "", &c))
	require.Equal(t, gate.Counts{EventID: "evt_counts", Tickets: 5, Entered: 3, Inside: 2, Reentry: true,
		Gates: []gate.GateCount{{GateID: "north-1", Entries: 2}, {GateID: "south-2", Entries: 1}}}, c)
	require.Equal(t, http.StatusUnauthorized, call(t, g.URL, "", "GET", "/v1/counts", "", nil))
}

func TestBadScanAdmitAndPairBodiesAreProblemsNamingTheField(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 1, "s")
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_bad"}, ts, gate.TestOptions{})
	code := ts[0].code(clk.t)
	for _, c := range []struct{ name, path, body, field string }{
		{"scan: a direction that is neither", "/v1/scan", scanBody(code, "n", "sideways", ""), "direction"},
		{"scan: an unknown zone", "/v1/scan", scanBody(code, "n", "in", "vip"), "zone"},
		{"scan: no gate", "/v1/scan", scanBody(code, "", "", ""), "gate_id"},
		{"scan: a number for the payload", "/v1/scan", `{"payload":1,"gate_id":"n"}`, "payload"},
		{"scan: an unknown field", "/v1/scan", `{"payload":"x","gate_id":"n","speed":1}`, "speed"},
		{"admit: no ticket", "/v1/admit", `{"gate_id":"n"}`, "ticket_id"},
		{"admit: a ticket ID with spaces", "/v1/admit", `{"ticket_id":"a b","gate_id":"n"}`, "ticket_id"},
		{"admit: a bad direction", "/v1/admit", `{"ticket_id":"tkt_x","gate_id":"n","direction":"up"}`, "direction"},
		{"pair: a code too short", "/v1/pair", `{"code":"ABC"}`, "code"},
		{"pair: a code with letters not in the alphabet", "/v1/pair", `{"code":"ABCD-EFG0"}`, "code"},
		{"pair: a name with a control character", "/v1/pair", `{"code":"ABCD-EFGH","name":"a\u0007"}`, "name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var p map[string]any
			require.Equal(t, http.StatusUnprocessableEntity, call(t, g.URL, g.Token, "POST", c.path, c.body, &p))
			require.Equal(t, "/problems/invalid-request", p["type"])
			require.Equal(t, c.field, p["errors"].([]any)[0].(map[string]any)["field"], p)
		})
	}
	require.Equal(t, 0.0, rejects(t, g, gate.ReasonAlreadyUsed), "nothing was scanned")
}

// FuzzScanBodies: whatever a scanner sends to /v1/scan, /v1/admit or
// /v1/pair, the gate answers 2xx, or 4xx with a problem, never a 5xx.
func FuzzScanBodies(f *testing.F) {
	for _, s := range []string{`{"payload":"a.b.c","gate_id":"n"}`, `{"payload":"x","gate_id":"n","direction":"out","zone":"vip"}`,
		`{"ticket_id":"tkt_x","gate_id":"n"}`, `{"code":"ABCD-EFGH","name":"North 3"}`, `{}`, `[]`, `null`, `{"payload":1}`, "\x00"} {
		f.Add(s)
	}
	keys := devKeys(f)
	ts := makeTickets(f, 1, "sec_vip")
	zones := gate.Zones{}
	require.NoError(f, zones.ParseZone("vip=sec_vip"))
	g, _ := startAtShowtime(f, keys, manifest.Header{EventID: "evt_fuzz"}, ts, gate.TestOptions{Zones: zones})
	devices, err := gate.ParseDevices(gate.TestDevice + ":" + g.Token)
	require.NoError(f, err)
	h := (&gate.Server{Gate: g.Gate, Devices: devices, Mode: gate.ModeLedger}).Handler()
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/scan", "/v1/admit", "/v1/pair"} {
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			req.RemoteAddr = fmt.Sprintf("127.0.0.%d:1", len(body)%250+1)
			req.Header.Set("Authorization", "Bearer "+g.Token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %q: %d %s", path, body, rec.Code, rec.Body)
			}
			if rec.Code >= 400 {
				require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"), "%s %q", path, body)
			}
		}
	})
}

// TestTheEventsReentryRuleComesWithItsManifest: a gate started without
// --reentry follows the event's rule from the manifest: its app is told
// re-entry is on, and a fan who went out comes back in.
func TestTheEventsReentryRuleComesWithItsManifest(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 1, "sec_a")
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_rule", Reentry: true}, ts, gate.TestOptions{})
	var cfg struct {
		Reentry bool `json:"reentry"`
	}
	require.Equal(t, http.StatusOK, call(t, g.URL, g.Token, "GET", "/v1/config", "", &cfg))
	require.True(t, cfg.Reentry, "the app shows the event's rule")

	var r gate.Result
	call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "north-1", "in", ""), &r)
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
	call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "north-1", "out", ""), &r)
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
	call(t, g.URL, g.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "north-1", "in", ""), &r)
	require.Equal(t, gate.Accepted, r.Result, "back in under the event's rule: %s", r.Detail)
	require.True(t, r.Reentry)
}
