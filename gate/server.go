package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Mode says how a gate is run.
const (
	// ModeLedger: scanners call gates that share one ledger; a ledger
	// failure refuses every scan.
	ModeLedger = "ledger"
	// ModeOffline: a scanner with its own copy; it stays open when the venue
	// LAN is down, and a ticket used at two offline scanners gets in twice,
	// which Sync reports afterwards.
	ModeOffline = "offline"
)

// Server is the gate's HTTP API: GET /healthz, POST /v1/scan (a device
// token required), GET /metrics.
// The gate is a venue service of its own, so its /metrics stays on its port
// (the venue LAN), unlike the fan API's, which moved to an admin listener.
type Server struct {
	Gate *Gate
	// Devices are the scanners that may scan (a bearer token each); nil
	// refuses every scan.
	Devices  *Devices
	Mode     string
	Gatherer prometheus.Gatherer
	Log      *slog.Logger // nil: slog.Default()
}

var gateIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// ScanRequest is the body of POST /v1/scan.
type ScanRequest struct {
	Payload string `json:"payload"`
	GateID  string `json:"gate_id"`
}

// Handler routes the gate's API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.health)
	mux.HandleFunc("POST /v1/scan", s.scan)
	if s.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		problem(w, http.StatusNotFound, "not-found", "Not found", "no such path")
	})
	return mux
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ms, err := s.Gate.Store.Manifests(r.Context())
	if err != nil {
		// Name the failing check only; the error (file paths, driver text)
		// is for the log.
		log := s.Log
		if log == nil {
			log = slog.Default()
		}
		log.Warn("gate health: ledger failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failing": []string{"ledger"}})
		return
	}
	for _, m := range ms {
		if m.EventID != s.Gate.EventID {
			continue
		}
		body := map[string]any{"status": "ok", "mode": s.Mode, "event_id": m.EventID, "manifest_version": m.Version,
			"manifest_expires_at": m.ExpiresAt, "tickets": m.Tickets, "revoked": m.Revoked, "entries": m.Entries}
		if !s.Gate.now().Before(m.ExpiresAt) {
			body["status"] = "manifest_expired"
			writeJSON(w, http.StatusServiceUnavailable, body)
			return
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "no_manifest", "event_id": s.Gate.EventID})
}

func (s *Server) scan(w http.ResponseWriter, r *http.Request) {
	// A scan admits someone and burns the ticket: only a paired scanner
	// may ask, whoever else is on the venue LAN.
	if _, ok := s.Devices.Authenticate(r); !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="encore-gate"`)
		problem(w, http.StatusUnauthorized, "unauthorized", "Authentication required",
			"send Authorization: Bearer with this scanner's device token (ENCORE_GATE_TOKENS)")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		problem(w, http.StatusUnprocessableEntity, "invalid-request", "The request is not valid", "body larger than 4 KiB or unreadable")
		return
	}
	var req ScanRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		problem(w, http.StatusUnprocessableEntity, "invalid-request", "The request is not valid",
			`send {"payload": "<QR payload>", "gate_id": "<gate>"}`)
		return
	}
	if !gateIDPattern.MatchString(req.GateID) {
		problem(w, http.StatusUnprocessableEntity, "invalid-request", "The request is not valid",
			"gate_id: required: letters, digits, '_', '-', '.', ':' (at most 64)")
		return
	}
	res, err := s.Gate.Scan(r.Context(), req.Payload, req.GateID)
	if errors.Is(err, ErrUnavailable) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, res)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// problem writes an RFC 9457 problem like the fan API's.
func problem(w http.ResponseWriter, status int, name, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "/problems/" + name, "title": title, "status": status, "detail": detail})
}
