package stack

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/system"
)

// DrillTokenHeader carries the drill token (Authorization: Bearer works too).
const DrillTokenHeader = "X-Encore-Drill-Token"

// DrillHandler serves the switches that encore drill turns on a
// development stack (encore dev mounts it under /drill/ on its admin
// listener; production processes never do): the worker, the outbox relay,
// and the Redis and PostgreSQL servers the stack started for itself.
//
//	POST /drill/worker   {"running": false|true}
//	POST /drill/relay    {"running": false|true}
//	POST /drill/redis    {"running": false|true}
//	POST /drill/postgres/restart   {}
//
// Every switch is guarded (see guardDrill): JSON only, same origin only,
// and the drill token (encore dev makes one per run) or an operator's
// access token.
func DrillHandler(p *system.Process, inf *Infra, token string) http.Handler {
	return guardDrill(drillSwitches(p, inf), token, p.TokenVerifier)
}

// guardDrill refuses a switch a web page could throw from a developer's
// browser. A cross-origin form or fetch may POST text/plain without a
// preflight, so the body must be application/json (415 otherwise, which a
// browser cannot send cross-origin without a preflight this handler never
// allows); a request a browser marks as from another site or origin
// (Sec-Fetch-Site, Origin) is 403; and the caller must hold the drill token
// (DrillTokenHeader or Authorization: Bearer) or an operator's or admin's
// access token, 401 otherwise.
func guardDrill(next http.Handler, token string, tokens func() *session.Verifier) http.Handler {
	want := sha256.Sum256([]byte(token))
	authorized := func(r *http.Request) bool {
		got := r.Header.Get(DrillTokenHeader)
		bearer := ""
		if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
			bearer = tok
		}
		if got == "" {
			got = bearer
		}
		if sum := sha256.Sum256([]byte(got)); token != "" && got != "" && subtle.ConstantTimeCompare(sum[:], want[:]) == 1 {
			return true
		}
		if v := tokens(); v != nil && bearer != "" {
			id, err := v.Verify(r.Context(), bearer)
			return err == nil && (id.Has(session.Operator) || id.Has(session.Admin))
		}
		return false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			drillRefused(w, http.StatusForbidden, "cross-site", "a drill switch is thrown from the same origin only")
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host && origin != "https://"+r.Host {
			drillRefused(w, http.StatusForbidden, "cross-site", "a drill switch is thrown from the same origin only")
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			drillRefused(w, http.StatusUnsupportedMediaType, "unsupported-media-type", "send Content-Type: application/json")
			return
		}
		if !authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="encore-drill"`)
			drillRefused(w, http.StatusUnauthorized, "unauthorized",
				"send the drill token (encore dev writes it to ENCORE_DATA_DIR/drill.token) as "+DrillTokenHeader+
					", or an operator's access token as Authorization: Bearer")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// drillRefused writes an RFC 9457 problem.
func drillRefused(w http.ResponseWriter, status int, name, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "/problems/" + name, "title": http.StatusText(status),
		"status": status, "detail": detail})
}

// drillSwitches are the switches themselves.
func drillSwitches(p *system.Process, inf *Infra) http.Handler {
	mux := http.NewServeMux()
	switchOf := func(set func(ctx context.Context, on bool) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				Running *bool `json:"running"`
			}
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1024)).Decode(&req); err != nil || req.Running == nil {
				http.Error(w, `send {"running": true|false}`, http.StatusBadRequest)
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
			defer cancel()
			if err := set(ctx, *req.Running); err != nil {
				http.Error(w, err.Error(), http.StatusConflict)
				return
			}
			p.Log.Warn("drill: switched", "path", r.URL.Path, "running", *req.Running)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]bool{"running": *req.Running})
		}
	}
	mux.HandleFunc("POST /drill/worker", switchOf(func(_ context.Context, on bool) error { return p.SetWorkerRunning(on) }))
	mux.HandleFunc("POST /drill/relay", switchOf(func(_ context.Context, on bool) error { p.SetRelayRunning(on); return nil }))
	mux.HandleFunc("POST /drill/redis", switchOf(func(ctx context.Context, on bool) error {
		if on {
			return inf.StartRedis(ctx)
		}
		return inf.StopRedis()
	}))
	mux.HandleFunc("POST /drill/postgres/restart", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
		defer cancel()
		if err := inf.RestartPostgres(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		p.Log.Warn("drill: PostgreSQL restarted")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"restarted":true}` + "\n"))
	})
	return mux
}
