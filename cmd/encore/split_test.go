package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/dev/topology"
	"github.com/encore-tickets/encore/rehearsal"
)

// lockedBuffer is a bytes.Buffer safe to write from the command and read
// from the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// portClash says a topology failed to start because a port it picked was
// taken meanwhile (by another test's process): worth one more try.
func portClash(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}

// TestDevSplitRunsEachPartAsItsOwnProcessOnTheFansAddressAndCtrlCStopsThemAll:
// encore dev --split brings up Temporal, the sandbox, two workers and two
// APIs behind the balancer on ENCORE_HTTP_ADDR, with a replica for the
// browse plane and the demo seeded; the list names every part with its pid
// and log; the fans' address answers; cancelling (Ctrl-C) ends every
// process.
func TestDevSplitRunsEachPartAsItsOwnProcessOnTheFansAddressAndCtrlCStopsThemAll(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the whole split topology")
	}
	bin := os.Getenv(testenv.EnvBinary)
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "encore")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		require.NoError(t, topology.Build(ctx, "../..", bin))
		cancel()
	}
	ports, err := topology.FreePorts(1)
	require.NoError(t, err)
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	cfg.SMTPURL = "smtp://127.0.0.1:1" // no Mailpit in the test: its emails are not read here

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out lockedBuffer
	var c *topology.Cluster
	done := make(chan error, 1)
	for attempt := 1; c == nil; attempt++ {
		up := make(chan *topology.Cluster, 1)
		go func() { done <- runSplit(ctx, cfg, bin, &out, func(c *topology.Cluster) { up <- c }) }()
		select {
		case c = <-up:
		case err := <-done:
			if portClash(err) && attempt < 3 {
				continue // another test took a port the topology had picked
			}
			t.Fatalf("split ended before it was up: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("split not up in time:\n%s", out.String())
		}
	}
	listing := out.String()
	for _, part := range []string{"temporal", "psp", "worker1", "worker2", "api1", "api2", "replica (browse plane)", "Web UI"} {
		require.Contains(t, listing, part)
	}
	require.NotContains(t, listing, cfg.SMTPURL.Reveal(), "no secret is printed")

	for _, path := range []string{"/readyz", "/v1/events/evt_demo_night"} {
		resp, err := http.Get("http://" + cfg.HTTPAddr + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
	}
	var pids []int
	for _, p := range c.All() {
		require.Positive(t, p.Pid(), p.Name)
		pids = append(pids, p.Pid())
	}

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("split did not stop")
	}
	for _, pid := range pids {
		require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 30*time.Second, 100*time.Millisecond,
			"process %d is gone", pid)
	}
}

// TestARehearsalOnTheSplitTopologySurvivesItsPartsKilledAndItsBooksBalance:
// encore rehearse --chaos worker,api,temporal,psp plays a short metered
// sale against the split topology while parts are SIGKILLed and restarted;
// after the drain the books hold: no double sale, no unmatched capture, no
// audit violation, every paid booking exactly its tickets, no stuck saga,
// no lost webhook, and the summary lists every kill and restart.
func TestARehearsalOnTheSplitTopologySurvivesItsPartsKilledAndItsBooksBalance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the split topology and plays a sale")
	}
	bin := os.Getenv(testenv.EnvBinary)
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "encore")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		require.NoError(t, topology.Build(ctx, "../..", bin))
		cancel()
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	parts, err := parseChaos("worker,api,temporal,psp")
	require.NoError(t, err)
	_, err = parseChaos("worker,redis")
	require.ErrorContains(t, err, "not built yet", "a part it cannot break is refused before anything starts")

	c := rehearsal.Defaults()
	c.CreateSeats, c.OpensIn, c.Fans, c.ArrivalRate = 120, 3*time.Second, 60, 6
	c.Duration, c.Drain, c.Out = 15*time.Second, 45*time.Second, t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := &cobra.Command{}
	var out, errs lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&errs)
	err = splitRehearsal(ctx, cfg, c, parts, bin, cmd)
	for attempt := 2; portClash(err) && attempt <= 3; attempt++ {
		err = splitRehearsal(ctx, cfg, c, parts, bin, cmd) // another test took a port the topology had picked
	}
	require.NoError(t, err, "%s\n%s", out.String(), errs.String())

	raw, err := os.ReadFile(filepath.Join(c.Out, "summary.json"))
	require.NoError(t, err)
	var s rehearsal.Summary
	require.NoError(t, json.Unmarshal(raw, &s))
	require.NotEmpty(t, s.Chaos, "parts were killed during the sale")
	require.True(t, strings.HasPrefix(s.Chaos[0].What, "kill "))
	require.True(t, s.BooksChecked)
	require.True(t, s.TicketsPerBookingExact)
	require.Zero(t, s.DoubleSales)
	require.Zero(t, s.UnmatchedCaptures)
	require.Zero(t, s.AuditViolations)
	require.Zero(t, s.StuckWorkflows)
	require.Zero(t, s.LostWebhooks)
	require.Positive(t, s.BookingsPaid, "the sale sold through the kills")
}
