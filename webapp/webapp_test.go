package webapp_test

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/webapp"
)

// budget is the fan app's page-weight budget: compressed JS and CSS.
const budget = 150 << 10

func TestTheFanAppsCompressedScriptsAndStylesFitTheBudget(t *testing.T) {
	total := 0
	err := fs.WalkDir(webapp.Static(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (path.Ext(p) != ".js" && path.Ext(p) != ".css") {
			return err
		}
		b, err := fs.ReadFile(webapp.Static(), p)
		require.NoError(t, err)
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(b)
		require.NoError(t, zw.Close())
		t.Logf("%s: %d bytes, %d gzipped", p, len(b), buf.Len())
		total += buf.Len()
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, total, "the app has scripts and styles")
	t.Logf("total compressed JS+CSS: %d bytes", total)
	require.Less(t, total, budget)
}

func TestTheAppIsServedWithItsTypesPolicyAndValidators(t *testing.T) {
	srv := httptest.NewServer(webapp.New())
	defer srv.Close()
	for _, tc := range []struct{ path, ctype string }{
		{"/", "text/html; charset=utf-8"},
		{"/app/app.js", "text/javascript; charset=utf-8"},
		{"/app/seatmap.js", "text/javascript; charset=utf-8"},
		{"/app/app.css", "text/css; charset=utf-8"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := srv.Client().Transport.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, tc.ctype, resp.Header.Get("Content-Type"))
			require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
			csp := resp.Header.Get("Content-Security-Policy")
			require.Contains(t, csp, "default-src 'self'")
			require.Contains(t, csp, "connect-src 'self' ws://"+strings.TrimPrefix(srv.URL, "http://"))
			require.NotContains(t, csp, "unsafe-inline")
			require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			etag := resp.Header.Get("ETag")
			require.NotEmpty(t, etag)

			req.Header.Set("If-None-Match", etag)
			resp, err = srv.Client().Transport.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusNotModified, resp.StatusCode, "revalidation is a 304")
		})
	}
	resp, err := http.Get(srv.URL + "/app/missing.js")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestTheAppLoadsNothingFromAnotherHost(t *testing.T) {
	err := fs.WalkDir(webapp.Static(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(webapp.Static(), p)
		for _, bad := range []string{"http://", "https://", "//fonts.", "<style", "style=\"", " onclick="} {
			require.NotContains(t, string(b), bad, "%s", p)
		}
		return nil
	})
	require.NoError(t, err)
}
