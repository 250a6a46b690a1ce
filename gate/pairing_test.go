package gate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
)

func pairBody(code, name string) string {
	b, _ := json.Marshal(gate.PairRequest{Code: code, Name: name})
	return string(b)
}

func TestAScannerPairsWithACodeOnceAndEveryScanRecordsIt(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 2, "sec_a")
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_pair"}, ts, gate.TestOptions{})
	// encore gate pair, beside the running gate: another connection on the
	// same ledger file.
	keys := devKeys(t)
	cli, err := gate.OpenStore(g.DBPath(), keys.Encryption, gate.StoreOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	code, exp, err := cli.NewPairingCode(context.Background(), "North 3", clk.t, 0)
	require.NoError(t, err)
	require.Len(t, code, gate.PairingCodeLength)
	require.Equal(t, clk.t.Add(gate.PairingTTL), exp)

	var p gate.PairResponse
	typed := strings.ToLower(gate.FormatPairingCode(code)) // as staff type it
	require.Equal(t, http.StatusCreated, call(t, g.URL, "", "POST", "/v1/pair", pairBody(typed, "phone"), &p))
	require.Equal(t, "North 3", p.Name, "the name given to encore gate pair wins")
	require.True(t, strings.HasPrefix(p.DeviceID, "scn_"), p.DeviceID)
	require.GreaterOrEqual(t, len(p.Token), gate.MinDeviceTokenBytes)

	var problem map[string]any
	require.Equal(t, http.StatusForbidden, call(t, g.URL, "", "POST", "/v1/pair", pairBody(code, ""), &problem), "a code pairs once")
	require.Equal(t, "/problems/pairing-code-invalid", problem["type"])

	var r gate.Result
	require.Equal(t, http.StatusOK, call(t, g.URL, p.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "north-3", "", ""), &r))
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
	_, r = g.Scan(ts[1].code(clk.t), "north-1") // the static test device
	require.Equal(t, gate.Accepted, r.Result, "static devices keep working beside paired ones")

	db := ledgerDB(t, g.DBPath())
	for id, want := range map[string]string{ts[0].ID: p.DeviceID, ts[1].ID: gate.TestDevice} {
		var device string
		require.NoError(t, db.QueryRow(`SELECT device_id FROM entries WHERE ticket_id = ?`, id).Scan(&device))
		require.Equal(t, want, device, "the entry records the scanner")
	}
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM devices WHERE token_sha256 = ? OR instr(name, ?) > 0`, p.Token, p.Token).Scan(&n))
	require.Zero(t, n, "the ledger keeps the token's digest, never the token")
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM pairing_codes WHERE code_sha256 = ?`, code).Scan(&n))
	require.Zero(t, n, "nor the code")
}

func TestARevokedScannerIsRefusedAtItsNextRequest(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 1, "sec_a")
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_revoke"}, ts, gate.TestOptions{})
	ctx := context.Background()
	code, _, err := g.Store.NewPairingCode(ctx, "South 1", clk.t, 0)
	require.NoError(t, err)
	var p gate.PairResponse
	require.Equal(t, http.StatusCreated, call(t, g.URL, "", "POST", "/v1/pair", pairBody(code, ""), &p))
	require.Equal(t, http.StatusOK, call(t, g.URL, p.Token, "GET", "/v1/counts", "", nil))

	d, err := g.Store.RevokeDevice(ctx, "South 1", clk.t) // by its name, the only live one so called
	require.NoError(t, err)
	require.Equal(t, p.DeviceID, d.ID)
	var problem map[string]any
	require.Equal(t, http.StatusUnauthorized, call(t, g.URL, p.Token, "POST", "/v1/scan", scanBody(ts[0].code(clk.t), "s-1", "", ""), &problem))
	require.Equal(t, "/problems/unauthorized", problem["type"])
	require.Equal(t, http.StatusUnauthorized, call(t, g.URL, p.Token, "GET", "/v1/config", "", nil))
	_, r := g.Scan(ts[0].code(clk.t), "north-1")
	require.Equal(t, gate.Accepted, r.Result, "the refused scan burned nothing")

	list, err := g.Store.Devices(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.NotNil(t, list[0].RevokedAt)
	_, err = g.Store.RevokeDevice(ctx, "scn_nosuchdevice", clk.t)
	require.ErrorIs(t, err, gate.ErrNoDevice)
}

func TestAPairingCodeExpiresAfterTenMinutes(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 1, "sec_a")
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_expire"}, ts, gate.TestOptions{})
	code, _, err := g.Store.NewPairingCode(context.Background(), "East 2", clk.t, 0)
	require.NoError(t, err)
	clk.t = clk.t.Add(gate.PairingTTL)
	var problem map[string]any
	require.Equal(t, http.StatusForbidden, call(t, g.URL, "", "POST", "/v1/pair", pairBody(code, ""), &problem))
	require.Equal(t, "code", problem["errors"].([]any)[0].(map[string]any)["field"])

	fresh, _, err := g.Store.NewPairingCode(context.Background(), "East 2", clk.t, time.Minute)
	require.NoError(t, err)
	clk.t = clk.t.Add(59 * time.Second)
	require.Equal(t, http.StatusCreated, call(t, g.URL, "", "POST", "/v1/pair", pairBody(fresh, ""), nil), "good until it expires")
}

func TestGuessingPairingCodesIsSlowedToAFewTriesAMinute(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 1, "sec_a")
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_guess"}, ts, gate.TestOptions{})
	code, _, err := g.Store.NewPairingCode(context.Background(), "West 4", clk.t, 0)
	require.NoError(t, err)
	statuses := map[int]int{}
	for range 8 {
		statuses[call(t, g.URL, "", "POST", "/v1/pair", pairBody("ABCD-EFGH", ""), nil)]++
	}
	require.Equal(t, map[int]int{http.StatusForbidden: 5, http.StatusTooManyRequests: 3}, statuses)
	var problem map[string]any
	require.Equal(t, http.StatusTooManyRequests, call(t, g.URL, "", "POST", "/v1/pair", pairBody(code, ""), &problem),
		"even the right code waits: the guesser cannot tell")
	require.Equal(t, "/problems/rate-limited", problem["type"])
}

func TestPairingCodesAreShortUnambiguousAndTypedAnyWay(t *testing.T) {
	t.Parallel()
	st, err := gate.OpenStore(filepath.Join(t.TempDir(), "l.db"), devKeys(t).Encryption, gate.StoreOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	seen := map[string]bool{}
	for range 50 {
		code, _, err := st.NewPairingCode(context.Background(), "n", showtime, 0)
		require.NoError(t, err)
		require.False(t, seen[code])
		seen[code] = true
		for _, c := range code {
			require.Contains(t, gate.PairingAlphabet, string(c))
		}
		norm, ok := gate.NormalizePairingCode(" " + strings.ToLower(gate.FormatPairingCode(code)) + " ")
		require.True(t, ok)
		require.Equal(t, code, norm)
	}
	for _, bad := range []string{"", "ABCDEFG", "ABCDEFGHJ", "ABCD-EFG0", "ABCD-EFGI", "ABCD-EFGO"} {
		_, ok := gate.NormalizePairingCode(bad)
		require.False(t, ok, bad)
	}
	_, _, err = st.NewPairingCode(context.Background(), "", showtime, 0)
	require.Error(t, err, "a device needs a name")
}

// ledgerDB opens a ledger file for a test to read, as another process would.
func ledgerDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", gate.DSN(path, gate.StoreOptions{}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
