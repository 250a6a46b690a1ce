package webapp_test

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/webapp"
)

// budget is each app's page-weight budget: compressed JS and CSS.
const budget = 150 << 10

// gzipped is the size of b compressed as the server compresses it.
func gzipped(t *testing.T, b []byte) int {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	require.NoError(t, zw.Close())
	return buf.Len()
}

// importPattern finds a module's static imports and a page's scripts and
// style sheets.
var importPattern = regexp.MustCompile(`(?:from\s+|import\s+|src=|href=)['"]([^'"]+\.(?:js|css))['"]`)

// served maps a URL path of the apps to its file in webapp.Static.
func served(p string) string {
	switch {
	case strings.HasPrefix(p, "/organiser/"):
		return "organiser/" + strings.TrimPrefix(p, "/organiser/")
	case strings.HasPrefix(p, "/app/"):
		return strings.TrimPrefix(p, "/app/")
	}
	return ""
}

// closure is every file a page loads, following imports from file to file.
func closure(t *testing.T, page string) []string {
	seen := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		b, err := fs.ReadFile(webapp.Static(), name)
		require.NoError(t, err, "%s is loaded but not in the app", name)
		for _, m := range importPattern.FindAllStringSubmatch(string(b), -1) {
			ref := m[1]
			if !strings.HasPrefix(ref, "/") {
				// Relative to the file's URL: organiser/x.js is /organiser/x.js,
				// any other file is under /app/.
				dir := "/app/"
				if strings.HasPrefix(name, "organiser/") {
					dir = "/organiser/"
				}
				ref = path.Join(dir, path.Dir(strings.TrimPrefix(name, "organiser/")), ref)
			}
			target := served(ref)
			require.NotEmpty(t, target, "%s loads %s, which is not served by the app", name, m[1])
			walk(target)
		}
	}
	walk(page)
	return slices.Sorted(maps.Keys(seen))
}

func TestEachAppsCompressedScriptsAndStylesFitTheBudget(t *testing.T) {
	for _, page := range []string{"index.html", "organiser/index.html"} {
		t.Run(page, func(t *testing.T) {
			total := 0
			for _, p := range closure(t, page) {
				if path.Ext(p) != ".js" && path.Ext(p) != ".css" {
					continue
				}
				b, err := fs.ReadFile(webapp.Static(), p)
				require.NoError(t, err)
				n := gzipped(t, b)
				t.Logf("%s: %d bytes, %d gzipped", p, len(b), n)
				total += n
			}
			require.Positive(t, total, "the app has scripts and styles")
			t.Logf("total compressed JS+CSS of %s: %d bytes", page, total)
			require.Less(t, total, budget)
		})
	}
}

func TestTheOrganiserAppReusesTheFanAppsModulesAndLoadsOnlyFilesThatExist(t *testing.T) {
	files := closure(t, "organiser/index.html")
	for _, shared := range []string{"api.js", "problems.js", "seatmap.js", "app.css"} {
		require.Contains(t, files, shared, "the organiser app imports the fan app's %s", shared)
	}
	require.NotContains(t, files, "app.js", "the organiser app does not run the fan app")
}

func TestTheAppIsServedWithItsTypesPolicyAndValidators(t *testing.T) {
	srv := httptest.NewServer(webapp.New())
	defer srv.Close()
	for _, tc := range []struct{ path, ctype string }{
		{"/", "text/html; charset=utf-8"},
		{"/app/app.js", "text/javascript; charset=utf-8"},
		{"/app/seatmap.js", "text/javascript; charset=utf-8"},
		{"/app/app.css", "text/css; charset=utf-8"},
		{"/organiser/", "text/html; charset=utf-8"},
		{"/organiser/organiser.js", "text/javascript; charset=utf-8"},
		{"/organiser/organiser.css", "text/css; charset=utf-8"},
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
	for _, missing := range []string{"/app/missing.js", "/organiser/missing.js", "/organiser/../app.js"} {
		resp, err := http.Get(srv.URL + missing)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode, missing)
	}
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
