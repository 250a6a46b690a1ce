package system

import (
	"context"
	"net/http"
	"net/http/pprof"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// AdminHandler is the operators' listener (ENCORE_ADMIN_ADDR): /metrics and
// the runtime profiles under /debug/pprof/. It is never the fan port: both
// tell an attacker too much, and a profile costs CPU. extra mounts more
// handlers by pattern (for example "/codec/"); a pattern that collides with
// the built-in ones panics at start-up, as http.ServeMux does.
func AdminHandler(g prometheus.Gatherer, extra map[string]http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	// Liveness for a container health check of a process with no fan port
	// (encore worker).
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	patterns := make([]string, 0, len(extra))
	for p := range extra {
		patterns = append(patterns, p)
	}
	sort.Strings(patterns)
	for _, p := range patterns {
		mux.Handle(p, extra[p])
	}
	return mux
}

// ServeAdmin starts the process's admin listener once, whether the process
// serves the API, runs the worker or both (encore dev), with the handlers in
// p.AdminHandlers; it returns the bound address.
func (p *Process) ServeAdmin(ctx context.Context) (string, error) {
	p.adminOnce.Do(func() {
		// The codec and the drill switches verify bearer tokens: resolve the
		// verifier first. A worker without an identity provider still
		// serves, its codec then answering the configured bearer only.
		if _, err := p.identity(ctx); err != nil {
			p.Log.Info("admin listener: no access tokens verified (the codec accepts ENCORE_TEMPORAL_CODEC_TOKEN only)", "reason", err)
		}
		addr, _, err := ServeWith(ctx, p.Config.AdminAddr, AdminHandler(p.Registry, p.AdminHandlers), AdminTimeouts)
		if err != nil {
			p.adminErr = err
			return
		}
		p.adminAddr = addr.String()
		p.Log.Info("admin listening", "url", "http://"+p.adminAddr, "paths", "/metrics /debug/pprof/ /codec/")
	})
	return p.adminAddr, p.adminErr
}
