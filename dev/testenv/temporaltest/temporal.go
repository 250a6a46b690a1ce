// Package temporaltest gives a test package a Temporal server: the test
// command's own (`encore testinfra` runs `encore temporal` from a binary
// built without the race detector, and names it in
// ENCORE_TEST_TEMPORAL_ADDRESS), in a namespace of the package's own; or,
// when a package's tests run without it, an embedded server over the test
// cluster's PostgreSQL. It is apart from testenv so that only the packages
// whose tests run workflows link the Temporal server (a test binary with it
// is some 290 MB, and links for seconds).
package temporaltest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/dev/temporalserver"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/temporalclient"
	"github.com/encore-tickets/encore/workflows"
)

// Server is the Temporal server a test package's tests share, and the
// namespace the package's workflows run in unless a test makes its own
// (Namespace).
type Server struct {
	addr      string
	namespace string
	apiKey    string
}

// FrontendAddress is the host:port of the server's frontend.
func (s *Server) FrontendAddress() string { return s.addr }

// Namespace is the package's namespace on the server.
func (s *Server) Namespace() string { return s.namespace }

// APIKey is the bearer the server admits Encore's processes by: it refuses
// every call without it (a signed-in support user's token aside). A
// process's configuration sends it as ENCORE_TEMPORAL_API_KEY.
func (s *Server) APIKey() string { return s.apiKey }

// NewClient dials the server. Empty HostPort and Namespace default to the
// server's and the package's; nil Credentials are the server's API key.
// The caller closes the client.
func (s *Server) NewClient(ctx context.Context, opts client.Options) (client.Client, error) {
	if opts.HostPort == "" {
		opts.HostPort = s.addr
	}
	if opts.Credentials == nil {
		opts.Credentials = client.NewAPIKeyStaticCredentials(s.apiKey)
		opts.ConnectionOptions.TLSDisabled = opts.ConnectionOptions.TLS == nil
	}
	if opts.Namespace == "" {
		opts.Namespace = s.namespace
	}
	return client.DialContext(ctx, opts)
}

var (
	temporalOnce sync.Once
	temporalSrv  *Server
	temporalErr  error
)

// Temporal returns this package's Temporal server, started or joined on
// first use: the test command's shared server with a namespace of this
// package's own (no two packages' workers poll one task queue), else an
// embedded one stopped when the package's tests end.
func Temporal(tb testing.TB) *Server {
	tb.Helper()
	temporalOnce.Do(func() {
		if addr := os.Getenv(testenv.EnvTemporalAddress); addr != "" {
			temporalSrv, temporalErr = shared(addr)
			return
		}
		temporalSrv, temporalErr = embedded(testenv.AdminURL(tb))
	})
	if temporalErr != nil {
		tb.Fatalf("temporaltest: Temporal: %v", temporalErr)
	}
	return temporalSrv
}

// shared joins the test command's server with a fresh namespace. The
// server may still be starting (testinfra does not wait for it before it
// runs go test): the namespace's registration retries until it answers.
func shared(addr string) (*Server, error) {
	srv := &Server{addr: addr, namespace: "pkg-" + testenv.PackageTag() + "-" + testenv.RandomSuffix(),
		apiKey: os.Getenv(testenv.EnvTemporalAPIKey)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := register(ctx, srv, srv.namespace); err != nil {
		return nil, fmt.Errorf("the test command's Temporal server at %s (its log: %s): %w", addr,
			os.Getenv(testenv.EnvTemporalLog), err)
	}
	return srv, nil
}

// embedded starts a server in this process over the test cluster, in
// databases of this package's own, dropped when the package's tests end.
func embedded(admin string) (*Server, error) {
	name := "temporal_" + testenv.PackageTag() + "_" + testenv.RandomSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := temporalserver.Start(ctx, temporalserver.Config{
		DatabaseURL:            admin,
		DatabaseName:           name,
		VisibilityDatabaseName: name + "_vis",
		FrontendAddress:        "127.0.0.1:0",
		DisableUI:              true,
		NumHistoryShards:       2,
		MaxConns:               6,
		VisibilityMaxConns:     3,
		Logger:                 slog.New(slog.NewTextHandler(io.Discard, nil)),
		SearchAttributes:       workflows.SearchAttributes,
	})
	testenv.AtExit(func() {
		if s != nil {
			_ = s.Stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = devstack.DropDatabase(ctx, admin, name)
		_ = devstack.DropDatabase(ctx, admin, name+"_vis")
	})
	if err != nil {
		return nil, err
	}
	return &Server{addr: s.FrontendAddress(), namespace: s.Namespace(), apiKey: s.APIKey()}, nil
}

// Namespace registers a namespace of the calling test's own on the
// package's server, with the saga's search attributes, and returns its name
// once the frontend resolves them.
func Namespace(tb testing.TB) string {
	tb.Helper()
	srv := Temporal(tb)
	spareOnce.Do(func() { go fillSpares(srv) })
	select {
	case ns, ok := <-spares:
		if ok {
			return ns
		}
	default:
	}
	ns := "test-" + testenv.RandomSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := register(ctx, srv, ns); err != nil {
		tb.Fatalf("temporaltest: namespace %s: %v", ns, err)
	}
	return ns
}

// spares are namespaces registered ahead of the tests that take them: most
// of a registration is waiting for the server's caches (refreshed every
// second), which a test would otherwise spend idle on each of its stacks.
// fillSpares keeps two ready until a registration fails (then closes it, and
// every test registers its own) or the process ends.
var (
	spares    = make(chan string, 2)
	spareOnce sync.Once
)

func fillSpares(srv *Server) {
	defer close(spares)
	for {
		ns := "test-" + testenv.RandomSuffix()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := register(ctx, srv, ns)
		cancel()
		if err != nil {
			return
		}
		spares <- ns
	}
}

// register creates namespace ns with the saga's search attributes and
// returns once a visibility query naming them is accepted (refused as
// invalid until the server's caches, refreshed every second, know them).
// Each step is retried until it succeeds or ctx ends.
func register(ctx context.Context, srv *Server, ns string) error {
	var c client.Client
	names := slices.Sorted(maps.Keys(workflows.SearchAttributes))
	clauses := make([]string, len(names))
	for i, n := range names {
		clauses[i] = "`" + n + "` IS NULL"
	}
	steps := []func() error{
		func() (err error) {
			c, err = srv.NewClient(ctx, client.Options{Namespace: ns, Logger: quiet{}})
			return err
		},
		func() error {
			_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: ns,
				WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
			if _, exists := errors.AsType[*serviceerror.NamespaceAlreadyExists](err); exists {
				return nil // an earlier try's, answered too late
			}
			return err
		},
		func() error { return temporalclient.EnsureNamespace(ctx, c, ns, workflows.SearchAttributes) },
		func() error {
			_, err := c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: ns,
				Query: strings.Join(clauses, " AND ")})
			return err
		},
	}
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for _, step := range steps {
		for delay := 20 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
			err := step()
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return err
			case <-time.After(delay):
			}
		}
	}
	return nil
}

// TemporalClient dials this package's Temporal server in the package's
// namespace with the options every Encore command dials with
// (temporalclient.Options over the default configuration), so what tests
// write to history is encrypted with the development codec key, as encore
// dev's is. log may be nil. The client is closed when the test ends.
func TemporalClient(tb testing.TB, log *slog.Logger) client.Client {
	tb.Helper()
	srv := Temporal(tb)
	cfg := config.Default()
	cfg.TemporalNamespace = srv.Namespace()
	cfg.TemporalAPIKey = config.Secret(srv.APIKey())
	opts, err := temporalclient.Options(cfg, srv.FrontendAddress(), log)
	if err != nil {
		tb.Fatalf("temporaltest: Temporal client options: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		tb.Fatalf("temporaltest: dial Temporal: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

// quiet drops the SDK's log lines while a namespace is being registered:
// refusals until the server is up are expected and retried.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
