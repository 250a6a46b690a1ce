package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProbeExitsZeroOnlyOnATwoHundredAnswer(t *testing.T) {
	t.Parallel()
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		status int
		code   int
	}{{http.StatusOK, 0}, {http.StatusNoContent, 0}, {http.StatusServiceUnavailable, 1}, {http.StatusNotFound, 1}} {
		status = tc.status
		code, _, _ := run(t, newRootCmd(), "probe", srv.URL+"/readyz")
		require.Equal(t, tc.code, code, "status %d", tc.status)
	}
	code, _, errOut := run(t, newRootCmd(), "probe", "--timeout", (200 * time.Millisecond).String(), "http://127.0.0.1:1/readyz")
	require.Equal(t, 1, code, "nothing listening")
	require.NotEmpty(t, errOut)
}
