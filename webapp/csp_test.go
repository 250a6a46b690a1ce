package webapp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/webapp"
)

func TestTheAppMayFetchFromAnIssuersOriginAndNothingElseSlipsIntoThePolicy(t *testing.T) {
	h := webapp.New("https://id.example.com", "http://127.0.0.1:9999", "https://evil.example; script-src *", "https://id.example.com/path", "")
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "tickets.example.com"
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Header().Get("Content-Security-Policy"),
		"connect-src 'self' ws://tickets.example.com wss://tickets.example.com https://id.example.com http://127.0.0.1:9999; ")
	require.NotContains(t, rec.Header().Get("Content-Security-Policy"), "evil")
	require.NotContains(t, rec.Header().Get("Content-Security-Policy"), "/path")

	rec = httptest.NewRecorder()
	webapp.New().ServeHTTP(rec, req)
	require.Equal(t, webapp.CSP("tickets.example.com"), rec.Header().Get("Content-Security-Policy"), "no origins: the policy CSP gives")
}
