package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/dev/topology"
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
	up := make(chan *topology.Cluster, 1)
	done := make(chan error, 1)
	go func() { done <- runSplit(ctx, cfg, bin, &out, func(c *topology.Cluster) { up <- c }) }()
	var c *topology.Cluster
	select {
	case c = <-up:
	case err := <-done:
		t.Fatalf("split ended before it was up: %v\n%s", err, out.String())
	case <-ctx.Done():
		t.Fatalf("split not up in time:\n%s", out.String())
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
