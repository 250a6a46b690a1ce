package stack

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/session"
)

// drillEdge serves guardDrill over a switch that counts its throws, with
// the drill token "the-drill-token" and the development issuer's tokens.
func drillEdge(t *testing.T) (string, *session.Issuer, *int) {
	t.Helper()
	issuer := session.NewIssuer("drill-test-secret")
	thrown := new(int)
	sw := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		*thrown++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"running":false}`))
	})
	srv := httptest.NewServer(guardDrill(sw, "the-drill-token", issuer.Verifier))
	t.Cleanup(srv.Close)
	return srv.URL, issuer, thrown
}

func throw(t *testing.T, url string, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/drill/relay", strings.NewReader(`{"running": false}`))
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestADrillSwitchIsThrownOnlyBySameOriginJSONWithTheDrillToken(t *testing.T) {
	t.Parallel()
	url, _, thrown := drillEdge(t)
	host := strings.TrimPrefix(url, "http://")
	ok := map[string]string{"Content-Type": "application/json", DrillTokenHeader: "the-drill-token"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range ok {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	// Serial: each case reads the throw count.
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"a text/plain form post, as a page elsewhere sends without a preflight", with("Content-Type", "text/plain"), http.StatusUnsupportedMediaType},
		{"no content type", with("Content-Type", ""), http.StatusUnsupportedMediaType},
		{"a page on another origin", with("Origin", "http://evil.example"), http.StatusForbidden},
		{"a browser that says cross-site", with("Sec-Fetch-Site", "cross-site"), http.StatusForbidden},
		{"a browser that says same-site", with("Sec-Fetch-Site", "same-site"), http.StatusForbidden},
		{"no token", with(DrillTokenHeader, ""), http.StatusUnauthorized},
		{"a wrong token", with(DrillTokenHeader, "guess"), http.StatusUnauthorized},
	} {
		require.Equal(t, tc.status, throw(t, url, tc.headers), tc.name)
		require.Zero(t, *thrown, tc.name)
	}
	require.Equal(t, http.StatusOK, throw(t, url, ok), "encore drill's request")
	require.Equal(t, http.StatusOK, throw(t, url, with("Origin", url)), "the same origin")
	require.Equal(t, "http://"+host, url)
	require.Equal(t, http.StatusOK, throw(t, url, with("Sec-Fetch-Site", "same-origin")))
	require.Equal(t, 3, *thrown)
}

func TestAnOperatorsAccessTokenThrowsADrillSwitchAndAFansDoesNot(t *testing.T) {
	t.Parallel()
	url, issuer, thrown := drillEdge(t)
	op, err := issuer.Mint(session.Identity{UserID: "otto", DeviceID: "desk", Roles: []session.Role{session.Operator}}, time.Now())
	require.NoError(t, err)
	fan := issuer.Issue("fan", "phone", time.Now())
	require.Equal(t, http.StatusUnauthorized, throw(t, url, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + fan}))
	require.Zero(t, *thrown)
	require.Equal(t, http.StatusOK, throw(t, url, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + op}))
	require.Equal(t, 1, *thrown)
}
