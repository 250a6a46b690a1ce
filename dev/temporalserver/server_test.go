package temporalserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	serverlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

const envDatabaseURL = "ENCORE_TEST_DATABASE_URL"

func testDatabaseURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(envDatabaseURL)
	if u == "" {
		t.Skipf("%s is not set: skipping test that needs PostgreSQL (set it to an admin URL, e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)", envDatabaseURL)
	}
	return u
}

var (
	saEventID = temporal.NewSearchAttributeKeyKeyword("EncoreEventId")
	saStatus  = temporal.NewSearchAttributeKeyKeyword("EncoreStatus")
)

var testSearchAttributes = map[string]enums.IndexedValueType{
	"EncoreEventId": enums.INDEXED_VALUE_TYPE_KEYWORD,
	"EncoreStatus":  enums.INDEXED_VALUE_TYPE_KEYWORD,
}

// greet is a trivial workflow that also upserts a search attribute.
func greet(ctx workflow.Context, name string) (string, error) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, saStatus.ValueSet("GREETED")); err != nil {
		return "", err
	}
	return "hello " + name, nil
}

// checkout waits for one "pay" update, like the booking saga's checkout.
func checkout(ctx workflow.Context) (string, error) {
	var paid string
	if err := workflow.SetUpdateHandler(ctx, "pay", func(ctx workflow.Context, method string) (string, error) {
		paid = method
		return "secret_" + method, nil
	}); err != nil {
		return "", err
	}
	if err := workflow.Await(ctx, func() bool { return paid != "" }); err != nil {
		return "", err
	}
	return "paid with " + paid, nil
}

// startWorker starts a worker and returns its (idempotent) stop function,
// also registered as a cleanup.
func startWorker(t *testing.T, c client.Client, taskQueue string) func() {
	t.Helper()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: "greet"})
	w.RegisterWorkflowWithOptions(checkout, workflow.RegisterOptions{Name: "checkout"})
	require.NoError(t, w.Start())
	stop := sync.OnceFunc(w.Stop)
	t.Cleanup(stop)
	return stop
}

// workingClient is a client of s with a worker (startWorker) on taskQueue;
// the client closes after the worker stops and before the server stops.
func workingClient(ctx context.Context, t *testing.T, s *Server, taskQueue string) client.Client {
	t.Helper()
	c, err := s.NewClient(ctx, client.Options{})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	startWorker(t, c, taskQueue)
	return c
}

func TestServerEndToEndAndRestart(t *testing.T) {
	t.Parallel()
	dbURL := testDatabaseURL(t)
	suffix := randomSuffix(t)
	cfg := freshConfig(dbURL, "temporal_e2e_"+suffix)
	cfg.UIAddress = "127.0.0.1:0"
	cfg.CodecEndpoint = "http://127.0.0.1:9090/codec"
	cfg.SearchAttributes = testSearchAttributes
	cfg.Logger = testLogger(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, dropDatabases(ctx, dbURL, cfg.DatabaseName, cfg.VisibilityDatabaseName))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// First start: creates the databases and sets the schema up.
	began := time.Now()
	s, err := Start(ctx, cfg)
	require.NoError(t, err)
	t.Logf("cold start (create databases, schema set-up, namespace, search attributes, UI): %s", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { _ = s.Stop() })
	require.Equal(t, "default", s.Namespace())
	require.NotEmpty(t, s.UIURL())

	// The UI answers with its HTML page.
	requireUIServes(t, s.UIURL())
	requireUICodec(t, s.UIURL(), cfg.CodecEndpoint)

	// Search attributes are registered.
	c, err := s.NewClient(ctx, client.Options{})
	require.NoError(t, err)
	requireSearchAttributes(t, ctx, c)

	// A trivial workflow runs end to end, started eagerly, with a search attribute.
	taskQueue := "tq-" + suffix
	stopWorker := startWorker(t, c, taskQueue)
	requireGreeting(t, ctx, c, client.StartWorkflowOptions{
		ID:                    "greet-" + suffix,
		TaskQueue:             taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(saEventID.ValueSet("evt-1")),
	}, "fans")

	// Update-With-Start (checkout is a Workflow Update) works.
	startOp := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       "checkout-" + suffix,
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, "checkout")
	handle, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: startOp,
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateName:   "pay",
			Args:         []any{"pm_card_visa"},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	require.NoError(t, err)
	var secret string
	require.NoError(t, handle.Get(ctx, &secret))
	require.Equal(t, "secret_pm_card_visa", secret)
	checkoutRun, err := startOp.Get(ctx)
	require.NoError(t, err)
	var paid string
	require.NoError(t, checkoutRun.Get(ctx, &paid))
	require.Equal(t, "paid with pm_card_visa", paid)

	// Visibility finds the workflow by both search attributes (written asynchronously).
	requireVisible(t, ctx, c, `EncoreEventId = "evt-1" AND EncoreStatus = "GREETED"`, "greet-"+suffix)
	stopWorker()
	c.Close()

	// Stop releases the ports: both can be bound again right away.
	frontendAddr := s.FrontendAddress()
	uiAddr := strings.TrimPrefix(s.UIURL(), "http://")
	began = time.Now()
	require.NoError(t, s.Stop())
	t.Logf("stop: %s", time.Since(began).Round(time.Millisecond))
	require.NoError(t, s.Stop(), "a second Stop is harmless")
	for _, addr := range []string{frontendAddr, uiAddr} {
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err, "port %s still held after Stop", addr)
		require.NoError(t, l.Close())
	}

	// Second start on the same databases and the same ports: schema set-up is a
	// no-op and the earlier executions are still there. A search attribute
	// added to the Config since is registered through the operator API.
	cfg.FrontendAddress = frontendAddr
	cfg.UIAddress = uiAddr
	cfg.SearchAttributes = map[string]enums.IndexedValueType{"EncoreUserId": enums.INDEXED_VALUE_TYPE_KEYWORD}
	maps.Copy(cfg.SearchAttributes, testSearchAttributes)
	began = time.Now()
	s2, err := Start(ctx, cfg)
	require.NoError(t, err)
	t.Logf("warm start (existing databases): %s", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { _ = s2.Stop() })
	require.Equal(t, frontendAddr, s2.FrontendAddress())
	requireUIServes(t, s2.UIURL())

	c2, err := s2.NewClient(ctx, client.Options{})
	require.NoError(t, err)
	defer c2.Close()
	desc, err := c2.DescribeWorkflowExecution(ctx, "greet-"+suffix, "")
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
	var greeting string
	require.NoError(t, c2.GetWorkflow(ctx, "greet-"+suffix, "").Get(ctx, &greeting))
	require.Equal(t, "hello fans", greeting)
	requireSearchAttributes(t, ctx, c2)
	requireVisible(t, ctx, c2, `EncoreEventId = "evt-1"`, "greet-"+suffix)

	list, err := c2.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	require.Equal(t, enums.INDEXED_VALUE_TYPE_KEYWORD, list.GetCustomAttributes()["EncoreUserId"])

	// New work still runs after the restart, using the new search attribute at once.
	stopWorker = startWorker(t, c2, taskQueue)
	requireGreeting(t, ctx, c2, client.StartWorkflowOptions{
		ID:                    "greet-again-" + suffix,
		TaskQueue:             taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword("EncoreUserId").ValueSet("fan-1")),
	}, "again")
	stopWorker()
	require.NoError(t, s2.Stop())
}

func TestStartForTest(t *testing.T) {
	t.Parallel()
	dbURL := testDatabaseURL(t)
	began := time.Now()
	s := StartForTest(t, dbURL, func(c *Config) { c.SearchAttributes = testSearchAttributes })
	t.Logf("StartForTest: %s", time.Since(began).Round(time.Millisecond))
	require.Empty(t, s.UIURL())
	mainDB, visDB := s.DatabaseNames()
	require.True(t, strings.HasPrefix(mainDB, "temporal_test_"), mainDB)
	require.True(t, strings.HasPrefix(visDB, "temporal_test_"), visDB)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := workingClient(ctx, t, s, "tq")
	began = time.Now()
	requireGreeting(t, ctx, c, client.StartWorkflowOptions{
		TaskQueue:             "tq",
		TypedSearchAttributes: temporal.NewSearchAttributes(saEventID.ValueSet("evt-2")),
	}, "tests")
	t.Logf("first workflow: %s", time.Since(began).Round(time.Millisecond))
}

// requireGreeting runs the greet workflow for name, started eagerly, and
// requires its greeting.
func requireGreeting(t *testing.T, ctx context.Context, c client.Client, opts client.StartWorkflowOptions, name string) {
	t.Helper()
	opts.EnableEagerStart = true
	run, err := c.ExecuteWorkflow(ctx, opts, "greet", name)
	require.NoError(t, err)
	var greeting string
	require.NoError(t, run.Get(ctx, &greeting))
	require.Equal(t, "hello "+name, greeting)
}

func requireUIServes(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	require.Contains(t, strings.ToLower(string(body)), "<html")

	// The UI's API proxy answers no one who has not signed in (the
	// system package's browser test signs in and reads through it).
	resp2, err := http.Get(base + "/api/v1/namespaces/default")
	require.NoError(t, err)
	defer resp2.Body.Close()
	body, err = io.ReadAll(resp2.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp2.StatusCode, string(body))
	require.NotContains(t, string(body), `"namespaceInfo"`)
}

// requireUICodec: the UI tells its pages to decode payloads through the
// codec endpoint.
func requireUICodec(t *testing.T, base, endpoint string) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/settings")
	require.NoError(t, err)
	defer resp.Body.Close()
	var settings struct{ Codec struct{ Endpoint string } }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&settings))
	require.Equal(t, endpoint, settings.Codec.Endpoint)
}

func requireSearchAttributes(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	for name, typ := range testSearchAttributes {
		require.Equal(t, typ, list.GetCustomAttributes()[name], "search attribute %s", name)
	}
}

func requireVisible(t *testing.T, ctx context.Context, c client.Client, query, workflowID string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if !assert.NoError(ct, err) {
			return
		}
		var ids []string
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		assert.Contains(ct, ids, workflowID)
	}, 20*time.Second, 100*time.Millisecond)
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	_, err := Config{}.withDefaults()
	require.Error(t, err)

	c, err := Config{DatabaseURL: "postgres://u:p@127.0.0.1:54329/postgres?sslmode=disable"}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, "temporal", c.DatabaseName)
	require.Equal(t, "temporal_visibility", c.VisibilityDatabaseName)
	require.Equal(t, "127.0.0.1:7233", c.FrontendAddress)
	require.Equal(t, "127.0.0.1:8233", c.UIAddress)
	require.Equal(t, "default", c.Namespace)
	require.EqualValues(t, 4, c.NumHistoryShards)
	require.Equal(t, 72*time.Hour, c.Retention)
	require.NotNil(t, c.Logger)

	c, err = Config{DatabaseURL: "postgres://x@h/db", DisableUI: true}.withDefaults()
	require.NoError(t, err)
	require.Empty(t, c.UIAddress)

	for _, bad := range []string{"Temporal", "temporal-db", "x;drop", "1abc"} {
		_, err := Config{DatabaseURL: "postgres://x@h/db", DatabaseName: bad}.withDefaults()
		require.Error(t, err, bad)
	}

	tgt, err := parseDatabaseURL("postgres://u:p%40ss@127.0.0.1:54329/postgres?sslmode=disable")
	require.NoError(t, err)
	require.Equal(t, "u", tgt.user)
	require.Equal(t, "p@ss", tgt.password)
	require.Equal(t, "127.0.0.1:54329", tgt.hostPort)
	require.Equal(t, map[string]string{"sslmode": "disable"}, tgt.attrs)

	tgt, err = parseDatabaseURL("postgresql://u@db.example/postgres")
	require.NoError(t, err)
	require.Equal(t, "db.example:5432", tgt.hostPort)

	_, err = parseDatabaseURL("mysql://u@h/db")
	require.Error(t, err)
	_, err = parseDatabaseURL("postgres:///postgres?host=/tmp")
	require.Error(t, err)
}

func TestLoggerDropsBelowWarn(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	stopping := new(atomic.Bool)
	l := newServerLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), stopping)
	l.Debug("debug-line")
	l.Info("info-line")
	l.Warn("warn-line", tag.NewStringTag("k", "v"))
	l.Error("error-line", tag.Error(errors.New("boom")))
	out := buf.String()
	require.NotContains(t, out, "debug-line")
	require.NotContains(t, out, "info-line")
	require.Contains(t, out, "warn-line")
	require.Contains(t, out, "k=v")
	require.Contains(t, out, "error-line")
	require.Contains(t, out, "boom")

	// Tags of With come out with the record, each derived logger its own.
	buf.Reset()
	shard := serverlog.With(l, tag.NewStringTag("shard", "7"))
	a := serverlog.With(shard, tag.NewStringTag("a", "1"))
	b := serverlog.With(shard, tag.NewStringTag("b", "2"))
	serverlog.With(a, tag.NewStringTag("c", "3")).Info("info-with")
	a.Warn("from-a", tag.NewStringTag("k", "v"))
	b.Error("from-b")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, buf.String())
	require.Contains(t, lines[0], "from-a")
	require.Contains(t, lines[0], "shard=7 a=1 k=v")
	require.NotContains(t, lines[0], "b=2")
	require.Contains(t, lines[1], "from-b")
	require.Contains(t, lines[1], "shard=7 b=2")
	require.NotContains(t, lines[1], "a=1")

	buf.Reset()
	stopping.Store(true)
	l.Warn("late-warn")
	l.Error("late-error")
	require.NotContains(t, buf.String(), "late-warn")
	require.Contains(t, buf.String(), "late-error")
}

func TestStartRejectsBusyPorts(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	ctx := context.Background()
	// Checked before any database work, so no PostgreSQL is needed.
	base := Config{DatabaseURL: "postgres://postgres@127.0.0.1:1/postgres", Logger: slog.New(slog.DiscardHandler)}

	cfg := base
	cfg.FrontendAddress = busy.Addr().String()
	cfg.DisableUI = true
	_, err = Start(ctx, cfg)
	require.ErrorContains(t, err, "is not free")

	cfg = base
	cfg.FrontendAddress = "127.0.0.1:0"
	cfg.UIAddress = busy.Addr().String()
	_, err = Start(ctx, cfg)
	require.ErrorContains(t, err, "UI listen")
}
