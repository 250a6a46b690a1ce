package payloadcodec

import (
	"encoding/json"
	"net/http"
	"slices"

	"go.temporal.io/sdk/converter"
)

// maxBody bounds a request: the Web UI sends one event's payloads at a time,
// and Temporal refuses payloads past 2 MiB anyway.
const maxBody = 8 << 20

// Options are who may call the codec endpoint and from where.
type Options struct {
	// Namespace is the only namespace (X-Namespace) answered.
	Namespace string
	// Origins are the Web UI origins a browser may call from (CORS,
	// preflight included); a request from any other origin is refused.
	Origins []string
	// Authorize reports whether the request carries a credential that may
	// decrypt history: the Web UI's forwarded access token or the
	// configured bearer. Nil refuses every request.
	Authorize func(r *http.Request) bool
}

// Handler serves the Temporal codec server protocol over c: POST .../decode
// and .../encode with {"payloads": [...]} in protojson, the way the Web UI
// (and the temporal CLI's --codec-endpoint with --codec-auth) calls it. It
// answers only requests that opt.Authorize accepts (401 otherwise), only
// for opt.Namespace (the X-Namespace header), and lets the browser call it
// cross-origin from opt.Origins only. A payload that does not decrypt
// (unknown key, altered ciphertext) is a 400, never a 500.
//
// Whoever it answers can decrypt what they hold, so it still belongs on a
// listener only staff reach (the admin listener), never the fans' port.
func Handler(c *Codec, opt Options) http.Handler {
	codec := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin != "" && slices.Contains(opt.Origins, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			if r.Method == http.MethodOptions {
				// A preflight carries no credentials (Fetch spec): it is
				// answered before the credential check, and tells the
				// browser it may send Authorization next.
				h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		} else if origin != "" {
			// A page from anywhere else must not use a staff member's
			// browser to decrypt history.
			problem(w, http.StatusForbidden, "origin-not-allowed", "Origin not allowed",
				"this origin is not a configured Temporal Web UI origin")
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST, OPTIONS")
			problem(w, http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed", r.Method+" is not allowed here")
			return
		}
		if opt.Authorize == nil || !opt.Authorize(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="encore-codec"`)
			problem(w, http.StatusUnauthorized, "unauthorized", "Authentication required",
				"send Authorization: Bearer with a support or admin access token (the Web UI's codec option "+
					"\"pass access token\") or the configured codec bearer")
			return
		}
		if ns := r.Header.Get("X-Namespace"); ns != opt.Namespace {
			problem(w, http.StatusForbidden, "unknown-namespace", "Unknown namespace", "this codec serves another namespace")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		codec.ServeHTTP(w, r)
	})
}

// problem writes an RFC 9457 problem like the fan API's.
func problem(w http.ResponseWriter, status int, name, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "/problems/" + name, "title": title, "status": status, "detail": detail})
}
