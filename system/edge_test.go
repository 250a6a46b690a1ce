package system_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/system"
)

func TestTheAdminListenerServesMetricsProfilesAndMountedHandlers(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.AdminAddr = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &system.Process{Config: cfg, Registry: system.Registry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AdminHandlers: map[string]http.Handler{"/codec/": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "codec")
		})}}
	addr, err := p.ServeAdmin(ctx)
	require.NoError(t, err)
	again, err := p.ServeAdmin(ctx)
	require.NoError(t, err)
	require.Equal(t, addr, again, "one listener per process, however many planes start it")

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "go_goroutines")
	code, body = get("/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine")
	code, body = get("/codec/encode")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "codec", body)
}

func TestThePaymentReturnURLIsThePublicURL(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr = "0.0.0.0:8080"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	acts, err := system.BookingActivities(cfg, nil, log)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8080/v1/payments/return", acts.ReturnURL, "never 0.0.0.0")

	cfg.PublicURL = "https://tickets.example.com/"
	acts, err = system.BookingActivities(cfg, nil, log)
	require.NoError(t, err)
	require.Equal(t, "https://tickets.example.com/v1/payments/return", acts.ReturnURL)
	require.Equal(t, "https://tickets.example.com", acts.PublicURL)

	cfg.PublicURL = "tickets.example.com"
	_, err = system.New(context.Background(), cfg, log, "", "", "")
	require.ErrorContains(t, err, "ENCORE_PUBLIC_URL", "refused at start-up")
}

func TestEveryPoolCancelsAStatementPastItsTimeout(t *testing.T) {
	t.Parallel()
	dbURL := testenv.DatabaseURL(t)
	rdb, _ := testenv.Redis(t)
	cfg := config.Default()
	cfg.DBStatementTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	pool, r, err := system.Connect(ctx, cfg, dbURL, "redis://"+rdb.Options().Addr)
	require.NoError(t, err)
	defer pool.Close()
	defer r.Close()
	browse, err := system.NewBrowsePlane(ctx, cfg, dbURL, rdb, prometheus.NewRegistry(), log)
	require.NoError(t, err)
	defer browse.Close()

	for name, exec := range map[string]func(context.Context, string, ...any) (pgconn.CommandTag, error){
		"buy plane and worker": pool.Exec,
		"browse reader":        browse.Reader.Exec,
	} {
		start := time.Now()
		_, err := exec(ctx, "SELECT pg_sleep(5)")
		var pe *pgconn.PgError
		require.True(t, errors.As(err, &pe), "%s: %v", name, err)
		require.Equal(t, "57014", pe.Code, "%s: query_canceled", name)
		require.Less(t, time.Since(start), 3*time.Second, name)
	}
}
