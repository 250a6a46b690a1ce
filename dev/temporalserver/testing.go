package temporalserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// freshConfig is the configuration of a test server on a free loopback
// port with databases of its own, named name and name_vis on the cluster
// at databaseURL.
func freshConfig(databaseURL, name string) Config {
	return Config{
		DatabaseURL:            databaseURL,
		DatabaseName:           name,
		VisibilityDatabaseName: name + "_vis",
		FrontendAddress:        "127.0.0.1:0",
	}
}

// StartForTest starts a server for an integration test: free loopback ports,
// fresh databases named temporal_test_<random> and temporal_test_<random>_vis,
// no UI, four history shards, logs at warn level to tb.Log. Options adjust the
// Config before start (e.g. to add SearchAttributes). tb.Cleanup stops the
// server and drops both databases. databaseURL is a PostgreSQL URL with the
// right to CREATE DATABASE.
func StartForTest(tb testing.TB, databaseURL string, opts ...func(*Config)) *Server {
	tb.Helper()
	cfg := freshConfig(databaseURL, "temporal_test_"+randomSuffix(tb))
	cfg.DisableUI = true
	cfg.UIAddress = ""
	cfg.Namespace = DefaultNamespace
	cfg.NumHistoryShards = DefaultNumHistoryShards
	cfg.Logger = testLogger(tb) // warn and above
	// Keep the footprint small: several packages' tests may run at once
	// against one PostgreSQL. Measured: about 16 connections per test
	// server, still about 90 trivial workflows/s.
	cfg.MaxConns, cfg.VisibilityMaxConns = 4, 2
	for _, o := range opts {
		o(&cfg)
	}

	dropDBs := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dropDatabases(ctx, databaseURL, cfg.DatabaseName, cfg.VisibilityDatabaseName); err != nil {
			tb.Logf("temporalserver: drop test databases: %v", err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), DefaultStartTimeout)
	defer cancel()
	started := time.Now()
	s, err := Start(ctx, cfg)
	if err != nil {
		dropDBs()
		tb.Fatalf("temporalserver: start test server: %v", err)
	}
	tb.Logf("temporalserver: test server on %s (databases %s, %s) started in %s",
		s.FrontendAddress(), cfg.DatabaseName, cfg.VisibilityDatabaseName, time.Since(started).Round(time.Millisecond))
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Logf("temporalserver: stop test server: %v", err)
		}
		dropDBs()
	})
	return s
}

func randomSuffix(tb testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatalf("temporalserver: random: %v", err)
	}
	return hex.EncodeToString(b[:])
}

// testLogger writes warn-level records to tb.Log while the test runs and to
// stderr afterwards (a late log line from a server goroutine must not panic
// the test binary). The switch is registered first so it runs last.
func testLogger(tb testing.TB) *slog.Logger {
	w := &tbWriter{tb: tb}
	tb.Cleanup(func() { w.done.Store(true) })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tbWriter struct {
	tb   testing.TB
	done atomic.Bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	if w.done.Load() {
		return os.Stderr.Write(p)
	}
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
