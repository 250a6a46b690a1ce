package gate

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// The scanner app: static files embedded in the binary, served by the gate
// itself, so a scanner on the venue network needs nothing from the
// internet (the QR decoder, jsQR, is vendored under app/vendor).
//
//go:embed app
var appFS embed.FS

// appCSP lets the app load and call nothing but the gate: scripts, styles,
// the service worker and API calls are all 'self'; the camera's stream is
// a blob/mediastream the page makes itself.
const appCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"media-src 'self' blob: mediastream:; connect-src 'self'; worker-src 'self'; manifest-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

type appAsset struct {
	body        []byte
	ctype, etag string
}

var appAssets = func() map[string]appAsset {
	out := map[string]appAsset{}
	err := fs.WalkDir(appFS, "app", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimPrefix(p, "app/")
		switch path.Ext(name) {
		case ".html", ".js", ".css", ".webmanifest", ".svg":
		default:
			return nil // licences and notes are in the source tree, not served
		}
		body, err := appFS.ReadFile(p)
		if err != nil {
			return err
		}
		ctype := mime.TypeByExtension(path.Ext(name))
		if path.Ext(name) == ".webmanifest" {
			ctype = "application/manifest+json"
		}
		sum := sha256.Sum256(body)
		out[name] = appAsset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(err) // the files are embedded above
	}
	return out
}()

// appFiles are the app's paths besides "/".
func appFiles() []string {
	out := make([]string, 0, len(appAssets))
	for name := range appAssets {
		out = append(out, name)
	}
	return out
}

// appHandler serves the app with a strict Content-Security-Policy. Files
// are revalidated (ETag) rather than cached blind, so a gate upgrade
// reaches scanners at their next load.
func appHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "" {
			name = "index.html"
		}
		a, ok := appAssets[name]
		if !ok {
			problem(w, http.StatusNotFound, "not-found", "Not found", "no such path")
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.ctype)
		h.Set("Content-Security-Policy", appCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Permissions-Policy", "camera=(self), microphone=(), geolocation=()")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
	})
}
