package temporalserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"time"

	enums "go.temporal.io/api/enums/v1"

	"github.com/encore-tickets/encore/internal/defaults"
	"github.com/encore-tickets/encore/session"
)

// Defaults applied by Start for zero-valued Config fields.
const (
	DefaultDatabaseName           = "temporal"
	DefaultVisibilityDatabaseName = "temporal_visibility"
	DefaultFrontendAddress        = "127.0.0.1:7233"
	DefaultUIAddress              = "127.0.0.1:8233"
	DefaultNamespace              = "default"
	DefaultNumHistoryShards       = 4
	DefaultRetention              = 72 * time.Hour
	DefaultMaxConns               = 16
	DefaultVisibilityMaxConns     = 8
)

// Config configures an embedded Temporal server. Only DatabaseURL is required.
type Config struct {
	// PostgreSQL connection for Temporal's own databases (a superuser/owner able to
	// CREATE DATABASE), e.g. postgres://postgres@127.0.0.1:54329/postgres?sslmode=disable.
	// The database in the URL is only used to create the two Temporal databases;
	// query parameters (sslmode, ...) are passed on to the server's connections.
	DatabaseURL string

	// DatabaseName and VisibilityDatabaseName default to "temporal" and
	// "temporal_visibility". Lower-case letters, digits and underscores only.
	DatabaseName, VisibilityDatabaseName string

	// FrontendAddress is the host:port of the frontend gRPC service, default
	// "127.0.0.1:7233". Port 0 picks a free port. The history, matching and
	// worker services listen on free ports of the same host.
	FrontendAddress string

	// UIAddress is the host:port of the Temporal Web UI, default "127.0.0.1:8233".
	// Port 0 picks a free port. DisableUI turns the UI off.
	UIAddress string
	DisableUI bool

	// CodecEndpoint is the codec server (the Temporal codec server protocol)
	// the Web UI's pages call to decode encrypted payloads, e.g.
	// http://127.0.0.1:9090/codec. Empty: payloads are shown as stored.
	CodecEndpoint string
	// CodecToken, when set, is the codec's bearer: the UI then calls
	// <UI origin>/codec, which forwards its own origin's requests to
	// CodecEndpoint with this bearer, so the token never reaches a page.
	CodecToken string

	// APIKey is the bearer Encore's own processes send to the frontend (the
	// SDK's API key credentials): the only credential with full access.
	// Empty: Start makes a random one (Server.APIKey). Every other caller
	// is refused, unless StaffTokens verifies its token (auth.go).
	APIKey string
	// StaffTokens returns the verifier of the access tokens the Web UI
	// forwards (its signed-in user's): a support's or an admin's may read
	// and steer workflows. Nil, or returning nil (the identity provider not
	// reachable yet): no user token is accepted.
	StaffTokens func() *session.Verifier
	// SignIn is where the Web UI signs its users in (OpenID Connect).
	// Without an issuer the UI still asks for sign-in and can never get
	// one: every call from it is refused.
	SignIn SignIn

	// Namespace is registered if missing, default "default".
	Namespace string
	// Retention of closed workflows in Namespace when it is registered, default 72h.
	Retention time.Duration

	// NumHistoryShards, default 4. It is fixed when the databases are first set
	// up: a later Start on the same databases must use the same value.
	NumHistoryShards int32

	// SearchAttributes are custom search attributes registered on Namespace if
	// missing, e.g. "EncoreEventId": enums.INDEXED_VALUE_TYPE_KEYWORD.
	SearchAttributes map[string]enums.IndexedValueType

	// Logger receives the server's logs at warn level and above only. Default:
	// text to stderr.
	Logger *slog.Logger

	// MaxConns and VisibilityMaxConns cap each service's connection pool to the
	// main and visibility databases (four services each), default 16 and 8.
	MaxConns, VisibilityMaxConns int

	// DynamicConfig overrides or adds dynamic config values by key, e.g.
	// "history.persistenceMaxQPS": 3000. Applied on top of the built-in tuning.
	DynamicConfig map[string]any

	// MetricsAddress, when set, serves the server's Prometheus metrics on
	// host:port at /metrics. Default: no metrics.
	MetricsAddress string
}

var dbNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// withDefaults returns a copy of c with defaults filled in and validated.
func (c Config) withDefaults() (Config, error) {
	if c.DatabaseURL == "" {
		return c, errors.New("temporalserver: DatabaseURL is required")
	}
	if c.DatabaseName == "" {
		c.DatabaseName = DefaultDatabaseName
	}
	if c.VisibilityDatabaseName == "" {
		c.VisibilityDatabaseName = DefaultVisibilityDatabaseName
	}
	for _, n := range []string{c.DatabaseName, c.VisibilityDatabaseName} {
		if !dbNameRE.MatchString(n) {
			return c, fmt.Errorf("temporalserver: invalid database name %q (want lower-case letters, digits, underscores)", n)
		}
	}
	if c.DatabaseName == c.VisibilityDatabaseName {
		return c, errors.New("temporalserver: DatabaseName and VisibilityDatabaseName must differ")
	}
	if c.FrontendAddress == "" {
		c.FrontendAddress = DefaultFrontendAddress
	}
	if c.UIAddress == "" && !c.DisableUI {
		c.UIAddress = DefaultUIAddress
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.APIKey == "" {
		c.APIKey = randomKey()
	}
	defaults.Fill(&c.Retention, DefaultRetention)
	defaults.Fill(&c.NumHistoryShards, DefaultNumHistoryShards)
	defaults.Fill(&c.MaxConns, DefaultMaxConns)
	defaults.Fill(&c.VisibilityMaxConns, DefaultVisibilityMaxConns)
	if c.Logger == nil {
		c.Logger = defaultLogger()
	}
	return c, nil
}

// pgTarget is the parsed DatabaseURL.
type pgTarget struct {
	user, password string
	hostPort       string
	attrs          map[string]string
}

func parseDatabaseURL(raw string) (pgTarget, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return pgTarget{}, fmt.Errorf("temporalserver: parse DatabaseURL: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return pgTarget{}, fmt.Errorf("temporalserver: DatabaseURL must be a postgres:// URL, got scheme %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return pgTarget{}, errors.New("temporalserver: DatabaseURL needs a TCP host (unix sockets are not supported by the Temporal driver)")
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	t := pgTarget{
		user:     u.User.Username(),
		hostPort: net.JoinHostPort(u.Hostname(), port),
		attrs:    map[string]string{},
	}
	t.password, _ = u.User.Password()
	for k, vs := range u.Query() {
		if len(vs) > 0 {
			t.attrs[k] = vs[len(vs)-1]
		}
	}
	return t, nil
}

// resolveAddr turns host:0 into host:<free port>.
func resolveAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("temporalserver: bad address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "0" {
		p, err := freePort(host)
		if err != nil {
			return "", err
		}
		port = strconv.Itoa(p)
	}
	return net.JoinHostPort(host, port), nil
}

// freePort is one free port on host, outside the ephemeral range.
func freePort(host string) (int, error) {
	ports, err := freePorts(host, 1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}
