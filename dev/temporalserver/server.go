package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"

	"github.com/encore-tickets/encore/dev/freeport"
	"github.com/encore-tickets/encore/temporalclient"
	"google.golang.org/protobuf/types/known/durationpb"
)

const clusterName = "active"

// DefaultStartTimeout bounds Start when its context has no deadline.
const DefaultStartTimeout = 2 * time.Minute

// Server is a running embedded Temporal server (frontend, history, matching
// and worker services in this process) and, unless disabled, the Web UI.
type Server struct {
	cfg          Config
	frontendAddr string
	httpAddr     string
	temporal     temporal.Server
	client       client.Client
	ui           *uiServer
	logger       *slog.Logger
	stopping     *atomic.Bool

	stopOnce sync.Once
	stopErr  error
}

// Start prepares the databases (create, set up and upgrade the schema), starts
// the server, registers the namespace and search attributes if missing and
// starts the Web UI. It returns once the namespace accepts requests. The
// context bounds the start-up; it is not used after Start returns.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	target, err := parseDatabaseURL(cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	frontendAddr, err := resolveAddr(cfg.FrontendAddress)
	if err != nil {
		return nil, err
	}
	host, portStr, _ := net.SplitHostPort(frontendAddr)
	frontendPort, _ := strconv.Atoi(portStr)
	// The services only this process calls (history, matching, worker and
	// the internal frontend the server's own system workers dial) listen
	// on loopback whatever the frontend's host: they authorise no one.
	internalHost := host
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		internalHost = "127.0.0.1"
	}
	ports, err := freePorts(internalHost, 5)
	if err != nil {
		return nil, err
	}

	// The server's services treat a port they cannot bind as fatal and exit
	// the process: find a busy port here and return an error instead.
	if err := checkFree(frontendAddr); err != nil {
		return nil, err
	}
	if cfg.MetricsAddress != "" {
		if err := checkFree(cfg.MetricsAddress); err != nil {
			return nil, err
		}
	}
	// The UI's listener is bound now and held, so a busy UI port fails early.
	var uiListener net.Listener
	if !cfg.DisableUI && cfg.UIAddress != "" {
		uiAddr, err := resolveAddr(cfg.UIAddress)
		if err != nil {
			return nil, err
		}
		if uiListener, err = net.Listen("tcp", uiAddr); err != nil {
			return nil, fmt.Errorf("temporalserver: UI listen on %s: %w", uiAddr, err)
		}
		defer func() {
			if uiListener != nil { // not handed to the UI server
				_ = uiListener.Close()
			}
		}()
	}

	stopping := new(atomic.Bool)
	serverLogger := newServerLogger(cfg.Logger, stopping)
	if err := prepareDatabases(ctx, cfg, target, serverLogger); err != nil {
		return nil, err
	}

	svcAddr := map[primitives.ServiceName]string{
		primitives.FrontendService:         frontendAddr,
		primitives.HistoryService:          net.JoinHostPort(internalHost, strconv.Itoa(ports[0])),
		primitives.MatchingService:         net.JoinHostPort(internalHost, strconv.Itoa(ports[1])),
		primitives.WorkerService:           net.JoinHostPort(internalHost, strconv.Itoa(ports[2])),
		primitives.InternalFrontendService: net.JoinHostPort(internalHost, strconv.Itoa(ports[4])),
	}
	svcPort := map[primitives.ServiceName]int{
		primitives.FrontendService:         frontendPort,
		primitives.HistoryService:          ports[0],
		primitives.MatchingService:         ports[1],
		primitives.WorkerService:           ports[2],
		primitives.InternalFrontendService: ports[4],
	}
	staticHosts := make(map[primitives.ServiceName]static.Hosts, len(svcAddr))
	services := make(map[string]config.Service, len(svcAddr))
	for name, addr := range svcAddr {
		staticHosts[name] = static.SingleLocalHost(addr)
		h := internalHost
		if name == primitives.FrontendService {
			h = host
		}
		services[string(name)] = config.Service{RPC: rpcConfig(h, svcPort[name])}
	}
	// The frontend's HTTP API (and Nexus HTTP endpoints) on a free port.
	frontendRPC := services[string(primitives.FrontendService)]
	frontendRPC.RPC.HTTPPort = ports[3]
	services[string(primitives.FrontendService)] = frontendRPC

	serverConfig := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: broadcastIP(host)},
		},
		Persistence: config.Persistence{
			DefaultStore:     "default",
			VisibilityStore:  "visibility",
			NumHistoryShards: cfg.NumHistoryShards,
			DataStores: map[string]config.DataStore{
				"default":    {SQL: target.sqlConfig(cfg.DatabaseName, cfg.MaxConns)},
				"visibility": {SQL: target.sqlConfig(cfg.VisibilityDatabaseName, cfg.VisibilityMaxConns)},
			},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendAddr},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            services,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{
			Archival: config.ArchivalNamespaceDefaults{
				History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
				Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
			},
		},
		// No PublicClient: with an internal frontend configured, the
		// server's own SDK clients (its system workers) dial that one.
	}
	if cfg.MetricsAddress != "" {
		serverConfig.Global.Metrics = &metrics.Config{
			Prometheus: &metrics.PrometheusConfig{ListenAddress: cfg.MetricsAddress, HandlerPath: "/metrics"},
		}
	}

	ts, err := temporal.NewServer(
		temporal.WithConfig(serverConfig),
		temporal.ForServices(append(slices.Clone(temporal.DefaultServices), string(primitives.InternalFrontendService))),
		temporal.WithStaticHosts(staticHosts),
		temporal.WithLogger(serverLogger),
		temporal.WithNamespaceLogger(serverLogger),
		temporal.WithDynamicConfigClient(dynamicConfig(cfg.DynamicConfig)),
		// Every call to the frontend is authorised (auth.go); the internal
		// frontend maps every caller to the system admin.
		temporal.WithAuthorizer(authorizer{}),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper {
			return newClaimMapper(cfg.APIKey, cfg.StaffTokens)
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("temporalserver: new server: %w", err)
	}
	if err := ts.Start(); err != nil {
		_ = ts.Stop()
		return nil, fmt.Errorf("temporalserver: start server: %w", err)
	}

	s := &Server{
		cfg:          cfg,
		frontendAddr: frontendAddr,
		httpAddr:     net.JoinHostPort(host, strconv.Itoa(ports[3])),
		temporal:     ts,
		logger:       cfg.Logger,
		stopping:     stopping,
	}
	if err := s.bootstrap(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if len(cfg.SearchAttributes) > 0 {
		// A cost cut, not a condition of serving: on failure the schema's
		// indexes stay as they are.
		if dropped, built, err := s.fitVisibilityIndexes(ctx); err != nil {
			s.logger.Warn("temporalserver: visibility indexes left as they were", "err", err)
		} else if len(dropped)+len(built) > 0 {
			s.logger.Info("temporalserver: visibility indexes fitted to the mapped search attributes",
				"dropped", len(dropped), "built", built)
		}
	}
	if uiListener != nil {
		if s.ui, err = startUI(uiListener, UIConfig{FrontendAddress: frontendAddr, Namespace: cfg.Namespace,
			CodecEndpoint: cfg.CodecEndpoint, CodecToken: cfg.CodecToken, SignIn: cfg.SignIn}); err != nil {
			_ = s.Stop()
			return nil, err
		}
		uiListener = nil // owned by the UI server now
	}
	return s, nil
}

func checkFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("temporalserver: address %s is not free: %w", addr, err)
	}
	return l.Close()
}

func rpcConfig(host string, port int) config.RPC {
	if host == "localhost" {
		return config.RPC{GRPCPort: port, BindOnLocalHost: true}
	}
	return config.RPC{GRPCPort: port, BindOnIP: host}
}

func broadcastIP(host string) string {
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		return host
	}
	return "127.0.0.1"
}

// freePorts returns n distinct free ports on host, outside the ephemeral
// range (see package freeport).
func freePorts(host string, n int) ([]int, error) {
	ports, err := freeport.Take(host, n)
	if err != nil {
		return nil, fmt.Errorf("temporalserver: find free ports on %s: %w", host, err)
	}
	return ports, nil
}

// dynamicConfig is the in-code dynamic config: tuned for one machine, then
// the caller's overrides. See the package documentation for the reasons.
func dynamicConfig(overrides map[string]any) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{
		// Workflow Update (checkout is an Update) and its async-accepted wait stage.
		dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key():              true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecutionAsyncAccepted.Key(): true,
		// The first workflow task comes back in the start response when the
		// worker is in the same process: no trip through matching.
		dynamicconfig.EnableEagerWorkflowStart.Key():     true,
		dynamicconfig.EnableActivityEagerExecution.Key(): true,
		// One task-queue partition: with one matching host, several partitions
		// only add forwarding and empty polls.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// No drain on shutdown: nothing load-balances in front of this server.
		dynamicconfig.FrontendShutdownDrainDuration.Key():           time.Duration(0),
		dynamicconfig.FrontendShutdownFailHealthCheckDuration.Key(): time.Duration(0),
		dynamicconfig.HistoryShutdownDrainDuration.Key():            time.Duration(0),
		dynamicconfig.MatchingShutdownDrainDuration.Key():           time.Duration(0),
		// Namespace changes (registration, search-attribute aliases) reach every
		// service's cache within a second rather than two.
		dynamicconfig.NamespaceCacheRefreshInterval.Key(): time.Second,
		// The worker service starts these system workers and never stops them
		// (v1.32.1): after Stop they would keep polling a dead frontend. On one
		// machine they are not needed: with the parent-close-policy worker off,
		// history applies parent close policies itself; the scanners only
		// garbage-collect leftovers (expired task rows, orphaned history
		// branches) and cost background CPU.
		dynamicconfig.EnableParentClosePolicyWorker.Key(): false,
		dynamicconfig.TaskQueueScannerEnabled.Key():       false,
		dynamicconfig.HistoryScannerEnabled.Key():         false,
		// Encore keeps no payload in external storage; left on, history
		// walked every payload of every event it wrote to count such
		// payloads: about 3 % of encore dev's CPU while it sold (Temporal's
		// CalculateExternalPayloadSize in a profile of paid bookings).
		dynamicconfig.ExternalPayloadsEnabled.Key(): false,
	}
	for k, v := range overrides {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	return dc
}

// bootstrap dials the frontend, registers the namespace and search attributes
// if missing and waits until the namespace resolves them.
func (s *Server) bootstrap(ctx context.Context) error {
	c, err := dialWithRetry(ctx, client.Options{
		HostPort:    s.frontendAddr,
		Namespace:   s.cfg.Namespace,
		Logger:      sdkLogger(s.logger),
		Credentials: client.NewAPIKeyStaticCredentials(s.cfg.APIKey),
		// The SDK turns TLS on with an API key: this server speaks plain
		// gRPC (on loopback, unless FrontendAddress says otherwise).
		ConnectionOptions: client.ConnectionOptions{TLSDisabled: true},
	})
	if err != nil {
		return fmt.Errorf("temporalserver: dial frontend %s: %w", s.frontendAddr, err)
	}
	s.client = c
	if err := retryUnavailable(ctx, func() error { return s.ensureNamespace(ctx) }); err != nil {
		return fmt.Errorf("temporalserver: namespace %s: %w", s.cfg.Namespace, err)
	}
	if err := retryUnavailable(ctx, func() error { return s.ensureSearchAttributes(ctx) }); err != nil {
		return fmt.Errorf("temporalserver: search attributes: %w", err)
	}
	if err := s.waitNamespaceReady(ctx); err != nil {
		return fmt.Errorf("temporalserver: namespace %s not ready: %w", s.cfg.Namespace, err)
	}
	return nil
}

func dialWithRetry(ctx context.Context, opts client.Options) (client.Client, error) {
	var lastErr error
	for {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := client.DialContext(dctx, opts)
		cancel()
		if err == nil {
			return c, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// retryUnavailable retries fn while the server reports itself not ready yet.
func retryUnavailable(ctx context.Context, fn func() error) error {
	delay := 20 * time.Millisecond
	for {
		err := fn()
		if err == nil || !isTransient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

func isTransient(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	var nsNotFound *serviceerror.NamespaceNotFound
	var internal *serviceerror.Internal
	var exhausted *serviceerror.ResourceExhausted // e.g. the per-namespace visibility rate limit
	return errors.As(err, &unavailable) || errors.As(err, &deadline) ||
		errors.As(err, &nsNotFound) || errors.As(err, &internal) ||
		errors.As(err, &exhausted) || errors.Is(err, context.DeadlineExceeded)
}

func (s *Server) ensureNamespace(ctx context.Context) error {
	svc := s.client.WorkflowService()
	_, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.cfg.Namespace})
	var notFound *serviceerror.NamespaceNotFound
	if err == nil || !errors.As(err, &notFound) {
		return err
	}
	_, err = svc.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        s.cfg.Namespace,
		Description:                      "Encore bookings",
		WorkflowExecutionRetentionPeriod: durationpb.New(s.cfg.Retention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	return err
}

func (s *Server) ensureSearchAttributes(ctx context.Context) error {
	if len(s.cfg.SearchAttributes) == 0 {
		return nil
	}
	return temporalclient.EnsureNamespace(ctx, s.client, s.cfg.Namespace, s.cfg.SearchAttributes)
}

// waitNamespaceReady returns once the frontend's namespace cache knows the
// namespace and every custom search attribute: a visibility query naming them
// is refused as invalid until then.
func (s *Server) waitNamespaceReady(ctx context.Context) error {
	names := slices.Sorted(maps.Keys(s.cfg.SearchAttributes))
	clauses := make([]string, 0, len(names))
	for _, n := range names {
		clauses = append(clauses, "`"+n+"` IS NULL")
	}
	query := strings.Join(clauses, " AND ")
	svc := s.client.WorkflowService()
	var lastErr error
	// Visibility calls are rate limited per namespace (10/s by default): back off.
	delay := 50 * time.Millisecond
	for {
		_, err := svc.CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: s.cfg.Namespace,
			Query:     query,
		})
		if err == nil {
			return nil
		}
		var invalid *serviceerror.InvalidArgument
		if !errors.As(err, &invalid) && !isTransient(err) {
			return err
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), lastErr)
		case <-time.After(delay):
		}
		delay = min(delay*2, 250*time.Millisecond)
	}
}

// FrontendAddress is the host:port of the frontend gRPC service.
func (s *Server) FrontendAddress() string { return s.frontendAddr }

// FrontendHTTPAddress is the host:port of the frontend's HTTP API.
func (s *Server) FrontendHTTPAddress() string { return s.httpAddr }

// UIURL is the Web UI's base URL, e.g. http://127.0.0.1:8233, or "" when disabled.
func (s *Server) UIURL() string {
	if s.ui == nil {
		return ""
	}
	return s.ui.URL()
}

// Namespace is the namespace registered at start.
func (s *Server) Namespace() string { return s.cfg.Namespace }

// DatabaseNames are the main and visibility database names.
func (s *Server) DatabaseNames() (main, visibility string) {
	return s.cfg.DatabaseName, s.cfg.VisibilityDatabaseName
}

// APIKey is the bearer that Encore's own processes send: Config.APIKey, or
// the one Start made.
func (s *Server) APIKey() string { return s.cfg.APIKey }

// NewClient dials the server. Empty HostPort and Namespace default to the
// server's; a nil Logger logs at warn level and above to the server's logger;
// nil Credentials are the server's API key. The caller closes the client.
func (s *Server) NewClient(ctx context.Context, opts client.Options) (client.Client, error) {
	if opts.Credentials == nil {
		opts.Credentials = client.NewAPIKeyStaticCredentials(s.cfg.APIKey)
		opts.ConnectionOptions.TLSDisabled = opts.ConnectionOptions.TLS == nil
	}
	if opts.HostPort == "" {
		opts.HostPort = s.frontendAddr
	}
	if opts.Namespace == "" {
		opts.Namespace = s.cfg.Namespace
	}
	if opts.Logger == nil {
		opts.Logger = sdkLogger(s.logger)
	}
	return client.DialContext(ctx, opts)
}

// Stop shuts down the UI and the server and releases their ports. It is safe
// to call more than once; later calls return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		var errs []error
		if s.ui != nil {
			if err := s.ui.stop(); err != nil {
				errs = append(errs, fmt.Errorf("stop UI: %w", err))
			}
		}
		if s.client != nil {
			s.client.Close()
		}
		if s.temporal != nil {
			if err := s.temporal.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stop server: %w", err))
			}
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}
