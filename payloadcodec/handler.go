package payloadcodec

import (
	"net/http"
	"slices"

	"go.temporal.io/sdk/converter"
)

// maxBody bounds a request: the Web UI sends one event's payloads at a time,
// and Temporal refuses payloads past 2 MiB anyway.
const maxBody = 8 << 20

// Handler serves the Temporal codec server protocol over c: POST .../decode
// and .../encode with {"payloads": [...]} in protojson, the way the Web UI
// (and tctl/temporal CLI's --codec-endpoint) calls it. It answers only
// requests for namespace (the X-Namespace header), and lets the browser call
// it cross-origin from allowedOrigins (the Web UI's origins), preflight
// included. A payload that does not decrypt (unknown key, altered
// ciphertext) is a 400, never a 500.
//
// Whoever reaches the handler can decrypt what they hold, so it belongs on a
// listener only staff reach (the admin listener), never the fans' port.
func Handler(c *Codec, namespace string, allowedOrigins []string) http.Handler {
	codec := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && slices.Contains(allowedOrigins, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		} else if origin != "" {
			// A page from anywhere else must not use a staff member's
			// browser to decrypt history.
			http.Error(w, "origin not allowed", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST, OPTIONS")
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		if ns := r.Header.Get("X-Namespace"); ns != namespace {
			http.Error(w, "unknown namespace", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		codec.ServeHTTP(w, r)
	})
}
