// Package config holds Encore's one configuration struct. Every field is read
// from an environment variable with a documented default, so a fresh clone runs
// with no configuration at all and production overrides only what differs.
package config

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Secret is a string that never prints itself, so a logged Config leaks nothing.
type Secret string

// String redacts the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// Reveal returns the secret's value for the one place that must use it.
func (s Secret) Reveal() string { return string(s) }

// Config is every setting of every Encore process. The struct tags are the
// documentation: env names the variable, default its value when unset, doc what
// it does. README's configuration table is generated from them (see Table).
type Config struct {
	DataDir      string `env:"ENCORE_DATA_DIR" default:".encore" doc:"Folder for the private PostgreSQL and Redis that encore dev starts, the payment sandbox state and the dev mailbox."`
	DatabaseURL  Secret `env:"ENCORE_DATABASE_URL" default:"" doc:"PostgreSQL to use. Empty: encore dev starts (or installs) a private cluster under ENCORE_DATA_DIR on 127.0.0.1:54329."`
	DatabaseName string `env:"ENCORE_DATABASE_NAME" default:"encore" doc:"Database created inside the private cluster for Encore's own tables."`
	RedisURL     Secret `env:"ENCORE_REDIS_URL" default:"" doc:"Redis to use. Empty: encore dev starts (or installs) a private Redis on 127.0.0.1:63799."`
	DBMaxConns   int32  `env:"ENCORE_DB_MAX_CONNS" default:"32" doc:"Connections in the buy-plane pool. Holds are short transactions: a few connections per core is plenty."`

	HTTPAddr       string `env:"ENCORE_HTTP_ADDR" default:"127.0.0.1:8080" doc:"Address of the fan API, /healthz, /readyz and /metrics."`
	TrustedProxies string `env:"ENCORE_TRUSTED_PROXIES" default:"" doc:"Comma-separated CIDRs or addresses of the load balancers in front of the API. From those peers only, the client address is the right-most X-Forwarded-For hop that is not itself a trusted proxy; every per-IP limit and fraud rule counts it. Empty: the TCP peer counts."`

	TemporalAddress    string `env:"ENCORE_TEMPORAL_ADDRESS" default:"" doc:"host:port of an existing Temporal cluster. Empty: encore dev embeds a Temporal server persisting to the PostgreSQL above."`
	TemporalNamespace  string `env:"ENCORE_TEMPORAL_NAMESPACE" default:"default" doc:"Temporal namespace for booking workflows."`
	TemporalListenAddr string `env:"ENCORE_TEMPORAL_LISTEN_ADDR" default:"127.0.0.1:7233" doc:"Frontend address of the embedded Temporal server."`
	TemporalUIAddr     string `env:"ENCORE_TEMPORAL_UI_ADDR" default:"127.0.0.1:8233" doc:"Address of the embedded Temporal Web UI."`
	TemporalShards     int32  `env:"ENCORE_TEMPORAL_SHARDS" default:"4" doc:"History shards of the embedded server (fixed once its database exists)."`

	SessionSecret Secret `env:"ENCORE_SESSION_SECRET" default:"dev-session-secret-change-me" doc:"HMAC key that signs fan bearer tokens (demo login)."`

	LockTimeout       time.Duration `env:"ENCORE_LOCK_TIMEOUT" default:"2s" doc:"PostgreSQL lock_timeout of a hold transaction: a blocked hold fails fast instead of queueing."`
	StatementTimeout  time.Duration `env:"ENCORE_STATEMENT_TIMEOUT" default:"5s" doc:"PostgreSQL statement_timeout of a hold transaction."`
	SweepInterval     time.Duration `env:"ENCORE_SWEEP_INTERVAL" default:"1s" doc:"How often the expiry sweeper looks for expired holds."`
	SweepBatch        int           `env:"ENCORE_SWEEP_BATCH" default:"200" doc:"Most expired holds the sweeper ends in one transaction."`
	SweepLagAllowance time.Duration `env:"ENCORE_SWEEP_LAG_ALLOWANCE" default:"30s" doc:"How far past expiry a HELD seat may be before encore audit reports it."`
	HoldRatePerMinute int           `env:"ENCORE_HOLD_RATE_PER_MINUTE" default:"60" doc:"Hold attempts one account may make per minute before 429 rate-limited."`
	HintsEnabled      bool          `env:"ENCORE_SEAT_HINTS" default:"true" doc:"Use Redis seat hints to bounce obviously contended carts before they take a database lock."`

	SagaMaxLatency      time.Duration `env:"ENCORE_SAGA_MAX_LATENCY" default:"5s" doc:"Backpressure: mean time of a checkout's call into the booking saga (start, fraud, authorisation) over 10s, over every process, past which checkouts and holds on unmetered events answer 503 unavailable with Retry-After."`
	SagaMaxErrorPercent int           `env:"ENCORE_SAGA_MAX_ERROR_PERCENT" default:"50" doc:"Backpressure: share (percent) of checkout calls over 10s that got no answer from the saga (Temporal down or overloaded) past which the same 503 applies."`
	SagaMaxInFlight     int64         `env:"ENCORE_SAGA_MAX_IN_FLIGHT" default:"256" doc:"Backpressure: checkout calls waiting on the saga at once, over every process, past which the same 503 applies."`
	SagaMaxBacklog      time.Duration `env:"ENCORE_SAGA_MAX_BACKLOG" default:"10s" doc:"Backpressure: age of the oldest booking workflow task no worker has picked up (probed every second) past which the same 503 applies."`
	SagaRetryAfter      time.Duration `env:"ENCORE_SAGA_RETRY_AFTER" default:"5s" doc:"Backpressure: the Retry-After of those 503 answers."`

	RoomCapacity        int           `env:"ENCORE_ROOM_CAPACITY" default:"100" doc:"Waiting room: fans inside checkout at once per metered event (the adaptive mode starts here and stays between a tenth and four times it)."`
	RoomBatch           int           `env:"ENCORE_ROOM_BATCH" default:"10" doc:"Waiting room: most fans admitted per tick, so freed capacity never releases a thundering herd."`
	RoomTick            time.Duration `env:"ENCORE_ROOM_TICK" default:"1s" doc:"Waiting room: admission tick; one elected admitter per event runs each tick."`
	RoomAdaptive        bool          `env:"ENCORE_ROOM_ADAPTIVE" default:"true" doc:"Waiting room: lower or raise capacity every 10s from the booking saga's checkout latency and errors (shared by every process) and payment errors (AIMD; see waitingroom.Controller)."`
	RoomPassTTL         time.Duration `env:"ENCORE_ROOM_PASS_TTL" default:"5m" doc:"Waiting room: lifetime of an admission pass and of the admission window (at most 5m)."`
	RoomPassSeed        Secret        `env:"ENCORE_ROOM_PASS_SEED" default:"dev-admission-pass-seed-change-me" doc:"Waiting room: secret from which the Ed25519 key that signs admission passes is derived (SHA-256). The default is for development only."`
	RoomJoinPerMinute   int           `env:"ENCORE_ROOM_JOIN_PER_MINUTE" default:"30" doc:"Waiting room: joins (and socket connects) one account may make per minute per event before 429 rate-limited."`
	RoomJoinIPPerMinute int           `env:"ENCORE_ROOM_JOIN_IP_PER_MINUTE" default:"120" doc:"Waiting room: joins one IP address may make per minute per event; also the per-IP limit of holds and checkouts."`
	RoomPowDifficulty   int           `env:"ENCORE_ROOM_POW_DIFFICULTY" default:"20" doc:"Waiting room: leading zero bits of the proof of work asked of risky clients on join (20 is about a million SHA-256 hashes)."`

	ReaderDatabaseURL Secret        `env:"ENCORE_READER_DATABASE_URL" default:"" doc:"Browse plane: PostgreSQL URL of a login that may only read (member of encore_reader). Empty: the main database URL, each connection switching to the encore_reader role (SET ROLE) with read-only transactions."`
	ReaderMaxConns    int32         `env:"ENCORE_READER_MAX_CONNS" default:"4" doc:"Browse plane: connections of the read-only pool (search, event pages, seat-map cache fills)."`
	SeatMapCacheTTL   time.Duration `env:"ENCORE_SEATMAP_CACHE_TTL" default:"2s" doc:"Browse plane: how long a section's seat-map snapshot lives in Redis; the outbox relay deletes it sooner when the section changes."`
	SeatMapLocalTTL   time.Duration `env:"ENCORE_SEATMAP_LOCAL_TTL" default:"500ms" doc:"Browse plane: how long an API process keeps a hot seat-map snapshot in memory; the invalidation that reaches viewers drops it at once. 0 disables."`
	RelayInterval     time.Duration `env:"ENCORE_RELAY_INTERVAL" default:"50ms" doc:"Outbox relay: pause between polls when idle (the one active relay runs in encore worker and encore dev)."`

	PSPAddr             string `env:"ENCORE_PSP_ADDR" default:"127.0.0.1:12111" doc:"Address of the built-in payment sandbox that encore dev and encore psp start."`
	StripeAPIURL        string `env:"ENCORE_STRIPE_API_URL" default:"" doc:"Base URL stripe-go talks to. Empty: the sandbox at ENCORE_PSP_ADDR, or Stripe itself when ENCORE_STRIPE_KEY is a live or test key of a real account."`
	StripeKey           Secret `env:"ENCORE_STRIPE_KEY" default:"sk_test_encore_sandbox" doc:"Stripe secret key. The default is the sandbox's key."`
	StripeWebhookSecret Secret `env:"ENCORE_STRIPE_WEBHOOK_SECRET" default:"whsec_encore_sandbox" doc:"Secret that verifies Stripe-Signature on webhooks."`

	TicketSealingKey    Secret `env:"ENCORE_TICKET_SEALING_KEY" default:"f9317ccd4c5ce67ef314a19ac2ffb6febd1370422dcb1e633cfc4d5ac89922ec" doc:"AES-256 key (64 hex characters or base64) that seals each ticket's QR secret in the database. The default is for development only."`
	ManifestKey         Secret `env:"ENCORE_MANIFEST_KEY" default:"6ceb22d78589b2d94c8744777d7f1fc56cb21ed0cb881759c4760b37cfe92178" doc:"AES-256 key (64 hex characters or base64) that encrypts the venue gate manifest; the gate needs the same key. The default is for development only."`
	ManifestSigningSeed Secret `env:"ENCORE_MANIFEST_SIGNING_SEED" default:"4e7b8343644a3286e97dd7479537d071cbfcb28bc7140fff5ae310d85a9dc8bf" doc:"Ed25519 seed (64 hex characters or base64) that signs manifests; the gate verifies with its public key (or encore gate --verify-key). The default is for development only."`
	GateAddr            string `env:"ENCORE_GATE_ADDR" default:"127.0.0.1:8090" doc:"Address of the venue gate service (encore gate): /healthz, /v1/scan and /metrics."`

	SMTPAddr       string        `env:"ENCORE_SMTP_ADDR" default:"" doc:"SMTP server (host:port) for confirmation emails. Empty: emails are written to ENCORE_DATA_DIR/mailbox as .eml files."`
	SMTPFrom       string        `env:"ENCORE_SMTP_FROM" default:"tickets@encore.invalid" doc:"Sender address of confirmation emails."`
	SMTPUser       string        `env:"ENCORE_SMTP_USER" default:"" doc:"SMTP user (empty: no authentication)."`
	SMTPPassword   Secret        `env:"ENCORE_SMTP_PASSWORD" default:"" doc:"SMTP password."`
	ReconcileEvery time.Duration `env:"ENCORE_RECONCILE_EVERY" default:"15m" doc:"How often the reconciliation workflow matches provider payments with bookings."`

	LogLevel string `env:"ENCORE_LOG_LEVEL" default:"info" doc:"debug, info, warn or error."`
}

// Load reads the environment. It fails on a value that does not parse, naming
// the variable, rather than silently running with a default.
func Load() (Config, error) { return LoadFrom(os.LookupEnv) }

// LoadFrom is Load with an injectable lookup, for tests.
func LoadFrom(lookup func(string) (string, bool)) (Config, error) {
	var c Config
	v := reflect.ValueOf(&c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		raw := f.Tag.Get("default")
		if s, ok := lookup(f.Tag.Get("env")); ok {
			raw = s
		}
		if err := set(v.Field(i), raw); err != nil {
			return Config{}, fmt.Errorf("config: %s=%q: %w", f.Tag.Get("env"), raw, err)
		}
	}
	return c, nil
}

// Default is the configuration with every variable unset.
func Default() Config {
	c, err := LoadFrom(func(string) (string, bool) { return "", false })
	if err != nil {
		panic(err) // the defaults are constants; a bad one is a programming error
	}
	return c
}

func set(field reflect.Value, raw string) error {
	switch field.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return err
		}
		if d < 0 {
			return fmt.Errorf("must not be negative")
		}
		field.SetInt(int64(d))
		return nil
	}
	switch field.Kind() {
	case reflect.String:
		field.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return err
		}
		field.SetBool(b)
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, field.Type().Bits())
		if err != nil {
			return err
		}
		if n < 0 {
			return fmt.Errorf("must not be negative")
		}
		field.SetInt(n)
	default:
		return fmt.Errorf("unsupported kind %s", field.Kind())
	}
	return nil
}

// Table renders the configuration as the Markdown table in README.md.
func Table() string {
	var b strings.Builder
	b.WriteString("| Variable | Default | Meaning |\n|---|---|---|\n")
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		def := f.Tag.Get("default")
		if def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", f.Tag.Get("env"), def, f.Tag.Get("doc"))
	}
	return b.String()
}
