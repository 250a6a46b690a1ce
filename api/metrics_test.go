package api_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
)

func TestEveryAnswerIsCountedByRoutePatternNeverByRawPath(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer((&api.Server{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: api.NewEdgeMetrics(reg)}).Handler())
	defer srv.Close()
	for _, path := range []string{"/healthz", "/healthz", "/no/such/path/1", "/no/such/path/2"} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
	}
	fams, err := reg.Gather()
	require.NoError(t, err)
	counts := map[string]float64{}
	histograms := 0
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "encore_http_requests_total":
				counts[labels["method"]+" "+labels["route"]+" "+labels["code"]] = m.GetCounter().GetValue()
			case "encore_http_request_duration_seconds":
				histograms++
			}
		}
	}
	require.Equal(t, map[string]float64{"GET /healthz 200": 2, "GET unmatched 404": 2}, counts)
	require.Equal(t, 2, histograms, "one histogram per route and method")
}

func TestMetricsAreNotServedOnTheFanPort(t *testing.T) {
	s := newStack(t)
	r := s.do(http.MethodGet, "/metrics", "", nil)
	require.Equal(t, http.StatusNotFound, r.Status)
}

func TestReadyzNamesTheFailingCheckWithoutItsErrorText(t *testing.T) {
	secret := errors.New("dial tcp 10.1.2.3:6379: connection refused (user encore)")
	srv := &api.Server{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Checks: []api.Check{
		{Name: "postgres", Ping: func(context.Context) error { return nil }},
		{Name: "redis", Ping: func(context.Context) error { return secret }},
	}}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.JSONEq(t, `{"status":"unavailable","failing":["redis"]}`, rec.Body.String())
	require.NotContains(t, rec.Body.String(), "10.1.2.3")
}
