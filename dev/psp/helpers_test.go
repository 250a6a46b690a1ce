package psp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
)

// testLogger is quiet unless PSP_TEST_LOG=1.
func testLogger() *slog.Logger {
	if os.Getenv("PSP_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type env struct {
	t   *testing.T
	srv *Server
	ts  *httptest.Server
	sc  *stripe.Client
	key string
}

// newEnv starts a sandbox on a loopback httptest server and a stripe-go
// client pointed at it, with the given number of network retries.
func newEnv(t *testing.T, cfg Config, retries int64) *env {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	if cfg.Delivery.InitialBackoff == 0 {
		cfg.Delivery.InitialBackoff = 20 * time.Millisecond
		cfg.Delivery.MaxBackoff = 100 * time.Millisecond
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	e := &env{t: t, srv: srv, ts: ts, key: srv.cfg.APIKey}
	e.sc = newClient(ts.URL, e.key, retries)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		require.NoError(t, srv.Close())
	})
	return e
}

// newDefaultEnv is newEnv with the default configuration and no network
// retries, the setup most tests share, with a context for the test's calls.
func newDefaultEnv(t *testing.T) (*env, context.Context) {
	t.Helper()
	return newEnv(t, Config{}, 0), ctxT(t)
}

// awaitStatus waits until the intent has the status. A request whose client
// gave up still runs to the end at the provider, possibly just after the
// client's deadline, so a test that lost an answer waits for the outcome.
func (e *env) awaitStatus(t *testing.T, id string, want stripe.PaymentIntentStatus) {
	t.Helper()
	eventually(t, func() bool {
		pi, err := e.sc.V1PaymentIntents.Retrieve(context.Background(), id, nil)
		return err == nil && pi.Status == want
	}, "intent "+id+" never reached "+string(want))
}

// idemInFlight reports whether a request holding the idempotency key is still
// executing.
func (e *env) idemInFlight(key string) bool {
	e.srv.mu.Lock()
	defer e.srv.mu.Unlock()
	rec := e.srv.idem[e.srv.scope+":"+key]
	return rec != nil && rec.inflight
}

// heldTypes returns, in queue order, the event types of the pending
// deliveries about the intent that the out-of-order fault holds back.
func (e *env) heldTypes(intentID string) []string {
	e.srv.mu.Lock()
	defer e.srv.mu.Unlock()
	var out []string
	for _, d := range e.srv.queues[intentID] {
		if d.Held {
			out = append(out, d.EventType)
		}
	}
	return out
}

func newClient(url, key string, retries int64) *stripe.Client {
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(url),
		MaxNetworkRetries: stripe.Int64(retries),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		HTTPClient:        &http.Client{Timeout: 20 * time.Second},
	})
	return stripe.NewClient(key, stripe.WithBackends(backends))
}

// ctxT bounds a test's calls. Generously: parallel subtests start after
// their parent returns, which on a loaded machine may be many seconds after
// the parent made it.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// do sends req and returns the answer, its body read and closed.
func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

// postForm posts a browser-style form, asking for JSON.
func postForm(t *testing.T, target string, form url.Values) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, body := do(t, req)
	return resp.StatusCode, body
}

// getBody gets a page.
func getBody(t *testing.T, target string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	require.NoError(t, err)
	resp, body := do(t, req)
	return resp.StatusCode, string(body)
}

func manualIntent(amount int64, meta map[string]string) *stripe.PaymentIntentCreateParams {
	return &stripe.PaymentIntentCreateParams{
		Amount:        stripe.Int64(amount),
		Currency:      stripe.String("eur"),
		CaptureMethod: stripe.String("manual"),
		Metadata:      meta,
	}
}

func faultHeader(v string) http.Header { return http.Header{FaultHeader: {v}} }

// received is one webhook the test receiver accepted.
type received struct {
	Event stripe.Event
	Raw   []byte
	At    time.Time
}

// receiver verifies webhooks exactly as an application would, with
// stripe-go's webhook.ConstructEvent and default options.
type receiver struct {
	t        *testing.T
	secret   string
	ts       *httptest.Server
	mu       sync.Mutex
	fail     int  // answer 500 to the first fail attempts of each event ID
	down     bool // answer 503 to everything
	attempts map[string]int
	got      []received
	bad      []error
}

func newReceiver(t *testing.T, secret string) *receiver {
	rc := &receiver{t: t, secret: secret, attempts: map[string]int{}}
	rc.ts = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.ts.Close)
	return rc
}

func (rc *receiver) URL() string { return rc.ts.URL + "/v1/webhooks/stripe" }

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	ev, err := webhook.ConstructEvent(body, r.Header.Get("Stripe-Signature"), rc.secret)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err != nil {
		rc.bad = append(rc.bad, err)
		http.Error(w, err.Error(), 400)
		return
	}
	rc.attempts[ev.ID]++
	if rc.down || rc.attempts[ev.ID] <= rc.fail {
		http.Error(w, "try later", 500)
		return
	}
	rc.got = append(rc.got, received{Event: ev, Raw: body, At: time.Now()})
	w.WriteHeader(200)
}

func (rc *receiver) setDown(v bool) {
	rc.mu.Lock()
	rc.down = v
	rc.mu.Unlock()
}

func (rc *receiver) events() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// forIntent returns the accepted events about one PaymentIntent, in
// arrival order, skipping payment_intent.created.
func (rc *receiver) forIntent(id string) []received {
	var out []received
	for _, r := range rc.events() {
		if r.Event.Type == stripe.EventTypePaymentIntentCreated {
			continue
		}
		obj := r.Event.Data.Object
		if obj["id"] == id || obj["payment_intent"] == id {
			out = append(out, r)
		}
	}
	return out
}

func types(rs []received) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Event.Type))
	}
	return out
}

func (rc *receiver) requireClean() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Empty(rc.t, rc.bad, "webhooks that failed verification")
}

func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 10*time.Millisecond, msg)
}

// confirmedIntent is manualIntent confirmed on creation with the payment
// method pm, as a booking's authorise step sends it.
func confirmedIntent(amount int64, meta map[string]string, pm string) *stripe.PaymentIntentCreateParams {
	p := manualIntent(amount, meta)
	p.PaymentMethod = stripe.String(pm)
	p.Confirm = stripe.Bool(true)
	return p
}

// create creates an intent, which must succeed.
func (e *env) create(t *testing.T, ctx context.Context, p *stripe.PaymentIntentCreateParams) *stripe.PaymentIntent {
	t.Helper()
	pi, err := e.sc.V1PaymentIntents.Create(ctx, p)
	require.NoError(t, err)
	return pi
}

// requireStripeError requires err to be the sandbox's error answer with the
// HTTP status, and returns it for the test to look closer.
func requireStripeError(t *testing.T, err error, status int) *stripe.Error {
	t.Helper()
	var se *stripe.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, status, se.HTTPStatusCode)
	return se
}

// withKey sets the Idempotency-Key on a request's params.
func withKey[P interface{ SetIdempotencyKey(string) }](p P, key string) P {
	p.SetIdempotencyKey(key)
	return p
}

// requireStatus retrieves the intent and requires it to have the status.
func (e *env) requireStatus(t *testing.T, ctx context.Context, id string, want stripe.PaymentIntentStatus) *stripe.PaymentIntent {
	t.Helper()
	pi, err := e.sc.V1PaymentIntents.Retrieve(ctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, want, pi.Status)
	return pi
}
