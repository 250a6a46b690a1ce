package psp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/encore-tickets/encore/internal/defaults"
)

// Defaults.
const (
	DefaultAddr          = "127.0.0.1:12111"
	DefaultAPIKey        = "sk_test_encore_sandbox"
	DefaultWebhookSecret = "whsec_encore_sandbox"
	// DefaultPublishableKey is the key the stand-in for Stripe.js (stripejs.go)
	// is given in the browser.
	DefaultPublishableKey = "pk_test_encore_sandbox"
)

// APIVersion is the Stripe API version the sandbox speaks and stamps on
// events: the one the linked stripe-go expects, so webhook.ConstructEvent
// accepts the events unchanged.
const APIVersion = stripe.APIVersion

// Config configures a sandbox server.
type Config struct {
	Addr   string // default "127.0.0.1:12111"
	APIKey string // accepted secret key, default "sk_test_encore_sandbox"
	// PublishableKey is accepted by the calls a browser makes with the
	// stand-in for Stripe.js: creating a payment method and reading an
	// intent by its client secret. Default "pk_test_encore_sandbox".
	PublishableKey string
	WebhookURL     string // where events are POSTed; empty = events are recorded but not delivered
	WebhookSecret  string // signing secret, default "whsec_encore_sandbox"
	// StatePath is the JSON state file. It is rewritten atomically (temp file,
	// fsync, rename); every mutation is appended to StatePath+".journal"
	// before the API answers, and the journal is folded into the state file
	// when it grows and on shutdown. Empty = memory only.
	StatePath string
	Faults    FaultConfig
	// Clock is optional; it stamps objects, events, idempotency keys and
	// webhook signatures (keep it near real time if receivers check the
	// signature's timestamp tolerance). Delivery scheduling uses real time.
	Clock  func() time.Time
	Logger *slog.Logger

	// PublicURL is the base URL put into next_action redirect URLs and
	// checkout links, e.g. "http://127.0.0.1:12111". Empty = derived from the
	// request's Host header.
	PublicURL string
	// EnabledEvents limits which event types are delivered to WebhookURL
	// (like a Stripe webhook endpoint's enabled_events). Empty or "*" = all.
	EnabledEvents []string
	// Delivery tunes webhook delivery and redelivery.
	Delivery DeliveryConfig
	// DisputeDelay is how long after its capture a payment with the
	// dispute test card is disputed (disputes.go); default 3s.
	DisputeDelay time.Duration
}

// FaultConfig holds the configured fault rates. Per-request faults come from
// the Encore-Sandbox-Fault header or the sandbox_fault metadata key.
type FaultConfig struct {
	Latency                 time.Duration // added to every API call
	TimeoutAfterSuccessRate float64       // fraction of confirm/capture calls whose successful response is lost
	DuplicateWebhookRate    float64       // fraction of events delivered twice (same id and payload)
	OutOfOrderWebhookRate   float64       // fraction of events held back until a later event of the same intent was delivered
	WebhookDelay            time.Duration // added before the first delivery attempt of every event
	ServerErrorRate         float64       // fraction of API calls answered 500 before acting (a retry is safe)
	Seed                    int64         // seeds the fault dice

	// TimeoutMode is TimeoutHold (default) or TimeoutDrop.
	TimeoutMode string
	// TimeoutHold bounds how long a lost response is held before the
	// connection is closed; default 30s.
	TimeoutHold time.Duration
	// OutOfOrderHold bounds how long an event is held back waiting for a
	// later event of the same intent; default 5s.
	OutOfOrderHold time.Duration
}

// DeliveryConfig tunes webhook delivery. Zero values take the defaults.
type DeliveryConfig struct {
	InitialBackoff time.Duration // first redelivery delay, default 1s; doubles per attempt
	MaxBackoff     time.Duration // cap on the redelivery delay, default 5m
	MaxAttempts    int           // attempts per event before giving up, default 12
	Timeout        time.Duration // per attempt, default 10s
	Concurrency    int           // intents delivered in parallel, default 8
	HTTPClient     *http.Client  // default: a client with Timeout
}

// Server is a Stripe-compatible payment sandbox.
type Server struct {
	cfg      Config
	switches switchboard // the runtime fault switches of /_sandbox/faults
	log      *slog.Logger
	scope    string // idempotency scope derived from the API key

	mu          sync.Mutex
	seq         int64
	intents     map[string]*intent
	intentOrder []*intent // ascending Seq
	charges     map[string]*charge
	refunds     map[string]*refund
	refundOrder []*refund                 // ascending Seq
	methods     map[string]*paymentMethod // created with POST /v1/payment_methods
	events      []*event                  // recent events, ascending Seq
	eventByID   map[string]*event
	idem        map[string]*idemRecord
	queues      map[string][]*delivery // per ordering key (intent ID), ascending Seq
	deliveryN   int
	inflight    map[string]bool
	st          *store
	pending     []record

	// The disputes (disputes.go), in memory only, the order ascending Seq.
	disputes     map[string]*dispute
	disputeOrder []*dispute

	rngMu sync.Mutex
	rng   *rand.Rand

	startOnce sync.Once
	handler   http.Handler
	closing   chan struct{}
	closeOnce sync.Once
	closeErr  error
	wake      chan struct{}
	wg        sync.WaitGroup
	client    *http.Client
}

// New creates a sandbox server and loads its state from cfg.StatePath.
// Webhook delivery starts with the first call to Handler (or
// ListenAndServe/Serve); Close stops it and flushes the state.
func New(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.APIKey == "" {
		cfg.APIKey = DefaultAPIKey
	}
	if cfg.WebhookSecret == "" {
		cfg.WebhookSecret = DefaultWebhookSecret
	}
	if cfg.PublishableKey == "" {
		cfg.PublishableKey = DefaultPublishableKey
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Faults.TimeoutMode == "" {
		cfg.Faults.TimeoutMode = TimeoutHold
	}
	if cfg.Faults.TimeoutMode != TimeoutHold && cfg.Faults.TimeoutMode != TimeoutDrop {
		return nil, fmt.Errorf("psp: Faults.TimeoutMode must be %q or %q", TimeoutHold, TimeoutDrop)
	}
	defaults.Fill(&cfg.Faults.TimeoutHold, 30*time.Second)
	defaults.Fill(&cfg.Faults.OutOfOrderHold, 5*time.Second)
	d := &cfg.Delivery
	defaults.Fill(&d.InitialBackoff, time.Second)
	defaults.Fill(&d.MaxBackoff, 5*time.Minute)
	if d.MaxBackoff < d.InitialBackoff {
		d.MaxBackoff = d.InitialBackoff
	}
	defaults.Fill(&d.MaxAttempts, 12)
	defaults.Fill(&d.Timeout, 10*time.Second)
	defaults.Fill(&d.Concurrency, 8)
	if cfg.WebhookURL != "" {
		u, err := url.Parse(cfg.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("psp: WebhookURL %q is not an http(s) URL", cfg.WebhookURL)
		}
	}
	for _, r := range []float64{cfg.Faults.TimeoutAfterSuccessRate, cfg.Faults.DuplicateWebhookRate, cfg.Faults.OutOfOrderWebhookRate, cfg.Faults.ServerErrorRate} {
		if r < 0 || r > 1 {
			return nil, errors.New("psp: fault rates must be between 0 and 1")
		}
	}
	sum := sha256.Sum256([]byte(cfg.APIKey))
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "psp"),
		scope:     hex.EncodeToString(sum[:8]),
		intents:   map[string]*intent{},
		charges:   map[string]*charge{},
		refunds:   map[string]*refund{},
		methods:   map[string]*paymentMethod{},
		eventByID: map[string]*event{},
		idem:      map[string]*idemRecord{},
		queues:    map[string][]*delivery{},
		inflight:  map[string]bool{},
		rng:       rand.New(rand.NewPCG(uint64(cfg.Faults.Seed), 0x5eed)),
		closing:   make(chan struct{}),
		wake:      make(chan struct{}, 1),
	}
	s.client = d.HTTPClient
	if s.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = d.Concurrency
		s.client = &http.Client{Timeout: d.Timeout, Transport: tr}
	}
	if cfg.StatePath != "" {
		st, err := openStore(cfg.StatePath)
		if err != nil {
			return nil, err
		}
		s.st = st
		if err := s.load(); err != nil {
			st.close()
			return nil, err
		}
	}
	s.handler = s.routes()
	return s, nil
}

func (s *Server) now() time.Time { return s.cfg.Clock() }

// Handler returns the HTTP handler serving the API, the hosted checkout
// pages and /healthz. The first call starts webhook delivery.
func (s *Server) Handler() http.Handler {
	s.startOnce.Do(s.startDispatcher)
	return s.handler
}

// ListenAndServe listens on cfg.Addr and serves until ctx is done, then
// shuts down: held responses are released, webhook delivery stops and the
// state is flushed.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve is ListenAndServe on an existing listener (for example
// 127.0.0.1:0 in tests).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("payment sandbox listening", "addr", ln.Addr().String())
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.beginClose()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		_ = srv.Close()
	}
	closeErr := s.Close()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return closeErr
}

func (s *Server) beginClose() {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.mu.Unlock()
}

// Close stops webhook delivery, releases held responses and writes the
// state file. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.beginClose()
		s.wg.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.st != nil {
			s.closeErr = s.compactLocked()
			if err := s.st.close(); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
			s.st = nil
		}
	})
	return s.closeErr
}

// ---- routing ----

func (s *Server) routes() http.Handler {
	api := http.NewServeMux()
	api.HandleFunc("POST /v1/payment_intents", s.mutating(s.createIntent))
	api.HandleFunc("GET /v1/payment_intents", s.reading(s.listIntents))
	api.HandleFunc("GET /v1/payment_intents/search", s.reading(s.searchIntents))
	api.HandleFunc("GET /v1/payment_intents/{id}", s.reading(s.getIntent))
	api.HandleFunc("POST /v1/payment_intents/{id}", s.mutating(s.updateIntent))
	api.HandleFunc("POST /v1/payment_intents/{id}/confirm", s.mutating(s.confirmIntent))
	api.HandleFunc("POST /v1/payment_intents/{id}/capture", s.mutating(s.captureIntent))
	api.HandleFunc("POST /v1/payment_intents/{id}/cancel", s.mutating(s.cancelIntent))
	api.HandleFunc("POST /v1/refunds", s.mutating(s.createRefund))
	api.HandleFunc("GET /v1/refunds", s.reading(s.listRefunds))
	api.HandleFunc("GET /v1/refunds/{id}", s.reading(s.getRefund))
	api.HandleFunc("GET /v1/charges/{id}", s.reading(s.getCharge))
	api.HandleFunc("GET /v1/disputes", s.reading(s.listDisputes))
	api.HandleFunc("GET /v1/disputes/{id}", s.reading(s.getDispute))
	api.HandleFunc("POST /v1/disputes/{id}", s.mutating(s.updateDispute))
	api.HandleFunc("POST /v1/disputes/{id}/close", s.mutating(s.closeDispute))
	api.HandleFunc("POST /v1/payment_methods", s.mutating(s.createPaymentMethod))
	api.HandleFunc("GET /v1/payment_methods/{id}", s.reading(s.getPaymentMethod))
	api.HandleFunc("GET /v1/events", s.reading(s.listEvents))
	api.HandleFunc("GET /v1/events/{id}", s.reading(s.getEvent))

	root := http.NewServeMux()
	// The runtime fault switches (faults.go): an API that is unavailable
	// (authorise, capture, refund, void) and a drill's share of lost
	// answers (encore drill psp-timeout), until switched back.
	root.HandleFunc("GET /_sandbox/faults", s.serveFaults)
	root.HandleFunc("POST /_sandbox/faults", s.serveFaults)
	root.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	root.HandleFunc("GET /checkout/{id}", s.checkoutPage)
	root.HandleFunc("POST /checkout/{id}", s.hostedForm(s.checkoutPay))
	root.HandleFunc("GET /checkout/{id}/challenge", s.challengePage)
	root.HandleFunc("POST /checkout/{id}/challenge", s.hostedForm(s.challengeSubmit))
	root.Handle("GET /js/v3/", http.StripPrefix("/js/v3/", http.HandlerFunc(serveStripeJS)))
	root.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		reqID := newID("req")
		h := w.Header()
		h.Set("Request-Id", reqID)
		h.Set("Stripe-Version", APIVersion)
		h.Set("Cache-Control", "no-cache, no-store")
		if e := s.authenticate(r, api); e != nil {
			h.Set("WWW-Authenticate", `Bearer realm="Stripe"`)
			writeJSON(w, e.Status, errorBody(e.Err))
			return
		}
		if _, pattern := api.Handler(r); pattern == "" {
			writeJSON(w, http.StatusNotFound, errorBody(jsonError{Type: "invalid_request_error",
				Message: fmt.Sprintf("Unrecognized request URL (%s: %s).", r.Method, r.URL.Path)}))
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), reqIDKey{}, reqID))
		api.ServeHTTP(w, r)
	})
	return root
}

type reqIDKey struct{}

func (s *Server) authenticate(r *http.Request, api *http.ServeMux) *apiError {
	key := ""
	auth := r.Header.Get("Authorization")
	switch {
	case auth == "":
	case len(auth) > 7 && strings.EqualFold(auth[:7], "Bearer "):
		key = strings.TrimSpace(auth[7:])
	case len(auth) > 6 && strings.EqualFold(auth[:6], "Basic "):
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth[6:]))
		if err == nil {
			key, _, _ = strings.Cut(string(raw), ":")
		}
	}
	if key == "" {
		return &apiError{Status: 401, Err: jsonError{Type: "invalid_request_error",
			Message: "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY')."}}
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.cfg.PublishableKey)) == 1 {
		return s.publishableAllowed(r, api)
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.cfg.APIKey)) != 1 {
		return &apiError{Status: 401, Err: jsonError{Type: "invalid_request_error",
			Message: "Invalid API Key provided: " + redactKey(key)}}
	}
	return nil
}

func redactKey(k string) string {
	if len(k) <= 12 {
		return strings.Repeat("*", len(k))
	}
	return k[:8] + strings.Repeat("*", len(k)-12) + k[len(k)-4:]
}

// ---- responses and errors ----

// apiError is an error response in Stripe's shape.
type apiError struct {
	Status int
	Err    jsonError
}

func errorBody(e jsonError) []byte {
	return mustJSON(map[string]any{"error": e})
}

// mustJSON encodes an API body compactly (idempotent results are stored).
func mustJSON(v any) []byte {
	return encodeJSON(v, "")
}

// prettyJSON encodes an event payload indented, as Stripe sends them.
func prettyJSON(v any) []byte {
	return encodeJSON(v, "  ")
}

func encodeJSON(v any, indent string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("psp: encoding JSON: %v", err))
	}
	return buf.Bytes()
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func invalidParam(param, msg string) *apiError {
	return &apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "parameter_invalid", Param: param, Message: msg}}
}

func missingParam(param string) *apiError {
	return &apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "parameter_missing", Param: param,
		Message: "Missing required param: " + param + "."}}
}

func noSuch(kind, id, param string) *apiError {
	return &apiError{Status: 404, Err: jsonError{Type: "invalid_request_error", Code: "resource_missing", Param: param,
		Message: fmt.Sprintf("No such %s: '%s'", kind, id)}}
}

func (s *Server) unexpectedState(pi *intent, msg string) *apiError {
	return &apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "payment_intent_unexpected_state",
		Message: msg, PaymentIntent: mustJSON(s.renderIntent(pi, nil))}}
}

// sleepCtx waits d unless the request or the server ends first.
func (s *Server) sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}

// baseURL is the public base URL for links handed to browsers.
func (s *Server) baseURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimSuffix(s.cfg.PublicURL, "/")
	}
	scheme := "http"
	if r != nil && r.TLS != nil {
		scheme = "https"
	}
	host := s.cfg.Addr
	if r != nil && r.Host != "" {
		host = r.Host
	}
	return scheme + "://" + host
}
