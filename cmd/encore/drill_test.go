package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/drills"
	"github.com/encore-tickets/encore/dev/freeport"
	"github.com/encore-tickets/encore/store"
)

// freePort is a loopback port nothing listens on right now, from below the
// ephemeral range, so no outgoing connection takes it before its server.
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := freeport.Take("127.0.0.1", 1)
	require.NoError(t, err)
	return ports[0]
}

// TestEveryDrillPassesOnADevelopmentStack runs encore dev in this process,
// on its own ports and data folder (its own PostgreSQL, Redis, Temporal
// and payment sandbox: the drills stop and restart them), and plays every
// drill against it in a shortened form.
func TestEveryDrillPassesOnADevelopmentStack(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a whole development stack")
	}
	cfg := config.Default()
	cfg.Env = config.Development
	cfg.DemoLogin = true
	cfg.DataDir = t.TempDir()
	cfg.DevPostgresPort, cfg.DevRedisPort = freePort(t), freePort(t)
	addr := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	cfg.HTTPAddr, cfg.AdminAddr, cfg.PSPAddr = addr(), addr(), addr()
	cfg.TemporalListenAddr, cfg.TemporalUIAddr = addr(), addr()
	cfg.PublicURL = "http://" + cfg.HTTPAddr
	cfg.LogLevel = "error"

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runDev(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(2 * time.Minute):
			t.Error("encore dev did not stop")
		}
	})
	target := drills.Target{API: "http://" + cfg.HTTPAddr, Admin: "http://" + cfg.AdminAddr, PSP: "http://" + cfg.PSPAddr,
		Metered: demo.FlashSaleID, Unmetered: demo.DemoNightID, OutboxAlertAfter: 2 * time.Second, Limit: 90 * time.Second}
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			t.Fatalf("encore dev stopped: %v", err)
		default:
		}
		resp, err := http.Get(target.API + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Minute, 200*time.Millisecond, "encore dev is ready")
	// The switches need this run's drill token, which encore dev wrote
	// where encore drill reads it.
	token, err := os.ReadFile(filepath.Join(cfg.DataDir, drillTokenFile))
	require.NoError(t, err)
	target.DrillToken = strings.TrimSpace(string(token))
	resp, err := http.Post(target.Admin+"/drill/relay", "text/plain", strings.NewReader(`{"running": true}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "a form post from a page elsewhere throws nothing")

	pool, closeDB, err := openDatabase(ctx, cfg)
	require.NoError(t, err)
	defer closeDB()
	st := store.New(pool, store.Options{})
	target.Audit = func(ctx context.Context) (int, int, error) {
		rep, err := st.Holds.Audit(ctx, "", time.Minute)
		return int(rep.SeatsWithManyOwners), 0, err
	}

	// Serial: the drills stop and restart parts of the one stack in turn.
	for _, d := range drills.All {
		t.Run(d.Name, func(t *testing.T) {
			r, err := target.Run(ctx, d)
			require.NoError(t, err)
			for _, o := range r.Observed {
				t.Log(o)
			}
			require.True(t, r.Passed, "%s failed: %s", d.Name, r.Failure)
			require.Positive(t, r.RecoverySeconds)
		})
	}
}

func TestDrillsRefuseATargetOffLoopback(t *testing.T) {
	t.Parallel()
	target := drills.Target{API: "http://10.1.2.3:8080", Admin: "http://127.0.0.1:9090", PSP: "http://127.0.0.1:12111"}
	_, err := target.Run(context.Background(), drills.All[0])
	require.ErrorContains(t, err, "not a loopback address")
}
