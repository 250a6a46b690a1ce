package webapp_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
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
	case strings.HasPrefix(p, "/hotel/"):
		return "hotel/" + strings.TrimPrefix(p, "/hotel/")
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
				// hotel/x.js is /hotel/x.js, any other file is under /app/.
				dir, rel := "/app/", name
				for _, app := range []string{"organiser/", "hotel/"} {
					if strings.HasPrefix(name, app) {
						dir, rel = "/"+app, strings.TrimPrefix(name, app)
					}
				}
				ref = path.Join(dir, path.Dir(rel), ref)
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
	for _, page := range []string{"index.html", "organiser/index.html", "hotel/index.html"} {
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

func TestTheHotelierAppReusesTheOtherAppsModulesAndLoadsOnlyFilesThatExist(t *testing.T) {
	files := closure(t, "hotel/index.html")
	for _, shared := range []string{"api.js", "problems.js", "app.css", "organiser/ui.js", "organiser/organiser.css"} {
		require.Contains(t, files, shared, "the hotelier app imports %s", shared)
	}
	require.NotContains(t, files, "app.js", "the hotelier app does not run the fan app")
	require.NotContains(t, files, "organiser/organiser.js", "nor the organiser app")
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
		{"/hotel/", "text/html; charset=utf-8"},
		{"/hotel/hotel.js", "text/javascript; charset=utf-8"},
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
	for _, missing := range []string{"/app/missing.js", "/organiser/missing.js", "/organiser/../app.js", "/hotel/missing.js", "/hotel/../app.js"} {
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
		if dir, ok := strings.CutPrefix(p, "vendor/"); ok {
			// A vendored library is kept as published (its licence header
			// names web sites, its unused helpers write inline styles); it
			// ships with its licence, and the pages' policy is what stops
			// any load from elsewhere.
			lib, _, _ := strings.Cut(dir, "/")
			_, err := fs.Stat(webapp.Static(), "vendor/"+lib+"/LICENSE")
			require.NoError(t, err, "%s is vendored without its licence", lib)
			return nil
		}
		b, _ := fs.ReadFile(webapp.Static(), p)
		for _, bad := range []string{"http://", "https://", "//fonts.", "<style", "style=\"", " onclick="} {
			require.False(t, bytes.Contains(b, []byte(bad)), "%s contains %q", p, bad)
		}
		return nil
	})
	require.NoError(t, err)
}

// TestTheServiceWorkerKeepsEveryFileOfTheFanAppAndIsServedAtTheRoot: the
// worker's list is made from the embedded files, so a new file cannot be
// forgotten, and its version changes with them; it is served at /sw.js so
// its scope covers "/".
func TestTheServiceWorkerKeepsEveryFileOfTheFanAppAndIsServedAtTheRoot(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(webapp.New())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/sw.js")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/javascript; charset=utf-8", resp.Header.Get("Content-Type"))
	require.NotContains(t, string(body), "__ASSETS__")
	require.NotContains(t, string(body), "__VERSION__")
	list := regexp.MustCompile(`const ASSETS = (\[[^\]]*\]);`).FindSubmatch(body)
	require.NotNil(t, list, "sw.js names its files")
	var urls []string
	require.NoError(t, json.Unmarshal(list[1], &urls))
	for _, p := range closure(t, "index.html") {
		want := "/app/" + p
		if p == "index.html" {
			want = "/"
		}
		require.Contains(t, urls, want, "a file the fan app loads is kept for offline use")
	}
	for _, want := range []string{"/app/manifest.webmanifest", "/app/icons/icon-192.png", "/app/vendor/qrcode-generator/qrcode.js"} {
		require.Contains(t, urls, want)
	}
	for _, u := range urls {
		require.False(t, strings.HasPrefix(u, "/organiser/") || strings.HasPrefix(u, "/hotel/") || strings.HasSuffix(u, "LICENSE"), u)
		resp, err := http.Get(srv.URL + u)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s is listed and served", u)
	}
	require.Regexp(t, `const VERSION = '[0-9a-f]{16}';`, string(body))

	resp, err = http.Get(srv.URL + "/app/manifest.webmanifest")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "application/manifest+json", resp.Header.Get("Content-Type"))
	var m struct {
		StartURL string `json:"start_url"`
		Display  string `json:"display"`
		Icons    []struct{ Src, Sizes string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	require.Equal(t, "standalone", m.Display)
	for _, icon := range m.Icons {
		b, err := fs.ReadFile(webapp.Static(), strings.TrimPrefix(icon.Src, "/app/"))
		require.NoError(t, err, icon.Src)
		img, err := png.Decode(bytes.NewReader(b))
		require.NoError(t, err, icon.Src)
		require.Equal(t, icon.Sizes, fmt.Sprintf("%dx%d", img.Bounds().Dx(), img.Bounds().Dy()), icon.Src)
	}
}
