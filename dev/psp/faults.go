package psp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FaultHeader is the request header that injects faults into one API call.
const FaultHeader = "Encore-Sandbox-Fault"

// FaultMetadataKey is the PaymentIntent metadata key whose value (same syntax
// as FaultHeader) applies to every later mutating call on that intent and to
// the webhooks those calls emit.
const FaultMetadataKey = "sandbox_fault"

// Timeout modes for timeout_after_success.
const (
	// TimeoutHold keeps the response until the client gives up (its context
	// or HTTP timeout), the hold limit passes, or the server shuts down; the
	// connection is then closed without a response.
	TimeoutHold = "hold"
	// TimeoutDrop closes the connection at once without a response. Note that
	// net/http and stripe-go retry such a request transparently with the same
	// Idempotency-Key, which then replays the stored response.
	TimeoutDrop = "drop"
)

// faultSet is the parsed form of a fault directive list.
type faultSet struct {
	timeout     bool
	timeoutMode string        // "" = configured default
	timeoutHold time.Duration // 0 = configured default
	serverError bool
	latency     time.Duration
	duplicate   bool
	outOfOrder  bool
	delay       time.Duration
	hasDelay    bool
}

func (f faultSet) empty() bool { return f == faultSet{} }

// parseFaults parses directives such as
// "timeout_after_success, latency=200ms, delay_webhook=2s".
// Directives are separated by commas, semicolons or spaces.
func parseFaults(spec string) (faultSet, error) {
	var f faultSet
	fields := strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' })
	for _, field := range fields {
		name, value, hasValue := strings.Cut(strings.TrimSpace(field), "=")
		name = strings.ToLower(strings.TrimSpace(name))
		value = strings.TrimSpace(value)
		var err error // a duration that does not parse
		switch name {
		case "timeout_after_success", "timeout":
			f.timeout = true
			if hasValue {
				switch strings.ToLower(value) {
				case TimeoutHold:
					f.timeoutMode = TimeoutHold
				case TimeoutDrop:
					f.timeoutMode = TimeoutDrop
				default:
					f.timeoutMode = TimeoutHold
					err = setFaultDuration(&f.timeoutHold, "timeout_after_success", value, "hold, drop or a duration")
				}
			}
		case "server_error", "500":
			f.serverError = true
		case "latency":
			err = setFaultDuration(&f.latency, name, value, "a duration such as 200ms")
		case "duplicate_webhook":
			f.duplicate = true
		case "out_of_order_webhook":
			f.outOfOrder = true
		case "delay_webhook":
			err = setFaultDuration(&f.delay, name, value, "a duration such as 2s")
			f.hasDelay = true
		case "":
		default:
			return f, fmt.Errorf("unknown sandbox fault %q (known: timeout_after_success[=hold|drop|<duration>], server_error, latency=<duration>, duplicate_webhook, out_of_order_webhook, delay_webhook=<duration>)", name)
		}
		if err != nil {
			return f, err
		}
	}
	return f, nil
}

// setFaultDuration sets *d to the duration a fault takes: a negative one is
// as wrong as one that does not parse. takes says what was expected.
func setFaultDuration(d *time.Duration, name, value, takes string) error {
	v, err := time.ParseDuration(value)
	if err != nil || v < 0 {
		return fmt.Errorf("%s takes %s, not %q", name, takes, value)
	}
	*d = v
	return nil
}

// merge returns the union of two fault sets; explicit values in o win.
func (f faultSet) merge(o faultSet) faultSet {
	f.timeout = f.timeout || o.timeout
	if o.timeoutMode != "" {
		f.timeoutMode = o.timeoutMode
	}
	if o.timeoutHold != 0 {
		f.timeoutHold = o.timeoutHold
	}
	f.serverError = f.serverError || o.serverError
	if o.latency > f.latency {
		f.latency = o.latency
	}
	f.duplicate = f.duplicate || o.duplicate
	f.outOfOrder = f.outOfOrder || o.outOfOrder
	if o.hasDelay {
		f.delay, f.hasDelay = o.delay, true
	}
	return f
}

// metadataFaults returns the faults configured on an intent's metadata.
// The value was validated when it was set, so errors are ignored.
func metadataFaults(meta map[string]string) faultSet {
	if v := meta[FaultMetadataKey]; v != "" {
		f, _ := parseFaults(v)
		return f
	}
	return faultSet{}
}

// chance draws from the seeded fault generator.
func (s *Server) chance(rate float64) bool {
	if rate <= 0 {
		return false
	}
	if rate >= 1 {
		return true
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64() < rate
}

// ---- runtime fault switches: /_sandbox/faults ----

// FaultsPath is where the sandbox serves its runtime fault switches.
const FaultsPath = "/_sandbox/faults"

// Faults are the sandbox's runtime fault switches, served at FaultsPath.
// Each Unavailable switch makes every call of its kind answer 503 api_error
// before acting, until it is switched off; a switch applies to requests that
// arrive after it was set (requests already past the check finish normally).
// The switches live in memory: a restarted sandbox starts with all off.
type Faults struct {
	// AuthoriseUnavailable: creating a PaymentIntent (with or without
	// confirm=true) and confirming one, through the API or the hosted
	// checkout and 3-D Secure pages.
	AuthoriseUnavailable bool `json:"authorise_unavailable"`
	// CaptureUnavailable: capturing a PaymentIntent.
	CaptureUnavailable bool `json:"capture_unavailable"`
	// RefundUnavailable: creating a refund. Voiding an authorisation is not
	// a refund (it is a cancel, and no money moved): see VoidUnavailable.
	RefundUnavailable bool `json:"refund_unavailable"`
	// VoidUnavailable: cancelling a PaymentIntent, which voids its
	// authorisation.
	VoidUnavailable bool `json:"void_unavailable"`
	// TimeoutAfterSuccessRate is the share (0..1) of confirm and capture
	// calls whose successful answer is lost, on top of
	// Config.Faults.TimeoutAfterSuccessRate (encore drill psp-timeout).
	TimeoutAfterSuccessRate float64 `json:"timeout_after_success_rate"`
	// DuplicateWebhookRate and OutOfOrderWebhookRate are the shares (0..1)
	// of events delivered twice and held back until a later event of the
	// same intent overtook them; WebhookDelayMS delays the first delivery
	// of every event (at most a minute). Each comes on top of the
	// sandbox's configured faults (a chaos rehearsal throws them mid-sale).
	DuplicateWebhookRate  float64 `json:"duplicate_webhook_rate"`
	OutOfOrderWebhookRate float64 `json:"out_of_order_webhook_rate"`
	WebhookDelayMS        int64   `json:"webhook_delay_ms"`
}

// webhookDelay is the runtime delay of a first delivery.
func (f Faults) webhookDelay() time.Duration {
	return time.Duration(f.WebhookDelayMS) * time.Millisecond
}

// faultsPatch is a POST to FaultsPath: the switches it names change, the
// others keep their setting.
type faultsPatch struct {
	AuthoriseUnavailable    *bool    `json:"authorise_unavailable"`
	CaptureUnavailable      *bool    `json:"capture_unavailable"`
	RefundUnavailable       *bool    `json:"refund_unavailable"`
	VoidUnavailable         *bool    `json:"void_unavailable"`
	TimeoutAfterSuccessRate *float64 `json:"timeout_after_success_rate"`
	DuplicateWebhookRate    *float64 `json:"duplicate_webhook_rate"`
	OutOfOrderWebhookRate   *float64 `json:"out_of_order_webhook_rate"`
	WebhookDelayMS          *int64   `json:"webhook_delay_ms"`
}

// invalid says what is out of range in the patch ("" when nothing is).
func (p faultsPatch) invalid() string {
	for _, r := range []struct {
		name string
		v    *float64
	}{{"timeout_after_success_rate", p.TimeoutAfterSuccessRate}, {"duplicate_webhook_rate", p.DuplicateWebhookRate},
		{"out_of_order_webhook_rate", p.OutOfOrderWebhookRate}} {
		if r.v != nil && !(*r.v >= 0 && *r.v <= 1) {
			return fmt.Sprintf("%s must be between 0 and 1, not %v", r.name, *r.v)
		}
	}
	if d := p.WebhookDelayMS; d != nil && (*d < 0 || *d > 60_000) {
		return fmt.Sprintf("webhook_delay_ms must be between 0 and 60000, not %d", *d)
	}
	return ""
}

func (p faultsPatch) apply(f Faults) Faults {
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	set(&f.AuthoriseUnavailable, p.AuthoriseUnavailable)
	set(&f.CaptureUnavailable, p.CaptureUnavailable)
	set(&f.RefundUnavailable, p.RefundUnavailable)
	set(&f.VoidUnavailable, p.VoidUnavailable)
	for _, r := range []struct{ dst, v *float64 }{{&f.TimeoutAfterSuccessRate, p.TimeoutAfterSuccessRate},
		{&f.DuplicateWebhookRate, p.DuplicateWebhookRate}, {&f.OutOfOrderWebhookRate, p.OutOfOrderWebhookRate}} {
		if r.v != nil {
			*r.dst = *r.v
		}
	}
	if p.WebhookDelayMS != nil {
		f.WebhookDelayMS = *p.WebhookDelayMS
	}
	return f
}

// switchboard holds the runtime switches. Readers (every API call) load one
// immutable snapshot without locking; writers serialise on mu so that two
// partial updates at once both take effect.
type switchboard struct {
	mu  sync.Mutex
	cur atomic.Pointer[Faults]
}

// load returns the switches in force now.
func (b *switchboard) load() Faults {
	if f := b.cur.Load(); f != nil {
		return *f
	}
	return Faults{}
}

func (b *switchboard) update(p faultsPatch) Faults {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := p.apply(b.load())
	b.cur.Store(&f)
	return f
}

// lossOverride is the drill's share of confirm and capture calls whose
// response is lost (0 when none).
func (s *Server) lossOverride() float64 { return s.switches.load().TimeoutAfterSuccessRate }

// unavailable names the API call kind that the runtime switches make
// unavailable for a request to the route pattern, or "" when it may go on.
func (s *Server) unavailable(pattern string) string {
	f := s.switches.load()
	switch pattern {
	case "POST /v1/payment_intents", "POST /v1/payment_intents/{id}/confirm",
		"POST /checkout/{id}", "POST /checkout/{id}/challenge":
		if f.AuthoriseUnavailable {
			return "authorise"
		}
	case "POST /v1/payment_intents/{id}/capture":
		if f.CaptureUnavailable {
			return "capture"
		}
	case "POST /v1/refunds":
		if f.RefundUnavailable {
			return "refund"
		}
	case "POST /v1/payment_intents/{id}/cancel":
		if f.VoidUnavailable {
			return "void"
		}
	}
	return ""
}

// writeUnavailableFault answers a call that a runtime switch makes
// unavailable the way Stripe answers when its API is unavailable: 503 with
// an api_error object, before acting (nothing changes, no event, nothing
// stored under the Idempotency-Key, so a retry with the same key is safe
// and acts once the switch is off).
//
// What the saga sees: stripe-go (v85) turns the body into a *stripe.Error
// with HTTPStatusCode 503 and Type api_error, and does not retry it by
// itself, whatever MaxNetworkRetries says: a typed API error is retried only
// when it is a 429 lock_timeout (stripe.Error.canRetry), which comes before
// the "5xx and Stripe-Should-Retry: true are retriable" rule in
// BackendImplementation.shouldRetry. (A 503 whose body is not a Stripe error
// object, as a proxy sends, is retried internally; that is why the body is
// one.) payments.classify then reports "provider busy", and the saga's
// activity retries with the same key. Stripe-Should-Retry: true is still
// sent, as Stripe does for an answer that is safe to retry.
func (s *Server) writeUnavailableFault(w http.ResponseWriter, r *http.Request, kind string) {
	s.log.Info("sandbox fault: unavailable", "kind", kind, "method", r.Method, "path", r.URL.Path)
	w.Header().Set("Stripe-Should-Retry", "true")
	writeJSON(w, http.StatusServiceUnavailable, errorBody(jsonError{Type: "api_error",
		Message: fmt.Sprintf("Sandbox fault: the %s API is unavailable (%s_unavailable); nothing was done, retry later with the same Idempotency-Key.", kind, kind)}))
}

// serveFaults answers GET and POST on FaultsPath with the switches in force
// (after the POST's change). Only a loopback peer, or one presenting the
// sandbox's API key, may reach it; a POST must be a JSON object.
func (s *Server) serveFaults(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !loopbackPeer(r) && s.authenticate(r, nil) != nil {
		writeProblem(w, http.StatusForbidden, "forbidden", "Forbidden",
			"the fault switches answer loopback callers, or callers presenting the sandbox's API key")
		return
	}
	if r.Method == http.MethodPost {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			writeProblem(w, http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported Media Type",
				`send Content-Type: application/json, for example {"capture_unavailable": true}`)
			return
		}
		var p faultsPatch
		dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			writeProblem(w, http.StatusBadRequest, "invalid-faults", "Invalid fault switches",
				"send a JSON object of authorise_unavailable, capture_unavailable, refund_unavailable, void_unavailable (true or false), "+
					"timeout_after_success_rate, duplicate_webhook_rate, out_of_order_webhook_rate (0..1) and webhook_delay_ms (0..60000): "+err.Error())
			return
		}
		if dec.More() {
			writeProblem(w, http.StatusBadRequest, "invalid-faults", "Invalid fault switches", "send one JSON object")
			return
		}
		if bad := p.invalid(); bad != "" {
			writeProblem(w, http.StatusBadRequest, "invalid-faults", "Invalid fault switches", bad)
			return
		}
		f := s.switches.update(p)
		s.log.Info("sandbox: fault switches set", "authorise_unavailable", f.AuthoriseUnavailable,
			"capture_unavailable", f.CaptureUnavailable, "refund_unavailable", f.RefundUnavailable,
			"void_unavailable", f.VoidUnavailable, "timeout_after_success_rate", f.TimeoutAfterSuccessRate,
			"duplicate_webhook_rate", f.DuplicateWebhookRate, "out_of_order_webhook_rate", f.OutOfOrderWebhookRate,
			"webhook_delay_ms", f.WebhookDelayMS)
	}
	writeJSON(w, http.StatusOK, mustJSON(s.switches.load()))
}

// loopbackPeer reports whether the request came from this machine.
func loopbackPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// writeProblem answers an RFC 9457 problem like the fan API's.
func writeProblem(w http.ResponseWriter, status int, name, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write(mustJSON(map[string]any{"type": "/problems/" + name, "title": title, "status": status, "detail": detail}))
}

// SetFaults sets every runtime fault switch of the sandbox at baseURL (for
// example "http://127.0.0.1:12111") to f, switching off those f leaves
// false, and returns the switches now in force. (POST FaultsPath directly
// with only some fields to change just those.)
func SetFaults(ctx context.Context, baseURL string, f Faults) (Faults, error) {
	body, err := json.Marshal(f)
	if err != nil {
		return Faults{}, err
	}
	return faultsCall(ctx, http.MethodPost, baseURL, bytes.NewReader(body))
}

// GetFaults returns the runtime fault switches in force at the sandbox at
// baseURL.
func GetFaults(ctx context.Context, baseURL string) (Faults, error) {
	return faultsCall(ctx, http.MethodGet, baseURL, nil)
}

func faultsCall(ctx context.Context, method, baseURL string, body io.Reader) (Faults, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(baseURL, "/")+FaultsPath, body)
	if err != nil {
		return Faults{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Faults{}, fmt.Errorf("psp: fault switches: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Faults{}, fmt.Errorf("psp: fault switches: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var p struct {
			Detail string `json:"detail"`
		}
		if json.Unmarshal(raw, &p) != nil || p.Detail == "" {
			p.Detail = strings.TrimSpace(string(raw))
		}
		return Faults{}, fmt.Errorf("psp: fault switches: %s: %s", resp.Status, p.Detail)
	}
	var f Faults
	if err := json.Unmarshal(raw, &f); err != nil {
		return Faults{}, fmt.Errorf("psp: fault switches: %w", err)
	}
	return f, nil
}
