// Package webapp is the fan web app, the organiser app and the hotelier
// app: static HTML, CSS and vanilla ES modules embedded in the binary and
// served by the API at "/", "/organiser/" and "/hotel/" with no build step,
// nothing loaded from another host (see docs/ARCHITECTURE.md).
package webapp

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
)

//go:embed static
var files embed.FS

// Static is the apps' files, rooted at the folder served as /app/ (and
// index.html as /); the organiser app is its folder organiser/, served as
// /organiser/, and the hotelier app its folder hotel/, served as /hotel/.
func Static() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the folder is embedded above
	}
	return sub
}

// asset is one file, prepared once: its body, gzip form and validator.
type asset struct {
	body, gz    []byte
	etag, ctype string
}

// Handler serves the app. Every file is read, hashed and gzip-compressed
// once per process (prepared), so a request costs a map lookup.
type Handler struct {
	assets map[string]asset
	// connect, script and frame are origins beyond the app's own in its
	// connect-src, script-src and frame-src.
	connect, script, frame string
}

// Sources are further origins the app's pages may use, by directive: the
// payment provider's script, frames and API (PaymentSources).
type Sources struct {
	Script, Frame, Connect []string
}

// StripeSources are the origins Stripe documents for Stripe.js and its
// Payment Element: the script and its frames from js.stripe.com (and its
// subdomains), 3-D Secure and redirect frames from hooks.stripe.com, API
// calls to api.stripe.com. Address autocompletion (maps.googleapis.com) is
// left out: the app does not collect addresses.
var StripeSources = Sources{
	Script:  []string{"https://js.stripe.com", "https://*.js.stripe.com"},
	Frame:   []string{"https://js.stripe.com", "https://*.js.stripe.com", "https://hooks.stripe.com"},
	Connect: []string{"https://api.stripe.com"},
}

// Allow adds src's origins to the policy; anything that is not an origin
// (a path, a second directive smuggled in) is left out. It returns h.
func (h *Handler) Allow(src Sources) *Handler {
	add := func(to *string, origins []string) {
		for _, o := range origins {
			if originPattern.MatchString(o) && !strings.Contains(*to+" ", " "+o+" ") {
				*to += " " + o
			}
		}
	}
	add(&h.script, src.Script)
	add(&h.frame, src.Frame)
	add(&h.connect, src.Connect)
	return h
}

// New serves the embedded files (prepared once). connect are further origins
// ("https://host[:port]") the app may fetch from: an external OpenID Connect
// issuer's, for its discovery document and token endpoint. Anything else is
// left out of the policy.
func New(connect ...string) *Handler {
	h := &Handler{assets: prepared()}
	for _, o := range connect {
		if originPattern.MatchString(o) {
			h.connect += " " + o
		}
	}
	return h
}

// prepared reads, hashes and compresses the embedded files once per
// process: they never change, and every Handler (an API process has one;
// a test package builds one per test server) shares the read-only map.
var prepared = sync.OnceValue(func() map[string]asset {
	assets := map[string]asset{}
	root := Static()
	_ = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a := asset{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: contentType(p)}
		if compressible(a.ctype) {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			_, _ = zw.Write(b)
			_ = zw.Close()
			if buf.Len() < len(b) {
				a.gz = buf.Bytes()
			}
		}
		assets[p] = a
		return nil
	})
	assets[serviceWorker] = serviceWorkerOf(assets)
	return assets
})

// serviceWorker is the fan app's service worker: served at /sw.js so its
// scope is the whole app.
const serviceWorker = "sw.js"

// offlineExt are the kinds of file the service worker keeps for offline
// use: the fan app's pages, scripts, styles, icons and manifest (not the
// vendored libraries' licence texts, nor the organiser and hotelier apps).
var offlineExt = []string{".html", ".js", ".css", ".png", ".svg", ".webmanifest"}

// serviceWorkerOf fills sw.js's list of the fan app's files and a version
// that changes whenever any of them does.
func serviceWorkerOf(assets map[string]asset) asset {
	tmpl := assets[serviceWorker]
	urls := []string{"/"}
	for p := range assets {
		if p == serviceWorker || p == "index.html" || strings.HasPrefix(p, "organiser/") || strings.HasPrefix(p, "hotel/") ||
			!slices.Contains(offlineExt, path.Ext(p)) {
			continue
		}
		urls = append(urls, "/app/"+p)
	}
	slices.Sort(urls)
	sum := sha256.New()
	for _, u := range urls {
		name := strings.TrimPrefix(u, "/app/")
		if u == "/" {
			name = "index.html"
		}
		sum.Write([]byte(u + " " + assets[name].etag + "\n"))
	}
	list, _ := json.Marshal(urls)
	body := strings.Replace(string(tmpl.body), "__ASSETS__", string(list), 1)
	body = strings.Replace(body, "__VERSION__", hex.EncodeToString(sum.Sum(nil)[:8]), 1)
	b := []byte(body)
	etag := sha256.Sum256(b)
	a := asset{body: b, etag: `"` + hex.EncodeToString(etag[:12]) + `"`, ctype: tmpl.ctype}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	a.gz = buf.Bytes()
	return a
}

func contentType(p string) string {
	switch path.Ext(p) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".webmanifest":
		return "application/manifest+json"
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func compressible(ctype string) bool {
	return strings.HasPrefix(ctype, "text/") || strings.HasPrefix(ctype, "image/svg") || strings.HasPrefix(ctype, "application/manifest")
}

// hostPattern is what a Host header may be to be named in the policy;
// anything else gets 'self' only.
var hostPattern = regexp.MustCompile(`^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$`)

// CSP is the Content-Security-Policy of every app response for a request
// to host: everything from the app's own origin only (no CDN, no inline
// script or style), sockets to the same host.
func CSP(host string) string { return (&Handler{}).csp(host) }

// originPattern is an origin New and Allow accept: scheme, host (or a
// wildcard subdomain of an https host) and port, nothing else.
var originPattern = regexp.MustCompile(`^(https?://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\])|https://\*\.[A-Za-z0-9.\-]+)(:[0-9]{1,5})?$`)

func (h *Handler) csp(host string) string {
	connect := "'self'"
	if hostPattern.MatchString(host) {
		connect += " ws://" + host + " wss://" + host
	}
	connect += h.connect
	return "default-src 'self'; script-src 'self'" + h.script + "; style-src 'self'; img-src 'self' blob: data:; font-src 'self'; " +
		"connect-src " + connect + "; frame-src 'self'" + h.frame + "; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
}

// OrganiserPath is where the organiser app is served: its index.html, and
// its files below it.
const OrganiserPath = "/organiser/"

// HotelPath is where the hotelier app is served, as OrganiserPath is.
const HotelPath = "/hotel/"

// ServeHTTP serves "/" as index.html, "/app/<file>" as the file,
// "/organiser/" as organiser/index.html and "/organiser/<file>" as
// organiser/<file>, and "/hotel/" and its files alike.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var name string
	switch p := r.URL.Path; {
	case p == "/":
		name = "index.html"
	case p == "/"+serviceWorker:
		name = serviceWorker
	case p == OrganiserPath:
		name = "organiser/index.html"
	case strings.HasPrefix(p, OrganiserPath):
		name = "organiser/" + strings.TrimPrefix(p, OrganiserPath)
	case p == HotelPath:
		name = "hotel/index.html"
	case strings.HasPrefix(p, HotelPath):
		name = "hotel/" + strings.TrimPrefix(p, HotelPath)
	default:
		name = strings.TrimPrefix(p, "/app/")
	}
	a, ok := h.assets[name]
	if !ok || strings.Contains(name, "..") {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("Content-Security-Policy", h.csp(r.Host))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("ETag", a.etag)
	// Files are revalidated each time (cheap 304s by ETag) rather than
	// renamed by hash: there is no build step to rename them.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Vary", "Accept-Encoding")
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if a.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		hd.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}
