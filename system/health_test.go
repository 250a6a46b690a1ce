package system_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/system"
)

func TestReadyzNamesWhatIsDownAndMetricsIncludeTheRuntime(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	rdb, _ := testenv.Redis(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.Default()
	reg := system.Registry()
	svc := system.BuyPlane(cfg, system.OpenStore(cfg, pool), rdb, prometheus.NewRegistry(), log)
	temporalDown := errors.New("connection refused by 10.9.8.7:7233")
	up := &api.Server{Holds: svc, Checks: system.Checks(pool, rdb, func(context.Context) error { return nil }), Log: log}
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	down := &api.Server{Holds: svc, Checks: system.Checks(pool, dead, func(context.Context) error { return temporalDown }), Log: log}

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
	var r struct {
		Status  string
		Failing []string
	}
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	require.Equal(t, "unavailable", r.Status)
	require.Equal(t, []string{"redis", "temporal"}, r.Failing, "names what is down, postgres is not")
	for _, leak := range []string{"127.0.0.1:1", "10.9.8.7", "refused"} {
		require.NotContains(t, body, leak, "the dependency's error text stays in the log")
	}
	code, _ = get(down.Handler(), "/healthz")
	require.Equal(t, http.StatusOK, code, "alive even when a dependency is down")

	code, _ = get(up.Handler(), "/metrics")
	require.Equal(t, http.StatusNotFound, code, "metrics are on the admin listener, not the fan port")
	code, body = get(system.AdminHandler(reg, nil), "/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, m := range []string{"go_goroutines", "process_resident_memory_bytes", "go_gc_duration_seconds"} {
		require.Contains(t, body, m)
	}
}

func TestARealProviderKeyNeedsItsOwnWebhookSecret(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	require.NoError(t, system.CheckPaymentConfig(cfg), "the sandbox with its own secret")
	cfg.StripeKey = "sk_live_real"
	require.Error(t, system.CheckPaymentConfig(cfg), "a real key with the sandbox's public secret")
	cfg.StripeWebhookSecret = ""
	require.Error(t, system.CheckPaymentConfig(cfg))
	cfg.StripeWebhookSecret = "whsec_from_the_dashboard"
	require.NoError(t, system.CheckPaymentConfig(cfg))
}
