package system_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/dev/testenv/temporaltest"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/invoices"
	"github.com/encore-tickets/encore/rehearsal"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/temporalclient"
	"github.com/encore-tickets/encore/tickets"
	encworker "github.com/encore-tickets/encore/worker"
	"github.com/encore-tickets/encore/workflows"

	"github.com/encore-tickets/encore/vocab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The tests of this package run in parallel (t.Parallel): each newE2E is a
// stack of the test's own, sharing nothing another test can see. Per test:
// a database (testenv.FreshDB: fraud rules, reconciliation and the audit
// read whole tables, and the fixtures reuse venue IDs), a Redis key prefix,
// a Temporal namespace (workflows.TaskQueue is one name for every process,
// so two tests in one namespace would run each other's workflows on workers
// wired to the other test's sandbox and database), a payment sandbox, ports
// (all :0), a mailbox folder and an event ID.

// e2e is the whole buy plane over real parts: the fan API over HTTP, a real
// PostgreSQL and Redis, the embedded Temporal server with the project's own
// worker, and the payment sandbox driven through stripe-go.
type e2e struct {
	t        testing.TB
	api      *httptest.Server
	psp      *psp.Server
	pspURL   string
	temporal client.Client
	worker   sdkworker.Worker
	deps     encworker.Dependencies
	store    *store.Store
	holds    *holds.Service
	// changes wakes the API's reads waiting on a booking (listening until
	// the test ends).
	changes *store.BookingChanges
	// bookingMetrics holds the booking use case's metrics.
	bookingMetrics *prometheus.Registry
	issuer         *session.Issuer
	eventID        string
	mailbox        string
	cfg            config.Config
	mu             sync.Mutex
	// dbURL is the test's own database; redis and prefix its Redis keys.
	dbURL  string
	redis  *redis.Client
	prefix string
	// pay drives the test's payment sandbox: cards, provider events,
	// refunds.
	pay provider
}

// provider is the test's payment sandbox as a fan's card and the provider's
// webhooks reach the stack.
type provider struct{ e *e2e }

type e2eOption func(*psp.Config)

// temporalTarget is the Temporal server and namespace a stack runs its
// workflows in, and the API key it admits the stack by.
type temporalTarget struct{ addr, namespace, apiKey string }

// packageTemporal is the package's Temporal server with a namespace of the
// test's own.
func packageTemporal(t testing.TB) temporalTarget {
	srv := temporaltest.Temporal(t)
	return temporalTarget{addr: srv.FrontendAddress(), namespace: temporalNamespace(t), apiKey: srv.APIKey()}
}

func newE2E(t testing.TB, opts ...e2eOption) *e2e {
	t.Helper()
	return newE2EOn(t, packageTemporal(t), opts...)
}

// newE2EOn is newE2E with its workflows on target: a test that needs a
// server configured otherwise (the Web UI's sign-in) starts its own.
func newE2EOn(t testing.TB, target temporalTarget, opts ...e2eOption) *e2e {
	t.Helper()
	ctx := context.Background()
	pool, dbURL := testenv.FreshDB(t)
	rdb, prefix := testenv.Redis(t)
	prefix += testenv.RandomSuffix() + ":"
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError}))

	e := &e2e{t: t, mailbox: t.TempDir(), dbURL: dbURL, redis: rdb, prefix: prefix}
	e.pay = provider{e}
	e.cfg = config.Default()
	e.cfg.DataDir = e.mailbox
	e.cfg.TemporalNamespace = target.namespace
	// The Temporal server admits Encore's processes by its key.
	e.cfg.TemporalAPIKey = config.Secret(target.apiKey)

	// The API listens first: the sandbox delivers webhooks to it.
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// The development issuer at the API's own origin, as encore dev serves
	// it: a browser can sign in through its /dev/oidc pages.
	e.issuer = session.NewIssuerAt("e2e-secret", "http://"+apiLn.Addr().String()+session.DevIssuerPath, session.DefaultAudience)
	pcfg := psp.Config{APIKey: system.SandboxKey, WebhookSecret: e.cfg.StripeWebhookSecret.Reveal(),
		WebhookURL: "http://" + apiLn.Addr().String() + "/v1/webhooks/stripe", Logger: log,
		// Stripe retries for days; the test gives the sandbox minutes, so a
		// loaded machine delays a delivery rather than losing it.
		Delivery:      psp.DeliveryConfig{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, MaxAttempts: 150},
		EnabledEvents: vocab.ProviderEventTypes()}
	for _, o := range opts {
		o(&pcfg)
	}
	e.psp, err = psp.New(pcfg)
	require.NoError(t, err)
	pspLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pctx, stopPSP := context.WithCancel(ctx)
	go func() { _ = e.psp.Serve(pctx, pspLn) }()
	t.Cleanup(stopPSP)
	e.pspURL = "http://" + pspLn.Addr().String()
	e.cfg.StripeAPIURL = e.pspURL
	// The stack's public origin is where its API listens. The web app of a
	// browser test is served from another loopback port, as in encore dev,
	// so the stack runs as development: production accepts a checkout's
	// return page only on the public origin.
	e.cfg.PublicURL = "http://" + apiLn.Addr().String()
	e.cfg.Env = config.Development

	e.holds = &holds.Service{Store: store.New(pool, store.Options{}), Hints: seathint.New(rdb, prefix), Log: log}
	e.holds.Register(prometheus.NewRegistry())
	e.store = e.holds.Store
	acts, err := system.BookingActivities(e.cfg, e.store, log)
	require.NoError(t, err)
	e.deps = encworker.Dependencies{Holds: &activities.Holds{Service: e.holds}, Booking: acts}

	e.temporal = temporalClient(t, e.cfg, target.addr, log)
	requireSearchAttributesAccepted(t, e.temporal)
	e.startWorker()
	t.Cleanup(func() { e.stopWorker() })

	keyring, err := system.TicketKeyring(e.cfg)
	require.NoError(t, err)
	e.changes = store.NewBookingChanges(pool, log)
	cctx, stopChanges := context.WithCancel(context.Background())
	changesDone := make(chan struct{})
	go func() { e.changes.Run(cctx); close(changesDone) }()
	t.Cleanup(func() { stopChanges(); <-changesDone })
	bookings := &booking.Service{Holds: e.holds, Store: e.store, Temporal: e.temporal, Log: log,
		WebhookSecret: e.cfg.StripeWebhookSecret.Reveal(), LateEventGrace: 2 * time.Second, Changes: e.changes}
	e.bookingMetrics = prometheus.NewRegistry()
	bookings.Register(e.bookingMetrics)
	a := &api.Server{Holds: e.holds, Bookings: bookings, Sessions: e.issuer, Log: log,
		Tickets: &tickets.Wallet{Store: e.store, Keyring: keyring}, Resale: &tickets.Resale{Store: e.store},
		Invoices: &invoices.Service{Store: e.store}}
	e.api = httptest.NewUnstartedServer(a.Handler())
	e.api.Listener = apiLn
	e.api.Start()
	t.Cleanup(e.api.Close)

	e.eventID = "evt_" + testenv.RandomSuffix()
	require.NoError(t, demo.Create(ctx, pool, demo.Event{ID: e.eventID, Title: "E2E", VenueID: "ven_e2e", VenueName: "E2E",
		City: "C", Currency: "EUR", StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour),
		Sections: []demo.Section{{ID: "sec_" + e.eventID[4:], Name: "A", Rows: 30, PerRow: 20, BasePrice: 4000}}}))
	return e
}

// temporalNamespace is a namespace of the calling test's own on the
// package's Temporal server, with the saga's search attributes.
func temporalNamespace(t testing.TB) string { return temporaltest.Namespace(t) }

// temporalClient dials the package's embedded Temporal server in
// cfg.TemporalNamespace with the options every Encore command dials with (so
// histories are encrypted with the development codec key), closed when the
// test ends.
func temporalClient(t testing.TB, cfg config.Config, addr string, log *slog.Logger) client.Client {
	t.Helper()
	opts, err := temporalclient.Options(cfg, addr, log)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// requireSearchAttributesAccepted runs, in c's namespace, a workflow that
// upserts every one of the saga's search attributes, until it succeeds.
// Each Temporal service caches namespaces on its own: until the history
// service has the namespace's attributes too (it may have cached it before
// they were added), a workflow task that upserts them fails, and with it
// the checkout whose Update it carried.
func requireSearchAttributesAccepted(t testing.TB, c client.Client) {
	t.Helper()
	var updates []temporal.SearchAttributeUpdate
	for _, name := range slices.Sorted(maps.Keys(workflows.SearchAttributes)) {
		switch typ := workflows.SearchAttributes[name]; typ {
		case enumspb.INDEXED_VALUE_TYPE_KEYWORD:
			updates = append(updates, temporal.NewSearchAttributeKeyKeyword(name).ValueSet("probe"))
		case enumspb.INDEXED_VALUE_TYPE_INT:
			updates = append(updates, temporal.NewSearchAttributeKeyInt64(name).ValueSet(1))
		case enumspb.INDEXED_VALUE_TYPE_BOOL:
			updates = append(updates, temporal.NewSearchAttributeKeyBool(name).ValueSet(true))
		default:
			t.Fatalf("the probe cannot set %s of type %s: teach it", name, typ)
		}
	}
	const queue = "search-attribute-probe"
	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		return workflow.UpsertTypedSearchAttributes(ctx, updates...)
	}, workflow.RegisterOptions{Name: "SearchAttributeProbe"})
	require.NoError(t, w.Start())
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A failed workflow task is retried by the server: the run ends once
	// the history service knows the attributes.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "search-attribute-probe", TaskQueue: queue},
		"SearchAttributeProbe")
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil), "the namespace's search attributes are accepted")
}

func (e *e2e) startWorker() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.worker = encworker.New(e.temporal, e.deps)
	require.NoError(e.t, e.worker.Start())
}

func (e *e2e) stopWorker() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.worker != nil {
		e.worker.Stop()
		e.worker = nil
	}
}

func (e *e2e) seat(row, n int) string { return demo.SeatID("sec_"+e.eventID[4:], row, n) }

// fan is a distinct account on its own device (one device shared by many
// accounts is exactly what the fraud rules step up).
func (e *e2e) fan(name string) string {
	return e.issuer.Issue(name+"_"+e.eventID, "dev-"+name+"-"+e.eventID, time.Now())
}

// fanWithEmail is fan whose token carries an email claim.
func (e *e2e) fanWithEmail(name, email string) string {
	tok, err := e.issuer.Mint(session.Identity{UserID: name + "_" + e.eventID, DeviceID: "dev-" + name + "-" + e.eventID,
		Email: email}, time.Now())
	require.NoError(e.t, err)
	return tok
}

func (e *e2e) call(method, path, token string, body any, headers ...string) (int, map[string]any) {
	e.t.Helper()
	status, _, out := e.callAt(e.api.URL, method, path, token, body, headers...)
	return status, out
}

// callAt is call against the API at base, with the answer's headers.
func (e *e2e) callAt(base, method, path, token string, body any, headers ...string) (int, http.Header, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(e.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header, out
}

// serveHandler serves h on a loopback test server until the test ends and
// returns its URL.
func (e *e2e) serveHandler(h http.Handler) string {
	srv := httptest.NewServer(h)
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// serve starts another fan API over the same store, sessions and payment
// sandbox as e.api, with its own hold and booking services (another process
// of the same deployment, differently configured), and returns its URL.
func (e *e2e) serve(h *holds.Service, b *booking.Service) string {
	e.t.Helper()
	keyring, err := system.TicketKeyring(e.cfg)
	require.NoError(e.t, err)
	a := &api.Server{Holds: h, Bookings: b, Sessions: e.issuer, Log: slog.New(slog.NewTextHandler(testLog{e.t}, &slog.HandlerOptions{Level: slog.LevelError})),
		Tickets: &tickets.Wallet{Store: e.store, Keyring: keyring}}
	srv := httptest.NewServer(a.Handler())
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// hold holds seats of the test's event for token and returns the hold's ID.
func (e *e2e) hold(token string, seats []string) string {
	e.t.Helper()
	status, h := e.call(http.MethodPost, "/v1/holds", token, map[string]any{"event_id": e.eventID, "seat_ids": seats})
	require.Equal(e.t, http.StatusCreated, status, "%v", h)
	return h["hold_id"].(string)
}

// fanHolding is a new fan, named name, holding seats of the test's event:
// it returns the fan's token and the hold's ID.
func (e *e2e) fanHolding(name string, seats ...string) (string, string) {
	e.t.Helper()
	fan := e.fan(name)
	return fan, e.hold(fan, seats)
}

// holdAndCheckout places a hold on seats and checks out with pm.
func (e *e2e) holdAndCheckout(token string, seats []string, pm string) (string, int, map[string]any) {
	e.t.Helper()
	id := e.hold(token, seats)
	status, co := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", token, map[string]any{"payment_method": pm})
	return id, status, co
}

// checkedOut places a hold on seats and checks out with pm, which must be
// answered 200: authorised, or waiting for the fan (3-D Secure, the hosted
// page).
func (e *e2e) checkedOut(fan, pm string, seats ...string) (string, map[string]any) {
	e.t.Helper()
	id, status, co := e.holdAndCheckout(fan, seats, pm)
	require.Equal(e.t, http.StatusOK, status, "%v", co)
	return id, co
}

// buy books seats for fan with a card of its own and waits until the
// booking is PAID.
func (e *e2e) buy(fan string, seats ...string) (string, map[string]any) {
	e.t.Helper()
	id, co := e.checkedOut(fan, e.pay.card(), seats...)
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	return id, co
}

// cardSeq numbers the cards the tests create; cardBase keeps two test
// processes (and two runs on one sandbox) from minting the same numbers.
var (
	cardSeq  atomic.Int64
	cardBase = time.Now().UnixNano() % 1_000_000_000
)

// card gives a fan a card of their own: a payment method the sandbox creates
// for a fresh Visa number, as a fan's browser would, so the fraud rule that
// counts accounts per card fingerprint sees one account per card, as with
// real fans. Shared test tokens (pm_card_visa) are one card for everyone.
func (p provider) card() string {
	p.e.t.Helper()
	return p.cardNumber(freshVisaNumber())
}

// freshVisaNumber is a Visa number no other card of this process (or, by
// cardBase, of another run) has.
func freshVisaNumber() string { return rehearsal.VisaNumber(cardBase*1000 + cardSeq.Add(1)) }

// cardNumber creates a payment method in the sandbox for a card number.
func (p provider) cardNumber(num string) string { return p.cardToken(num, 0) }

// cardToken creates the copy-th payment method for a card number: copies
// are distinct tokens of one card, with one fingerprint.
func (p provider) cardToken(num string, copy int) string {
	e := p.e
	e.t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	for try := 0; ; try++ {
		id, err := sandboxCard(c, e.pspURL, num, copy)
		if err == nil {
			return id
		}
		if try == 20 {
			require.NoError(e.t, err)
		}
		time.Sleep(100 * time.Millisecond) // the sandbox's injected faults
	}
}

// sandboxCard creates a card payment method for a number in the payment
// sandbox at pspURL, as a fan's browser would. A retry after a lost answer
// gets the same card (the number and copy are the Idempotency-Key).
func sandboxCard(c *http.Client, pspURL, number string, copy int) (string, error) {
	return psp.NewCard(context.Background(), c, pspURL, system.SandboxKey, number, fmt.Sprintf("card-%s-%d", number, copy))
}

// waitStatus polls GET /v1/bookings/{id} until it reports want.
func (e *e2e) waitStatus(token, id string, want vocab.BookingStatus, within time.Duration) map[string]any {
	e.t.Helper()
	var last map[string]any
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		_, last = e.call(http.MethodGet, "/v1/bookings/"+id, token, nil)
		if last["status"] == string(want) {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("booking %s: want %s, last %v", id, want, last)
	return nil
}

// workflowTasks reads the booking's workflow history: the workflow tasks
// completed so far, and whether a timer was cancelled.
func (e *e2e) workflowTasks(id string) (tasks int, timerCancelled bool) {
	e.t.Helper()
	iter := e.temporal.GetWorkflowHistory(context.Background(), workflows.BookingWorkflowID(id), "", false,
		enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(e.t, err)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			tasks++
		case enumspb.EVENT_TYPE_TIMER_CANCELED:
			timerCancelled = true
		}
	}
	return tasks, timerCancelled
}

// waitNotified waits until the booking's fan is notified: the saga's last
// step, after the capture, the tickets and the vouchers.
func (e *e2e) waitNotified(id string) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		// The confirmation's record: its row in the mail queue.
		queued, err := e.store.Mail().Queued(context.Background(), store.BookingMailKey(uuid.MustParse(id), activities.NotifyConfirmation))
		require.NoError(e.t, err)
		return queued
	}, 30*time.Second, 50*time.Millisecond, "booking %s: the saga's last step", id)
}

func (e *e2e) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.store.Pool().QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// testLog sends the stack's error logs to the test's log.
type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}

// reconcile runs the scheduled reconciliation's activity on the stack's
// provider and database, as the Reconcile workflow does.
func (e *e2e) reconcile(ctx context.Context, lookback time.Duration) (activities.ReconcileReport, error) {
	return (*activities.Reconciliation)(e.deps.Booking).ReconcilePayments(ctx, lookback)
}
