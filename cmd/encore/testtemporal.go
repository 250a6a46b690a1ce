package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/encore-tickets/encore/dev/devstack"
)

// testTemporal is the Temporal server the test command runs for every test
// package: `encore temporal` from this very executable (built by go run,
// without the race detector), so the packages whose tests run workflows
// share one server instead of each embedding a race-instrumented one that
// costs them most of their CPU. Each package works in a namespace of its own
// (package temporaltest).
type testTemporal struct {
	Addr    string // host:port of the frontend
	APIKey  string // the bearer it admits the tests' clients by
	LogPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	admin   string
	db      string
}

// startTestTemporal starts the server on the test cluster (adminURL) in a
// database of this run's own, and returns without waiting for it to answer:
// go test compiles meanwhile, and temporaltest retries until it does. Its
// log goes to dir/temporal.log.
func startTestTemporal(adminURL, dir string) (*testTemporal, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ports, err := lowPorts(27233, 2)
	if err != nil {
		return nil, err
	}
	suffix, key := make([]byte, 4), make([]byte, 24)
	_, _ = rand.Read(suffix)
	_, _ = rand.Read(key)
	t := &testTemporal{
		Addr:    "127.0.0.1:" + strconv.Itoa(ports[0]),
		APIKey:  hex.EncodeToString(append(suffix, key...)),
		LogPath: filepath.Join(dir, "temporal.log"),
		exited:  make(chan struct{}),
		admin:   adminURL,
		db:      "temporal_test_" + hex.EncodeToString(suffix),
	}
	logFile, err := os.Create(t.LogPath)
	if err != nil {
		return nil, err
	}
	t.cmd = exec.Command(self, "temporal")
	t.cmd.Env = append(os.Environ(),
		"ENCORE_DATABASE_URL="+adminURL,
		"ENCORE_TEMPORAL_DATABASE="+t.db,
		"ENCORE_TEMPORAL_LISTEN_ADDR="+t.Addr,
		"ENCORE_TEMPORAL_UI_ADDR=127.0.0.1:"+strconv.Itoa(ports[1]),
		"ENCORE_TEMPORAL_NAMESPACE=default",
		"ENCORE_TEMPORAL_API_KEY="+t.APIKey,
		"ENCORE_DATA_DIR="+filepath.Join(dir, "temporal"),
		"ENCORE_LOG_LEVEL=warn",
	)
	t.cmd.Stdout, t.cmd.Stderr = logFile, logFile
	if err := t.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	go func() {
		_ = t.cmd.Wait()
		_ = logFile.Close()
		close(t.exited)
	}()
	return t, nil
}

// Stop interrupts the server, kills it if it has not ended within 30 s, and
// drops its databases.
func (t *testTemporal) Stop() {
	_ = t.cmd.Process.Signal(os.Interrupt)
	select {
	case <-t.exited:
	case <-time.After(30 * time.Second):
		_ = t.cmd.Process.Kill()
		<-t.exited
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, db := range []string{t.db, t.db + "_visibility"} {
		if err := devstack.DropDatabase(ctx, t.admin, db); err != nil {
			fmt.Fprintf(os.Stderr, "temporal: dropping database %s: %v\n", db, err)
		}
	}
}

// lowPorts finds n free loopback ports from base on, below Linux's
// ephemeral range (32768-60999), where no outgoing connection of the tests
// can take one between this check and the server's bind.
func lowPorts(base, n int) ([]int, error) {
	var out []int
	for p := base; p < 32768 && len(out) < n; p++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		_ = l.Close()
		out = append(out, p)
	}
	if len(out) < n {
		return nil, errors.New("temporal: no free loopback ports below 32768")
	}
	return out, nil
}
