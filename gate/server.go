package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

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

// Server is the gate's HTTP API and scanner app: GET / (the app, from the
// binary), GET /healthz, POST /v1/pair, and with a device token POST
// /v1/scan, POST /v1/admit, GET /v1/lookup, GET /v1/counts, GET /v1/config;
// GET /metrics.
// The gate is a venue service of its own, so its /metrics stays on its port
// (the venue LAN), unlike the fan API's, which moved to an admin listener.
type Server struct {
	Gate *Gate
	// Devices are the scanners with static tokens (ENCORE_GATE_TOKENS);
	// scanners paired with encore gate pair are in the ledger. With neither,
	// every scan is refused.
	Devices  *Devices
	Mode     string
	Gatherer prometheus.Gatherer
	Log      *slog.Logger // nil: slog.Default()

	pairOnce   sync.Once
	pairMu     sync.Mutex
	pairByAddr map[string]*rate.Limiter
	pairAll    *rate.Limiter
}

var gateIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// ScanRequest is the body of POST /v1/scan.
type ScanRequest struct {
	Payload string `json:"payload"`
	GateID  string `json:"gate_id"`
	// Direction is "in" (the default) or "out".
	Direction string `json:"direction,omitempty"`
	// Zone is the scanner's zone (--zone), empty for the main doors.
	Zone string `json:"zone,omitempty"`
}

// AdmitRequest is the body of POST /v1/admit: staff let a ticket found by
// a lookup through, every check but the code's.
type AdmitRequest struct {
	TicketID  string `json:"ticket_id"`
	GateID    string `json:"gate_id"`
	Direction string `json:"direction,omitempty"`
	Zone      string `json:"zone,omitempty"`
}

// PairRequest is the body of POST /v1/pair.
type PairRequest struct {
	Code string `json:"code"`
	// Name is what the scanner calls itself; the name given to encore gate
	// pair wins.
	Name string `json:"name,omitempty"`
}

// PairResponse is POST /v1/pair's answer: the token is shown this once.
type PairResponse struct {
	DeviceID string `json:"device_id"`
	Name     string `json:"name"`
	Token    string `json:"token"`
}

// Pairing attempts allowed: codes are short, so guesses are few. Per
// client address, five at once then one every 12 s; all clients together,
// 30 at once then one a second.
const (
	pairEvery     = 12 * time.Second
	pairBurst     = 5
	pairAllEvery  = time.Second
	pairAllBurst  = 30
	pairAddrsKept = 4096
)

// Handler routes the gate's API and app.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.health)
	mux.HandleFunc("POST /v1/pair", s.pair)
	mux.HandleFunc("POST /v1/scan", s.scan)
	mux.HandleFunc("POST /v1/admit", s.admit)
	mux.HandleFunc("GET /v1/lookup", s.lookup)
	mux.HandleFunc("GET /v1/counts", s.counts)
	mux.HandleFunc("GET /v1/config", s.config)
	if s.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{}))
	}
	app := appHandler()
	mux.Handle("GET /{$}", app)
	for _, name := range appFiles() {
		mux.Handle("GET /"+name, app)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		problem(w, http.StatusNotFound, "not-found", "Not found", "no such path")
	})
	return mux
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ms, err := s.Gate.Store.Manifests(r.Context())
	if err != nil {
		// Name the failing check only; the error (file paths, driver text)
		// is for the log.
		s.log().Warn("gate health: ledger failed", "err", err)
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

// device is the scanner the request's bearer token names: a static device
// (compared in constant time) or a paired, unrevoked one (read from the
// ledger on every request, so a revocation holds from the next). It writes
// the refusal (401, or 503 when the ledger cannot say) and returns false.
func (s *Server) device(w http.ResponseWriter, r *http.Request) (string, bool) {
	// A scan admits someone and burns the ticket: only a paired scanner
	// may ask, whoever else is on the venue LAN.
	if id, ok := s.Devices.Authenticate(r); ok {
		return id, true
	}
	if token, ok := bearer(r); ok && len(token) >= MinDeviceTokenBytes {
		id, found, err := s.Gate.Store.pairedDevice(r.Context(), token)
		if err != nil {
			s.log().Error("gate: device lookup failed", "err", err)
			w.Header().Set("Retry-After", "1")
			problem(w, http.StatusServiceUnavailable, "unavailable", "The gate's ledger is unavailable",
				"the ledger could not be read: try again in a moment")
			return "", false
		}
		if found {
			return id, true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="encore-gate"`)
	problem(w, http.StatusUnauthorized, "unauthorized", "Authentication required",
		"send Authorization: Bearer with this scanner's device token (pair it with a code from encore gate pair, or ENCORE_GATE_TOKENS)")
	return "", false
}

func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// decode reads a small JSON body into v, strictly: one object, known fields.
func decode(w http.ResponseWriter, r *http.Request, v any, hint string) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		problem(w, http.StatusUnprocessableEntity, "invalid-request", "The request is not valid", "body larger than 4 KiB or unreadable")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.More() {
		field := ""
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			field = ute.Field
		} else if err != nil && strings.HasPrefix(err.Error(), "json: unknown field ") {
			field = strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		}
		invalid(w, field, "send "+hint)
		return false
	}
	return true
}

// door checks the fields a scan and an admit share.
func (s *Server) door(w http.ResponseWriter, gateID, direction, zone string) bool {
	switch {
	case !gateIDPattern.MatchString(gateID):
		invalid(w, "gate_id", "gate_id: required: letters, digits, '_', '-', '.', ':' (at most 64)")
	case direction != "" && direction != In && direction != Out:
		invalid(w, "direction", `direction: "in" or "out"`)
	case zone != "" && !s.Gate.Zones.Has(zone):
		invalid(w, "zone", fmt.Sprintf("zone: this gate's zones are %q", s.Gate.Zones.Names()))
	default:
		return true
	}
	return false
}

func (s *Server) scan(w http.ResponseWriter, r *http.Request) {
	device, ok := s.device(w, r)
	if !ok {
		return
	}
	var req ScanRequest
	if !decode(w, r, &req, `{"payload": "<QR payload>", "gate_id": "<gate>", "direction": "in|out", "zone": "<zone>"}`) ||
		!s.door(w, req.GateID, req.Direction, req.Zone) {
		return
	}
	s.answer(w, r.Context(), Attempt{Payload: req.Payload, GateID: req.GateID, DeviceID: device,
		Direction: req.Direction, Zone: req.Zone})
}

func (s *Server) admit(w http.ResponseWriter, r *http.Request) {
	device, ok := s.device(w, r)
	if !ok {
		return
	}
	var req AdmitRequest
	if !decode(w, r, &req, `{"ticket_id": "<ticket>", "gate_id": "<gate>", "direction": "in|out", "zone": "<zone>"}`) {
		return
	}
	if !gateIDPattern.MatchString(req.TicketID) {
		invalid(w, "ticket_id", "ticket_id: required: a ticket ID from GET /v1/lookup")
		return
	}
	if !s.door(w, req.GateID, req.Direction, req.Zone) {
		return
	}
	s.answer(w, r.Context(), Attempt{TicketID: req.TicketID, GateID: req.GateID, DeviceID: device,
		Direction: req.Direction, Zone: req.Zone})
}

func (s *Server) answer(w http.ResponseWriter, ctx context.Context, a Attempt) {
	res, err := s.Gate.Try(ctx, a)
	if errors.Is(err, ErrUnavailable) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, res)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.device(w, r); !ok {
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if n := len([]rune(q)); n < 2 || n > 64 {
		invalid(w, "q", "q: a booking code (its first four characters at least) or part of the attendee's name or email, 2 to 64 characters")
		return
	}
	found, err := s.Gate.Store.Lookup(r.Context(), s.Gate.EventID, q)
	if err != nil {
		s.unavailable(w, err)
		return
	}
	if found == nil {
		found = []Found{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tickets": found})
}

func (s *Server) counts(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.device(w, r); !ok {
		return
	}
	c, err := s.Gate.Store.Counts(r.Context(), s.Gate.EventID)
	if err != nil {
		s.unavailable(w, err)
		return
	}
	if c.Reentry, err = s.reentry(r.Context()); err != nil {
		s.unavailable(w, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// reentry is the rule this gate applies: its own --reentry, or the
// event's from the manifest.
func (s *Server) reentry(ctx context.Context) (bool, error) {
	if s.Gate.Reentry {
		return true, nil
	}
	return s.Gate.Store.EventReentry(ctx, s.Gate.EventID)
}

// ZoneInfo is one zone as GET /v1/config lists it.
type ZoneInfo struct {
	Name     string   `json:"name"`
	Sections []string `json:"sections"`
}

func (s *Server) config(w http.ResponseWriter, r *http.Request) {
	device, ok := s.device(w, r)
	if !ok {
		return
	}
	reentry, err := s.reentry(r.Context())
	if err != nil {
		s.unavailable(w, err)
		return
	}
	zones := []ZoneInfo{}
	for _, n := range s.Gate.Zones.Names() {
		zones = append(zones, ZoneInfo{Name: n, Sections: s.Gate.Zones[n]})
	}
	writeJSON(w, http.StatusOK, map[string]any{"device_id": device, "event_id": s.Gate.EventID, "mode": s.Mode,
		"reentry": reentry, "zones": zones, "now": s.Gate.now().UTC()})
}

func (s *Server) unavailable(w http.ResponseWriter, err error) {
	s.log().Error("gate: ledger read failed", "err", err)
	w.Header().Set("Retry-After", "1")
	problem(w, http.StatusServiceUnavailable, "unavailable", "The gate's ledger is unavailable", "try again in a moment")
}

// pairAllowed spends one of the client's pairing attempts.
func (s *Server) pairAllowed(r *http.Request) bool {
	s.pairOnce.Do(func() {
		s.pairByAddr = map[string]*rate.Limiter{}
		s.pairAll = rate.NewLimiter(rate.Every(pairAllEvery), pairAllBurst)
	})
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	s.pairMu.Lock()
	defer s.pairMu.Unlock()
	l := s.pairByAddr[host]
	if l == nil {
		if len(s.pairByAddr) >= pairAddrsKept {
			clear(s.pairByAddr) // a flood of addresses: start again rather than grow
		}
		l = rate.NewLimiter(rate.Every(pairEvery), pairBurst)
		s.pairByAddr[host] = l
	}
	return l.Allow() && s.pairAll.Allow()
}

func (s *Server) pair(w http.ResponseWriter, r *http.Request) {
	if !s.pairAllowed(r) {
		w.Header().Set("Retry-After", fmt.Sprint(int(pairEvery.Seconds())))
		problem(w, http.StatusTooManyRequests, "rate-limited", "Too many pairing attempts",
			"wait a few seconds, then type the code again")
		return
	}
	var req PairRequest
	if !decode(w, r, &req, `{"code": "<code from encore gate pair>", "name": "<scanner name>"}`) {
		return
	}
	if _, ok := NormalizePairingCode(req.Code); !ok {
		invalid(w, "code", fmt.Sprintf("code: the %d characters encore gate pair printed", PairingCodeLength))
		return
	}
	if req.Name != "" && !ValidDeviceName(req.Name) {
		invalid(w, "name", "name: 1 to 64 printable characters")
		return
	}
	d, token, err := s.Gate.Store.Pair(r.Context(), req.Code, req.Name, s.Gate.now())
	if errors.Is(err, ErrPairingCode) {
		problemFields(w, http.StatusForbidden, "pairing-code-invalid", "The pairing code is not valid",
			"this code is unknown, used or expired: make a new one with encore gate pair", "code")
		return
	}
	if err != nil {
		s.unavailable(w, err)
		return
	}
	s.log().Info("scanner paired", "device_id", d.ID, "name", d.Name)
	writeJSON(w, http.StatusCreated, PairResponse{DeviceID: d.ID, Name: d.Name, Token: token})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// problem writes an RFC 9457 problem like the fan API's.
func problem(w http.ResponseWriter, status int, name, title, detail string) {
	problemFields(w, status, name, title, detail, "")
}

// invalid is a 422 invalid-request naming the offending field (when known).
func invalid(w http.ResponseWriter, field, detail string) {
	problemFields(w, http.StatusUnprocessableEntity, "invalid-request", "The request is not valid", detail, field)
}

// problemFields is a problem with the fan API's errors member naming the
// offending field, when there is one.
func problemFields(w http.ResponseWriter, status int, name, title, detail, field string) {
	body := map[string]any{"type": "/problems/" + name, "title": title, "status": status, "detail": detail}
	if field != "" {
		body["errors"] = []map[string]string{{"field": field, "message": detail}}
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
