package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/manifest"
)

// TestOptions configure StartForTest.
type TestOptions struct {
	// Manifest, when set, is opened and imported before the gate serves.
	Manifest []byte
	// Keys default to the development keys of config.Default, the ones
	// encore dev and an unconfigured encore manifest export use.
	Keys *manifest.Keys
	// DBPath shares a ledger with another test gate (two gates, one file);
	// empty: a fresh file in t.TempDir().
	DBPath string
	// EventID defaults to the manifest's event.
	EventID string
	// Now is the scanner's clock; default time.Now.
	Now   func() time.Time
	Store StoreOptions
	Mode  string
	// Reentry and Zones are the gate's --reentry and --zone.
	Reentry bool
	Zones   Zones
}

// TestDevice is the scanner StartForTest pairs; TestGate.Scan sends its
// token.
const TestDevice = "test-scanner"

// TestGate is a gate serving on a loopback httptest server.
type TestGate struct {
	URL string
	// Token is TestDevice's bearer token.
	Token    string
	Gate     *Gate
	Store    *Store
	Registry *prometheus.Registry
	t        testing.TB
}

// StartForTest starts a gate as encore gate does, on a loopback test server
// closed when the test ends. For an end-to-end test: export a manifest with
// manifest.Export, start a gate with it, scan tickets.Payload codes with
// TestGate.Scan, and start a second gate on the first one's DBPath to race
// or replay at "another gate".
func StartForTest(t testing.TB, opt TestOptions) *TestGate {
	t.Helper()
	keys := opt.Keys
	if keys == nil {
		k, err := manifest.KeysFromConfig(config.Default())
		if err != nil {
			t.Fatalf("gate: development keys: %v", err)
		}
		keys = &k
	}
	path := opt.DBPath
	if path == "" {
		path = filepath.Join(t.TempDir(), "gate.db")
	}
	st, err := OpenStore(path, keys.Encryption, opt.Store)
	if err != nil {
		t.Fatalf("gate: open ledger: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	event := opt.EventID
	if len(opt.Manifest) > 0 {
		m, err := manifest.Open(opt.Manifest, *keys, now())
		if err != nil {
			t.Fatalf("gate: open manifest: %v", err)
		}
		if _, err := st.Import(context.Background(), m, now()); err != nil {
			t.Fatalf("gate: import manifest: %v", err)
		}
		if event == "" {
			event = m.EventID
		}
	}
	if event == "" {
		ms, err := st.Manifests(context.Background())
		if err != nil || len(ms) != 1 {
			t.Fatalf("gate: name TestOptions.EventID (ledger holds %d manifests, err %v)", len(ms), err)
		}
		event = ms[0].EventID
	}
	reg := prometheus.NewRegistry()
	g := &Gate{Store: st, EventID: event, Now: now, Metrics: NewMetrics(reg), Reentry: opt.Reentry, Zones: opt.Zones}
	mode := opt.Mode
	if mode == "" {
		mode = ModeLedger
	}
	token := NewDeviceToken()
	devices, err := ParseDevices(TestDevice + ":" + token)
	if err != nil {
		t.Fatalf("gate: devices: %v", err)
	}
	ts := httptest.NewServer((&Server{Gate: g, Devices: devices, Mode: mode, Gatherer: reg}).Handler())
	t.Cleanup(ts.Close)
	return &TestGate{URL: ts.URL, Token: token, Gate: g, Store: st, Registry: reg, t: t}
}

// DBPath is the ledger file, to start a second gate on.
func (g *TestGate) DBPath() string { return g.Store.Path() }

// Scan posts one scan and returns the HTTP status and result. It is safe
// to call from many goroutines; it reports failures with t.Errorf.
func (g *TestGate) Scan(payload, gateID string) (int, Result) {
	body, _ := json.Marshal(ScanRequest{Payload: payload, GateID: gateID})
	req, err := http.NewRequest(http.MethodPost, g.URL+"/v1/scan", bytes.NewReader(body))
	if err != nil {
		g.t.Errorf("gate: scan: %v", err)
		return 0, Result{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Errorf("gate: scan: %v", err)
		return 0, Result{}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		g.t.Errorf("gate: scan answered %d %s", resp.StatusCode, raw)
	}
	return resp.StatusCode, r
}
