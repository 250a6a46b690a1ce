package temporalserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTheUIsCodecProxyAddsTheBearerForTheUIsOwnPagesOnly(t *testing.T) {
	t.Parallel()
	codec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path+" "+r.Header.Get("Authorization")+" "+r.Header.Get("X-Namespace"))
	}))
	defer codec.Close()
	target, err := url.Parse(codec.URL + "/codec")
	require.NoError(t, err)
	ui := httptest.NewServer(codecProxy(target, "the-bearer", "http://127.0.0.1:8233"))
	defer ui.Close()

	post := func(origin string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, ui.URL+"/codec/decode", strings.NewReader(`{"payloads":[]}`))
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("X-Namespace", "default")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post("http://127.0.0.1:8233")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "/codec/decode Bearer the-bearer default", body)
	status, body = post("http://evil.example")
	require.Equal(t, http.StatusForbidden, status)
	require.NotContains(t, body, "the-bearer")
}
