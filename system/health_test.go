package system_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/internal/testenv"
	"github.com/encore-tickets/encore/system"
)

func TestReadyzNamesWhatIsDownAndMetricsIncludeTheRuntime(t *testing.T) {
	pool := testenv.DB(t)
	rdb, _ := testenv.Redis(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.Default()
	reg := system.Registry()
	svc := system.BuyPlane(cfg, system.OpenStore(cfg, pool), rdb, prometheus.NewRegistry(), log)
	temporalDown := errors.New("connection refused")
	up := &api.Server{Holds: svc, Checks: system.Checks(pool, rdb, func(context.Context) error { return nil }), Gatherer: reg, Log: log}
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	down := &api.Server{Holds: svc, Checks: system.Checks(pool, dead, func(context.Context) error { return temporalDown }), Gatherer: reg, Log: log}

	get := func(h http.Handler, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	code, _ := get(up.Handler(), "/healthz")
	require.Equal(t, http.StatusOK, code)
	code, body := get(up.Handler(), "/readyz")
	require.Equal(t, http.StatusOK, code, body)

	code, body = get(down.Handler(), "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	var r struct{ Checks map[string]string }
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	require.Equal(t, "ok", r.Checks["postgres"])
	require.True(t, strings.HasPrefix(r.Checks["redis"], "down"), body)
	require.Contains(t, r.Checks["temporal"], "connection refused")
	code, _ = get(down.Handler(), "/healthz")
	require.Equal(t, http.StatusOK, code, "alive even when a dependency is down")

	code, body = get(up.Handler(), "/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, m := range []string{"go_goroutines", "process_resident_memory_bytes", "go_gc_duration_seconds"} {
		require.Contains(t, body, m)
	}
}

func TestARealProviderKeyNeedsItsOwnWebhookSecret(t *testing.T) {
	cfg := config.Default()
	require.NoError(t, system.CheckPaymentConfig(cfg), "the sandbox with its own secret")
	cfg.StripeKey = "sk_live_real"
	require.Error(t, system.CheckPaymentConfig(cfg), "a real key with the sandbox's public secret")
	cfg.StripeWebhookSecret = ""
	require.Error(t, system.CheckPaymentConfig(cfg))
	cfg.StripeWebhookSecret = "whsec_from_the_dashboard"
	require.NoError(t, system.CheckPaymentConfig(cfg))
}
