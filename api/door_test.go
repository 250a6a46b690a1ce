package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/tickets"
)

// TestTheOrganiserSeesEntriesPerGateAndMinuteAndWhoIsInsidePerZone: gates
// report admissions and exits (one report sent twice counts once); the
// event's organiser reads admitted, inside now, per gate, per minute and
// per zone; another organisation reads nothing of it.
func TestTheOrganiserSeesEntriesPerGateAndMinuteAndWhoIsInsidePerZone(t *testing.T) {
	t.Parallel()
	s := newAdminStack(t)
	e := s.orgEvent("door")
	now := time.Now().UTC().Truncate(time.Minute)
	a, b, c := tickets.NewTicketID(), tickets.NewTicketID(), tickets.NewTicketID()
	scan := func(ticket, gate, direction, zone string, at time.Time) map[string]any {
		return map[string]any{"ticket_id": ticket, "gate_id": gate, "device_id": "scanner-1", "direction": direction, "zone": zone,
			"scanned_at": at.Format(time.RFC3339Nano)}
	}
	report := map[string]any{"scans": []any{
		scan(a, "north-1", "in", "", now.Add(-3*time.Minute)),
		scan(b, "north-1", "in", "vip", now.Add(-3*time.Minute+10*time.Second)),
		scan(c, "south-2", "in", "", now.Add(-2*time.Minute)),
		scan(c, "south-2", "out", "", now.Add(-time.Minute)),
	}}
	path := "/v1/admin/events/" + e.eventID + "/door"
	r := s.do(http.MethodPost, path+"/scans", e.token, report)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.EqualValues(t, 4, r.Body["new"])
	r = s.do(http.MethodPost, path+"/scans", e.token, report)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.EqualValues(t, 0, r.Body["new"], "a report sent again counts nothing twice")

	r = s.do(http.MethodGet, path, e.token, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.EqualValues(t, 3, r.Body["admitted"])
	require.EqualValues(t, 2, r.Body["inside"], "the one who went out is not inside")
	require.Equal(t, []any{
		map[string]any{"gate_id": "north-1", "in": float64(2), "out": float64(0), "last_scan_at": now.Add(-3*time.Minute + 10*time.Second).Format(time.RFC3339)},
		map[string]any{"gate_id": "south-2", "in": float64(1), "out": float64(1), "last_scan_at": now.Add(-time.Minute).Format(time.RFC3339)},
	}, r.Body["gates"])
	require.Equal(t, []any{
		map[string]any{"minute": now.Add(-3 * time.Minute).Format(time.RFC3339), "gate_id": "north-1", "in": float64(2)},
		map[string]any{"minute": now.Add(-2 * time.Minute).Format(time.RFC3339), "gate_id": "south-2", "in": float64(1)},
	}, r.Body["per_minute"])
	require.Equal(t, []any{
		map[string]any{"zone": "", "inside": float64(1)},
		map[string]any{"zone": "vip", "inside": float64(1)},
	}, r.Body["zones"])

	other := s.token("someone", "org_other_door", session.Organiser)
	r = s.do(http.MethodGet, path, other, nil)
	require.Equal(t, http.StatusForbidden, r.Status, "another organisation sees nothing: %s", r.Raw)
	r = s.do(http.MethodPost, path+"/scans", other, report)
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
}

func TestABadDoorReportIsRefusedWholeNamingTheField(t *testing.T) {
	t.Parallel()
	s := newAdminStack(t)
	e := s.orgEvent("doorbad")
	good := map[string]any{"ticket_id": tickets.NewTicketID(), "gate_id": "north-1", "scanned_at": time.Now().Format(time.RFC3339)}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range good {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"no scans", map[string]any{"scans": []any{}}, "scans"},
		{"not a ticket", map[string]any{"scans": []any{good, with("ticket_id", "x'--")}}, "scans[1].ticket_id"},
		{"no gate", map[string]any{"scans": []any{with("gate_id", "")}}, "scans[0].gate_id"},
		{"sideways", map[string]any{"scans": []any{with("direction", "sideways")}}, "scans[0].direction"},
		{"tomorrow", map[string]any{"scans": []any{with("scanned_at", time.Now().Add(24*time.Hour).Format(time.RFC3339))}}, "scans[0].scanned_at"},
		{"not json", "nope", "body"},
	}
	for _, tc := range cases {
		r := s.do(http.MethodPost, "/v1/admin/events/"+e.eventID+"/door/scans", e.token, tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s: %s", tc.name, r.Raw)
		require.Equal(t, problemName("invalid-request"), problemType(r), tc.name)
		require.Contains(t, string(r.Raw), `"field":"`+tc.field+`"`, tc.name)
	}
	r := s.do(http.MethodGet, "/v1/admin/events/"+e.eventID+"/door", e.token, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.EqualValues(t, 0, r.Body["admitted"], "nothing of a refused report was kept")
}
