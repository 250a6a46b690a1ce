package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/encore-tickets/encore/system"
)

// DrillHandler serves the switches that encore drill turns on a
// development stack (encore dev mounts it under /drill/ on its admin
// listener; production processes never do): the worker, the outbox relay,
// and the Redis and PostgreSQL servers the stack started for itself.
//
//	POST /drill/worker   {"running": false|true}
//	POST /drill/relay    {"running": false|true}
//	POST /drill/redis    {"running": false|true}
//	POST /drill/postgres/restart
func DrillHandler(p *system.Process, inf *Infra) http.Handler {
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
