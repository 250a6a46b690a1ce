package gate_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/system"
)

const childEnv = "ENCORE_GATE_TEST_CHILD"

// TestMain doubles as a second gate process: with ENCORE_GATE_TEST_CHILD set
// to a ledger path it serves a gate on that file until its stdin closes.
func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(runChildGate(path, os.Getenv(childEnv+"_EVENT"), os.Getenv(childEnv+"_TOKEN")))
	}
	os.Exit(m.Run())
}

func runChildGate(path, event, token string) int {
	keys, err := manifest.KeysFromConfig(config.Default())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := gate.OpenStore(path, keys.Encryption, gate.StoreOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	devices, err := gate.ParseDevices(gate.TestDevice + ":" + token)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &gate.Server{Gate: &gate.Gate{Store: st, EventID: event}, Devices: devices, Mode: gate.ModeLedger}
	addr, done, err := system.Serve(ctx, "127.0.0.1:0", srv.Handler())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("LISTEN %s\n", addr)
	_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes stdin to stop us
	cancel()
	<-done
	return 0
}

// startChildGate runs a gate in another process on the same ledger file,
// pairing TestDevice with token.
func startChildGate(t *testing.T, path, event, token string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path, childEnv+"_EVENT="+event, childEnv+"_TOKEN="+token)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTEN ")
	require.True(t, ok, line)
	return "http://" + addr
}

// startAtShowtime starts a test gate on a manifest of ts sealed with keys
// under header h, its scanner clock at showtime; the test moves the clock it
// returns. opt sets the rest (ledger options, mode).
func startAtShowtime(t testing.TB, keys manifest.Keys, h manifest.Header, ts []ticket, opt gate.TestOptions) (*gate.TestGate, *clock) {
	t.Helper()
	clk := &clock{t: showtime}
	opt.Manifest, opt.Keys, opt.Now = sealed(t, keys, h, ts), &keys, clk.Now
	return gate.StartForTest(t, opt), clk
}

// scanURL posts one scan. A request that got no answer at all (the
// connection closed under it) returns its transport error, for the caller to
// retry as a scanner would; any other failure is reported with t.Errorf.
func scanURL(t testing.TB, client *http.Client, url, token, payload, gateID string) (int, gate.Result, error) {
	body := fmt.Sprintf(`{"payload":%q,"gate_id":%q}`, payload, gateID)
	req, err := http.NewRequest(http.MethodPost, url+"/v1/scan", strings.NewReader(body))
	if err != nil {
		t.Errorf("scan: %v", err)
		return 0, gate.Result{}, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, gate.Result{}, err
	}
	defer resp.Body.Close()
	var r gate.Result
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Errorf("scan: decode: %v", err)
	}
	return resp.StatusCode, r, nil
}

func TestTwoGateProcessesRacingOnOneLedgerLetEachTicketInExactlyOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a second process")
	}
	keys := devKeys(t)
	const nTickets = 500
	ts := makeTickets(t, nTickets, "sec_race")
	now := time.Now()
	data := sealed(t, keys, manifest.Header{EventID: "evt_race", Version: now.UnixMicro(), ExpiresAt: now.Add(time.Hour)}, ts)
	a := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &keys})
	urls := []string{a.URL, startChildGate(t, a.DBPath(), "evt_race", a.Token)}

	// Every goroutine of both gates scans every ticket, each in its own
	// order: 200 scans race for each ticket, 100,000 scans in all. Under the
	// race detector 40 goroutines per gate each scan a window of 100 tickets
	// starting at its own offset: every ticket is still raced by 16 scans
	// from both gates. With a hundred per gate under the race detector, on a
	// loaded machine a scan queued for the ledger past the server's 30 s
	// request deadline (its context ends and the connection closes
	// unanswered), with the ledger on a RAM disk, where one process's
	// commits are so quick that the other's busy wait seldom finds SQLite's
	// lock free.
	goroutines, perGoroutine := 100, nTickets // goroutines per gate
	if testenv.Race {
		goroutines, perGoroutine = 40, 100
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * goroutines}, Timeout: 30 * time.Second}
	type tally struct{ accepted, used, lostThenUsed, other int }
	results := make([]tally, 2*goroutines)
	acceptedBy := make([]map[string]bool, 2*goroutines)
	lostThenUsed := make([][]string, 2*goroutines)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range 2 * goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acceptedBy[g] = map[string]bool{}
			order := rand.Perm(nTickets)
			if perGoroutine < nTickets {
				order = order[:0]
				for k := range perGoroutine {
					order = append(order, (g%goroutines*nTickets/goroutines+k)%nTickets)
				}
				rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			}
			gateID := fmt.Sprintf("gate-%d", g/goroutines)
			<-start
			for _, i := range order {
				code, r, err := scanURL(t, client, urls[g/goroutines], a.Token, ts[i].code(time.Now()), gateID)
				// A scan whose answer was lost may have let the ticket in:
				// the scanner asks again, and an "already used" then
				// cannot say whose entry it was.
				lost := false
				for try := 0; err != nil && try < 3; try++ {
					lost = true
					t.Logf("scan of %s lost (%v): asking again", ts[i].ID, err)
					code, r, err = scanURL(t, client, urls[g/goroutines], a.Token, ts[i].code(time.Now()), gateID)
				}
				switch {
				case err != nil:
					results[g].other++
					t.Errorf("scan of %s: no answer in four tries: %v", ts[i].ID, err)
				case code == http.StatusOK && r.Result == gate.Accepted:
					results[g].accepted++
					acceptedBy[g][r.TicketID] = true
				case code == http.StatusOK && r.Reason == gate.ReasonAlreadyUsed && lost:
					results[g].lostThenUsed++
					lostThenUsed[g] = append(lostThenUsed[g], r.TicketID)
				case code == http.StatusOK && r.Reason == gate.ReasonAlreadyUsed:
					results[g].used++
				default:
					results[g].other++
					t.Errorf("unexpected %d %+v", code, r)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	var sum tally
	perGate := [2]int{}
	seen := map[string]int{}
	ambiguous := map[string]bool{}
	for g, r := range results {
		sum.accepted += r.accepted
		sum.used += r.used
		sum.lostThenUsed += r.lostThenUsed
		sum.other += r.other
		perGate[g/goroutines] += r.accepted
		for id := range acceptedBy[g] {
			seen[id]++
		}
		for _, id := range lostThenUsed[g] {
			ambiguous[id] = true
		}
	}
	require.Zero(t, sum.other)
	require.Equal(t, 2*goroutines*perGoroutine, sum.accepted+sum.used+sum.lostThenUsed, "every scan answered")
	// No ticket was let in twice; each was let in by one answered scan, or
	// by a scan whose answer was lost (asked again, it was already used).
	// Lost answers are the loaded machine's, and rare: a bound keeps a
	// gate that drops connections from passing as one that races well.
	require.LessOrEqual(t, sum.lostThenUsed, 2*goroutines*perGoroutine/100, "lost answers")
	for _, tk := range ts {
		n := seen[tk.ID]
		require.LessOrEqual(t, n, 1, "%s let in by %d answers", tk.ID, n)
		require.True(t, n == 1 || ambiguous[tk.ID], "%s let in by no answer and by no lost scan", tk.ID)
	}
	require.Positive(t, perGate[0], "both gates won some races")
	require.Positive(t, perGate[1], "both gates won some races")
	t.Logf("accepted by gate-0: %d, by gate-1 (other process): %d", perGate[0], perGate[1])

	var rows int
	db, err := sql.Open("sqlite3", gate.DSN(a.DBPath(), gate.StoreOptions{}))
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM entries`).Scan(&rows))
	require.Equal(t, nTickets, rows)
}

func TestEachRejectedScanNamesItsReason(t *testing.T) {
	t.Parallel()
	keys := devKeys(t)
	ts := makeTickets(t, 6, "sec_a")
	valid, used, revoked, other := ts[0], ts[1], ts[2], makeTickets(t, 1, "sec_other")[0]
	unknown := makeTickets(t, 1, "sec_a")[0]

	g, clk := startAtShowtime(t, keys, manifest.Header{EventID: "evt_tonight"}, ts, gate.TestOptions{})
	ctx := context.Background()
	// Tomorrow's show is in the same ledger: its tickets are "wrong event".
	m, err := manifest.Open(sealed(t, keys, manifest.Header{EventID: "evt_tomorrow"}, []ticket{other}), keys, clk.t)
	require.NoError(t, err)
	_, err = g.Store.Import(ctx, m, clk.t)
	require.NoError(t, err)
	// A delta revokes a refunded ticket.
	m, err = manifest.Open(sealed(t, keys, manifest.Header{EventID: "evt_tonight", Kind: manifest.KindDelta,
		BaseVersion: showtime.Add(-24 * time.Hour).UnixMicro(), Version: showtime.Add(-time.Hour).UnixMicro()}, nil, revoked.ID), keys, clk.t)
	require.NoError(t, err)
	res, err := g.Store.Import(ctx, m, clk.t)
	require.NoError(t, err)
	require.Equal(t, 1, res.Revoked)

	code, r := g.Scan(used.code(clk.t), "north-1")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, gate.Accepted, r.Result)
	firstAt := clk.t.Truncate(time.Millisecond)

	forged := valid.code(clk.t)
	forged = forged[:len(forged)-1] + map[bool]string{true: "0", false: "1"}[strings.HasSuffix(forged, "1")]

	cases := []struct {
		name    string
		payload string
		reason  string
		check   func(t *testing.T, r gate.Result)
	}{
		{"garbage", "https://example.invalid/not-a-ticket", gate.ReasonInvalidCode, nil},
		{"forged MAC", forged, gate.ReasonInvalidCode, nil},
		{"two windows old", valid.code(clk.t.Add(-30 * time.Second)), gate.ReasonStaleWindow, nil},
		{"unknown ticket", unknown.code(clk.t), gate.ReasonUnknownTicket, nil},
		{"other event", other.code(clk.t), gate.ReasonWrongEvent, func(t *testing.T, r gate.Result) {
			require.Contains(t, r.Detail, "evt_tomorrow")
		}},
		{"revoked", revoked.code(clk.t), gate.ReasonRevoked, nil},
		{"already used", used.code(clk.t.Add(10 * time.Second)), gate.ReasonAlreadyUsed, func(t *testing.T, r gate.Result) {
			require.Equal(t, "north-1", r.FirstGateID)
			require.NotNil(t, r.FirstEntryAt)
			require.True(t, firstAt.Equal(*r.FirstEntryAt), "%s != %s", firstAt, r.FirstEntryAt)
			require.Equal(t, used.SeatID, r.SeatID)
			require.Contains(t, r.Detail, "north-1")
		}},
	}
	// Serial, as are the subtests below: the skew cases change the
	// ledger, the expiry one the clock, and the metrics count every scan.
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, r := g.Scan(tc.payload, "south-2")
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, gate.Rejected, r.Result)
			require.Equal(t, tc.reason, r.Reason, r.Detail)
			require.NotEmpty(t, r.Detail)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}

	t.Run("skew of 15 seconds either way", func(t *testing.T) {
		for i, skew := range []time.Duration{-15 * time.Second, 15 * time.Second} {
			code, r := g.Scan(ts[3+i].code(clk.t.Add(skew)), "south-2")
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, gate.Accepted, r.Result, r.Detail)
		}
	})

	t.Run("manifest expired", func(t *testing.T) {
		defer func(t0 time.Time) { clk.t = t0 }(clk.t)
		clk.t = showtime.Add(12 * time.Hour)
		_, r := g.Scan(ts[5].code(clk.t), "south-2")
		require.Equal(t, gate.ReasonManifestExpired, r.Reason)
		require.Contains(t, r.Detail, "expired")
		resp, err := http.Get(g.URL + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	})

	t.Run("metrics", func(t *testing.T) {
		resp, err := http.Get(g.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, want := range []string{"encore_gate_scans_total 11", "encore_gate_accepts_total 3",
			`encore_gate_rejects_total{reason="already_used"} 1`, `encore_gate_rejects_total{reason="invalid_code"} 2`,
			`encore_gate_rejects_total{reason="manifest_expired"} 1`, `encore_gate_scan_duration_seconds_count{result="accepted"} 3`} {
			require.Contains(t, string(body), want)
		}
		for _, reason := range gate.Reasons {
			rejects(t, g, reason) // every reason is exported from the start, at zero
		}
	})
}

func TestBadRequestsAreProblems(t *testing.T) {
	t.Parallel()
	g, _ := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_x"}, makeTickets(t, 1, "s"), gate.TestOptions{})
	for name, body := range map[string]string{
		"not JSON":        `payload=1`,
		"missing gate_id": `{"payload":"x"}`,
		"bad gate_id":     `{"payload":"x","gate_id":"north gate!"}`,
		"unknown field":   `{"payload":"x","gate_id":"n","extra":1}`,
		"two objects":     `{"payload":"x","gate_id":"n"}{}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodPost, g.URL+"/v1/scan", strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+g.Token)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		})
	}
}

func TestLedgerFailureFailsClosed(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 3, "sec_a")
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_fc"}, ts,
		gate.TestOptions{Store: gate.StoreOptions{BusyTimeout: 100 * time.Millisecond}})

	// Serial: the second step closes the ledger the first scans.
	t.Run("another process holds the write lock past the busy timeout", func(t *testing.T) {
		db, err := sql.Open("sqlite3", gate.DSN(g.DBPath(), gate.StoreOptions{}))
		require.NoError(t, err)
		defer db.Close()
		tx, err := db.Begin() // BEGIN IMMEDIATE: takes the write lock
		require.NoError(t, err)
		code, r := g.Scan(ts[0].code(clk.t), "n1")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, gate.Rejected, r.Result)
		require.Equal(t, gate.ReasonUnavailable, r.Reason)
		require.NoError(t, tx.Rollback())
		code, r = g.Scan(ts[0].code(clk.t), "n1")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, gate.Accepted, r.Result, "the lock is gone: the same ticket now enters")
	})

	t.Run("the ledger is gone", func(t *testing.T) {
		require.NoError(t, g.Store.Close())
		code, r := g.Scan(ts[1].code(clk.t), "n1")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, gate.ReasonUnavailable, r.Reason)
		resp, err := http.Get(g.URL + "/healthz")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.JSONEq(t, `{"status":"unavailable","failing":["ledger"]}`, string(body),
			"names the failing check, never the driver's error text")
		require.Equal(t, 2.0, rejects(t, g, gate.ReasonUnavailable))
	})
}

// rejects reads encore_gate_rejects_total{reason} from a test gate.
func rejects(t *testing.T, g *gate.TestGate, reason string) float64 {
	t.Helper()
	mfs, err := g.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "encore_gate_rejects_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no rejects metric for %s", reason)
	return 0
}

func TestAScanWithoutTheScannersDeviceTokenIsRefusedAndBurnsNoTicket(t *testing.T) {
	t.Parallel()
	ts := makeTickets(t, 1, "sec_auth")
	g, clk := startAtShowtime(t, devKeys(t), manifest.Header{EventID: "evt_auth"}, ts, gate.TestOptions{})
	body := fmt.Sprintf(`{"payload":%q,"gate_id":"north-1"}`, ts[0].code(clk.Now()))
	for name, auth := range map[string]string{
		"no credential":         "",
		"a guessed token":       "Bearer " + gate.NewDeviceToken(),
		"the token as Basic":    "Basic " + g.Token,
		"the token with a tail": "Bearer " + g.Token + "x",
		"a prefix of the token": "Bearer " + g.Token[:32],
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodPost, g.URL+"/v1/scan", strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var p map[string]any
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			require.Equal(t, "/problems/unauthorized", p["type"])
			require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
		})
	}
	t.Cleanup(func() {
		// The refused scans burned nothing: the paired scanner still admits.
		code, r := g.Scan(ts[0].code(clk.Now()), "north-1")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, gate.Accepted, r.Result)
	})
}

func TestGateDevicesAreParsedWithoutEverPrintingAToken(t *testing.T) {
	t.Parallel()
	tok := gate.NewDeviceToken()
	d, err := gate.ParseDevices(" north-1:" + tok + ", south-2:" + gate.NewDeviceToken())
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodPost, "/", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	id, ok := d.Authenticate(req)
	require.True(t, ok)
	require.Equal(t, "north-1", id)
	for _, bad := range []string{"", "north-1", "north-1:short-secret-value", "north 1:" + tok, "a:" + tok + ",a:" + tok} {
		_, err := gate.ParseDevices(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), tok)
		require.NotContains(t, err.Error(), "short-secret-value")
	}
}
