// Package config holds Encore's one configuration struct. Every field is read
// from an environment variable with a documented default, so a fresh clone runs
// with no configuration at all and production overrides only what differs.
package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"slices"
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
	Env string `env:"ENCORE_ENV" default:"production" oneof:"production staging development" doc:"production: encore api, worker, gate and manifest refuse to start on a secret that is empty, shorter than 32 bytes or its development default (a keyring that still holds the development codec key included; encore keys generate makes a set), the gate requires --verify-key and ENCORE_GATE_TOKENS, the API refuses ENCORE_DEMO_LOGIN, accepts a checkout's return_url only on ENCORE_PUBLIC_URL's origin and warns when its database login is a superuser. staging: the same, demo login refused too, but a return_url may point at loopback. development: the defaults and the demo login are accepted (encore dev sets it)."`

	DataDir         string `env:"ENCORE_DATA_DIR" default:".encore" doc:"Folder for the private PostgreSQL and Redis that encore dev starts, the payment sandbox state and the dev mailbox."`
	DevPostgresPort int    `env:"ENCORE_DEV_POSTGRES_PORT" default:"54329" doc:"encore dev: loopback port of the private PostgreSQL it starts (or reuses) when ENCORE_DATABASE_URL is empty."`
	DevRedisPort    int    `env:"ENCORE_DEV_REDIS_PORT" default:"63799" doc:"encore dev: loopback port of the private Redis it starts (or reuses) when ENCORE_REDIS_URL is empty."`
	DatabaseURL     Secret `env:"ENCORE_DATABASE_URL" default:"" doc:"PostgreSQL to use. Empty: encore dev starts (or installs) a private cluster under ENCORE_DATA_DIR on 127.0.0.1:54329."`
	DatabaseName    string `env:"ENCORE_DATABASE_NAME" default:"encore" doc:"Database created inside the private cluster for Encore's own tables."`
	RedisURL        Secret `env:"ENCORE_REDIS_URL" default:"" doc:"Redis to use: one server (redis://host:port/db), a Redis Cluster (redis+cluster://host:port?addr=host2:port2&addr=..., seed nodes; database 0 only) or the master Sentinel names (redis+sentinel://user:password@host:port/db?master_name=NAME&addr=host2:port2, the hosts being sentinels; sentinel_password=... if they need one); rediss instead of redis for TLS. Empty: encore dev starts (or installs) a private Redis on 127.0.0.1:63799."`
	DBMaxConns      int32  `env:"ENCORE_DB_MAX_CONNS" default:"32" doc:"Connections in the buy-plane pool. Holds are short transactions: a few connections per core is plenty."`

	HTTPAddr        string        `env:"ENCORE_HTTP_ADDR" default:"127.0.0.1:8080" doc:"Address of the fan API, /healthz and /readyz."`
	PublicURL       string        `env:"ENCORE_PUBLIC_URL" default:"" doc:"Absolute http(s) URL at which fans and the payment provider reach the API: the base of the 3-D Secure return URL and of links in emails. Empty: http:// and ENCORE_HTTP_ADDR, an unspecified host (0.0.0.0, ::) read as 127.0.0.1."`
	AdminAddr       string        `env:"ENCORE_ADMIN_ADDR" default:"127.0.0.1:9090" doc:"Address of the operators' listener of encore api, encore worker and encore dev: /metrics (Prometheus), /debug/pprof/ and the payload codec (/codec). Loopback by default; set another interface only where a scraper must reach it, and keep it off the public network."`
	RequestTimeout  time.Duration `env:"ENCORE_REQUEST_TIMEOUT" default:"10s" doc:"Deadline of one fan API request (WebSockets excepted); past it the request answers 503 unavailable."`
	WSMaxPerIP      int           `env:"ENCORE_WS_MAX_PER_IP" default:"8" doc:"Queue and live seat-map WebSockets one client address may hold open at once in one process; past it 429 rate-limited with Retry-After."`
	WSMaxPerProcess int           `env:"ENCORE_WS_MAX_PER_PROCESS" default:"20000" doc:"Queue and live seat-map WebSockets one API process holds open at once; past it 429 rate-limited with Retry-After."`
	TrustedProxies  string        `env:"ENCORE_TRUSTED_PROXIES" default:"" doc:"Comma-separated CIDRs or addresses of the load balancers in front of the API. From those peers only, the client address is the right-most X-Forwarded-For hop that is not itself a trusted proxy; every per-IP limit and fraud rule counts it. Empty: the TCP peer counts."`

	TemporalAddress    string `env:"ENCORE_TEMPORAL_ADDRESS" default:"" doc:"host:port of an existing Temporal cluster. Empty: encore dev embeds a Temporal server persisting to the PostgreSQL above."`
	TemporalNamespace  string `env:"ENCORE_TEMPORAL_NAMESPACE" default:"default" doc:"Temporal namespace for booking workflows."`
	TemporalListenAddr string `env:"ENCORE_TEMPORAL_LISTEN_ADDR" default:"127.0.0.1:7233" doc:"Frontend address of the embedded Temporal server."`
	TemporalUIAddr     string `env:"ENCORE_TEMPORAL_UI_ADDR" default:"127.0.0.1:8233" doc:"Address of the embedded Temporal Web UI."`
	TemporalShards     int32  `env:"ENCORE_TEMPORAL_SHARDS" default:"4" doc:"History shards of the embedded server (fixed once its database exists)."`
	TemporalDatabase   string `env:"ENCORE_TEMPORAL_DATABASE" default:"temporal" doc:"Database of the embedded Temporal server on the PostgreSQL above; its visibility store is this name with _visibility. Another name lets two embedded servers share one PostgreSQL."`

	TemporalTLS           bool   `env:"ENCORE_TEMPORAL_TLS" default:"false" doc:"Connect to Temporal over TLS. Implied by any of the TLS files below and by ENCORE_TEMPORAL_API_KEY."`
	TemporalTLSCA         string `env:"ENCORE_TEMPORAL_TLS_CA" default:"" doc:"PEM file of the CA certificates that sign Temporal's server certificate. Empty: the system's roots."`
	TemporalTLSCert       string `env:"ENCORE_TEMPORAL_TLS_CERT" default:"" doc:"PEM file of the client certificate presented to Temporal (mutual TLS); needs ENCORE_TEMPORAL_TLS_KEY."`
	TemporalTLSKey        string `env:"ENCORE_TEMPORAL_TLS_KEY" default:"" doc:"PEM file of the private key of ENCORE_TEMPORAL_TLS_CERT."`
	TemporalTLSServerName string `env:"ENCORE_TEMPORAL_TLS_SERVER_NAME" default:"" doc:"Name expected in Temporal's server certificate. Empty: the host of the Temporal address."`
	TemporalAPIKey        Secret `env:"ENCORE_TEMPORAL_API_KEY" default:"" doc:"API key sent to Temporal as a bearer token on every call (Temporal Cloud's, or the embedded server's); implies TLS except to a loopback address. The embedded server (encore dev, encore temporal) accepts this key with full access and, signed in through its Web UI, support and admin users; nothing else. Empty: encore dev and encore temporal make one in ENCORE_DATA_DIR/temporal.key, which encore api, worker and gate read when their Temporal address is on loopback."`
	TemporalCodecKeys     Secret `env:"ENCORE_TEMPORAL_CODEC_KEYS" generate:"keyring" default:"dev:8c1f5e0d4b7a3926e1d08f7c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3921" doc:"Keys that encrypt workflow payloads (AES-256-GCM) before Temporal stores them: comma-separated id:key, each key 64 hex characters or base64 of 32 bytes. The first encrypts; every one decrypts, so rotate by putting a new key first and dropping an old one once no workflow it wrote is retained. The default is for development only."`
	TemporalCodecEndpoint string `env:"ENCORE_TEMPORAL_CODEC_ENDPOINT" default:"" doc:"URL of the codec endpoint the Temporal Web UI calls to show decrypted payloads (/decode, /encode below it). Empty: /codec on the admin listener (ENCORE_ADMIN_ADDR, on loopback when it listens on every address)."`
	TemporalUIClientID    string `env:"ENCORE_TEMPORAL_UI_CLIENT_ID" default:"temporal-ui" doc:"Client ID of the embedded Temporal Web UI at the identity provider (ENCORE_OIDC_ISSUER, else the development issuer of the demo login), where users sign in to it: a public client (no secret, PKCE) with the redirect URI <UI origin>/auth/sso/callback, whose access tokens name ENCORE_OIDC_AUDIENCE."`
	TemporalUIOrigins     string `env:"ENCORE_TEMPORAL_UI_ORIGINS" default:"" doc:"Comma-separated origins of the Temporal Web UI allowed to call the codec endpoint from a browser. Empty: the embedded Web UI's (ENCORE_TEMPORAL_UI_ADDR)."`
	TemporalCodecToken    Secret `env:"ENCORE_TEMPORAL_CODEC_TOKEN" default:"" doc:"Bearer secret (at least 32 bytes) a caller of the codec endpoint may send as Authorization: Bearer (temporal CLI --codec-auth, a Web UI without sign-in). The endpoint otherwise accepts only the Web UI's forwarded access token (its codec option pass access token) of a support or admin. Empty: forwarded tokens only; encore dev makes a random one per run (ENCORE_DATA_DIR/codec.token) for its embedded Web UI."`

	OIDCIssuer    string `env:"ENCORE_OIDC_ISSUER" default:"" doc:"OpenID Connect issuer URL whose JWTs the API accepts as bearer tokens (its discovery document names the key set; RS256, ES256 or EdDSA). Empty: only the development issuer, with ENCORE_DEMO_LOGIN; encore api refuses to start without either."`
	OIDCAudience  string `env:"ENCORE_OIDC_AUDIENCE" default:"encore" doc:"Audience a bearer token must name (aud): the API's client or resource ID at the issuer."`
	OIDCJWKSURL   string `env:"ENCORE_OIDC_JWKS_URL" default:"" doc:"Key set (JWKS) URL of the issuer. Empty: the jwks_uri of ENCORE_OIDC_ISSUER's discovery document."`
	OIDCClientID  string `env:"ENCORE_OIDC_CLIENT_ID" default:"" doc:"The fan web app's public client ID at the issuer (a public client: no secret; PKCE). Set, the web app signs fans in by the standard OpenID Connect redirect (authorization code with PKCE) at ENCORE_OIDC_ISSUER, or at the development issuer with the demo login; register ENCORE_PUBLIC_URL + / as its redirect URI. Empty: redirect sign-in off (the demo form, when the demo login is on)."`
	DemoLogin     bool   `env:"ENCORE_DEMO_LOGIN" default:"false" doc:"Serve the demo login (POST /v1/sessions mints a token for any user and roles asked for) and its development issuer at /dev/oidc. For development only; encore dev turns it on unless set. Ignored when ENCORE_OIDC_ISSUER is set."`
	SessionSecret Secret `env:"ENCORE_SESSION_SECRET" default:"dev-session-secret-change-me" use:"api" doc:"Secret from which the development issuer's Ed25519 signing key is derived (demo login)."`

	LockTimeout        time.Duration `env:"ENCORE_LOCK_TIMEOUT" default:"2s" doc:"PostgreSQL lock_timeout of a hold transaction: a blocked hold fails fast instead of queueing."`
	StatementTimeout   time.Duration `env:"ENCORE_STATEMENT_TIMEOUT" default:"5s" doc:"PostgreSQL statement_timeout of a hold transaction."`
	BookingChanges     bool          `env:"ENCORE_BOOKING_CHANGES" default:"true" doc:"Writes to a booking notify PostgreSQL's booking_changed channel, and each API process listens, so a fan's page waiting on its booking (Prefer: wait) hears of a change at once. false: no notifications (each notifying commit queues behind one cluster-wide lock; docs/SCALING.md) and no listener; waiting pages read every second."`
	DBStatementTimeout time.Duration `env:"ENCORE_DB_STATEMENT_TIMEOUT" default:"5s" doc:"PostgreSQL statement_timeout of every connection of every pool (buy plane, worker, browse); ENCORE_LOCK_TIMEOUT is every connection's lock_timeout. 0 disables."`
	SweepInterval      time.Duration `env:"ENCORE_SWEEP_INTERVAL" default:"1s" doc:"How often the expiry sweeper looks for expired holds."`
	SweepBatch         int           `env:"ENCORE_SWEEP_BATCH" default:"200" doc:"Most expired holds the sweeper ends in one transaction."`
	SweepLagAllowance  time.Duration `env:"ENCORE_SWEEP_LAG_ALLOWANCE" default:"30s" doc:"How far past expiry a HELD seat may be before encore audit reports it."`
	HoldRatePerMinute  int           `env:"ENCORE_HOLD_RATE_PER_MINUTE" default:"60" doc:"Hold attempts one account may make per minute before 429 rate-limited."`
	HintsEnabled       bool          `env:"ENCORE_SEAT_HINTS" default:"true" doc:"Use Redis seat hints to bounce obviously contended carts before they take a database lock."`

	MaxUnpaidRoomNights int `env:"ENCORE_MAX_UNPAID_ROOM_NIGHTS" default:"8" doc:"Most hotel room-nights (rooms times nights) one account may hold unpaid at once over all its pending holds, hotel-only and packages; past it the hold is 403 stay-limit. A second unpaid hold of the same property on a night the account already holds is 409 stay-already-held. 0 is read as 8."`

	SagaMaxLatency      time.Duration `env:"ENCORE_SAGA_MAX_LATENCY" default:"5s" doc:"Backpressure: mean time of a checkout's call into the booking saga (start, fraud, authorisation) over 10s, over every process, past which checkouts and holds on unmetered events answer 503 unavailable with Retry-After."`
	SagaMaxErrorPercent int           `env:"ENCORE_SAGA_MAX_ERROR_PERCENT" default:"50" doc:"Backpressure: share (percent) of checkout calls over 10s that got no answer from the saga (Temporal down or overloaded) past which the same 503 applies."`
	SagaMaxInFlight     int64         `env:"ENCORE_SAGA_MAX_IN_FLIGHT" default:"256" doc:"Backpressure: checkout calls waiting on the saga at once, over every process, past which the same 503 applies."`
	SagaMaxBacklog      time.Duration `env:"ENCORE_SAGA_MAX_BACKLOG" default:"10s" doc:"Backpressure: age of the oldest booking workflow task no worker has picked up (probed every second) past which the same 503 applies."`
	SagaRetryAfter      time.Duration `env:"ENCORE_SAGA_RETRY_AFTER" default:"5s" doc:"Backpressure: the Retry-After of those 503 answers."`

	RoomCapacity            int           `env:"ENCORE_ROOM_CAPACITY" default:"100" doc:"Waiting room: fans inside checkout at once per metered event (the adaptive mode starts here and stays between a tenth and four times it)."`
	RoomBatch               int           `env:"ENCORE_ROOM_BATCH" default:"10" doc:"Waiting room: most fans admitted per tick, so freed capacity never releases a thundering herd."`
	RoomTick                time.Duration `env:"ENCORE_ROOM_TICK" default:"1s" doc:"Waiting room: admission tick; one elected admitter per event runs each tick."`
	RoomAdaptive            bool          `env:"ENCORE_ROOM_ADAPTIVE" default:"true" doc:"Waiting room: lower or raise capacity every 10s from the booking saga's checkout latency and errors (shared by every process) and payment errors (AIMD; see waitingroom.Controller)."`
	ControlsPoll            time.Duration `env:"ENCORE_CONTROLS_POLL" default:"500ms" doc:"How often every process reads the operator's changed dials (PATCH /v1/admin/events/{id}/controls): a change is in force everywhere within this interval plus one query."`
	RoomPassTTL             time.Duration `env:"ENCORE_ROOM_PASS_TTL" default:"5m" doc:"Waiting room: lifetime of an admission pass and of the admission window (at most 5m)."`
	RoomRechoose            time.Duration `env:"ENCORE_ROOM_RECHOOSE" default:"1m" doc:"Waiting room: how long a fan whose hold ended unpaid (released, expired, declined) keeps their place inside checkout to choose again, within the admission window; then it goes to the next fan in line."`
	TransferTTL             time.Duration `env:"ENCORE_TRANSFER_TTL" default:"168h" doc:"Ticket transfers: how long an offer waits for its recipient to accept."`
	TransferPerTicket       int           `env:"ENCORE_TRANSFER_PER_TICKET" default:"3" doc:"Ticket transfers: how many times one place may change hands (against touting); 0 for no limit."`
	TransferOpenPerFan      int           `env:"ENCORE_TRANSFER_OPEN_PER_FAN" default:"10" doc:"Ticket transfers: how many offers one fan may have open at once; 0 for no limit."`
	ResaleListingsPerTicket int           `env:"ENCORE_RESALE_LISTINGS_PER_TICKET" default:"5" doc:"Resale: how many times one holder may list the same ticket (withdrawn or expired listings count); 0 for no limit."`
	ResaleActivePerFan      int           `env:"ENCORE_RESALE_ACTIVE_PER_FAN" default:"10" doc:"Resale: how many listings one fan may have open at once; 0 for no limit."`
	ResaleWaitlistFirst     time.Duration `env:"ENCORE_RESALE_WAITLIST_FIRST" default:"10m" doc:"Resale: how long the first fan on an event's waitlist has a new listing before anyone else; 0 for no first offer."`
	RoomPassSeed            Secret        `env:"ENCORE_ROOM_PASS_SEED" default:"dev-admission-pass-seed-change-me" use:"api worker" doc:"Waiting room: secret from which the Ed25519 key that signs admission passes is derived (SHA-256). The default is for development only."`
	RoomJoinPerMinute       int           `env:"ENCORE_ROOM_JOIN_PER_MINUTE" default:"30" doc:"Waiting room: joins (and socket connects) one account may make per minute per event before 429 rate-limited."`
	RoomJoinIPPerMinute     int           `env:"ENCORE_ROOM_JOIN_IP_PER_MINUTE" default:"120" doc:"Waiting room: joins one IP address may make per minute per event; also the per-IP limit of holds and checkouts."`
	RoomPowDifficulty       int           `env:"ENCORE_ROOM_POW_DIFFICULTY" default:"20" doc:"Waiting room: leading zero bits of the proof of work asked of risky clients on join (20 is about a million SHA-256 hashes)."`

	ReaderDatabaseURL Secret        `env:"ENCORE_READER_DATABASE_URL" default:"" doc:"Browse plane: PostgreSQL URL of a login that may only read (encore_reader, made by encore db logins, or a member of it). Empty: the main database URL, each connection switching to the encore_reader role (SET ROLE) with read-only transactions."`
	ReaderMaxConns    int32         `env:"ENCORE_READER_MAX_CONNS" default:"4" doc:"Browse plane: connections of the read-only pool (search, event pages, seat-map cache fills)."`
	SeatMapCacheTTL   time.Duration `env:"ENCORE_SEATMAP_CACHE_TTL" default:"2s" doc:"Browse plane: how long a section's seat-map snapshot lives in Redis; the outbox relay deletes it sooner when the section changes."`
	SeatMapLocalTTL   time.Duration `env:"ENCORE_SEATMAP_LOCAL_TTL" default:"500ms" doc:"Browse plane: how long an API process keeps a hot seat-map snapshot in memory; the invalidation that reaches viewers drops it at once. 0 disables."`
	RelayInterval     time.Duration `env:"ENCORE_RELAY_INTERVAL" default:"50ms" doc:"Outbox relay: pause between polls when idle (the one active relay runs in encore worker and encore dev)."`

	// The browse plane's flood limits (api/reads.go, catalog.Service.Guard).
	ReadPerIPPerMinute int           `env:"ENCORE_READ_PER_IP_PER_MINUTE" default:"300" doc:"Browse plane: requests one client address (an IPv6 client by its /64) may make per minute to each class of the routes that need no login (search, suggest, event pages, seat maps), in bursts of a sixth, over every API process; past it 429 rate-limited with Retry-After."`
	ReadSlots          int           `env:"ENCORE_READ_SLOTS" default:"1" doc:"Browse plane: reads of one class (suggest, search, event pages) that may use the read-only pool at once per process. Keep three times this below ENCORE_READER_MAX_CONNS, so a flood of every class still leaves connections to seat-map fills."`
	ReadQueue          int           `env:"ENCORE_READ_QUEUE" default:"16" doc:"Browse plane: reads of one class that may wait for a slot per process; past it 503 unavailable with Retry-After at once."`
	ReadWait           time.Duration `env:"ENCORE_READ_WAIT" default:"100ms" doc:"Browse plane: how long a read waits for its class's slot before 503 unavailable with Retry-After."`
	SuggestCacheTTL    time.Duration `env:"ENCORE_SUGGEST_CACHE_TTL" default:"30s" doc:"Browse plane: how long an API process reuses the suggestions of one normalised prefix (in memory, at most 10,000 prefixes); a new event is suggested within it. 0 disables."`

	PSPAddr              string `env:"ENCORE_PSP_ADDR" default:"127.0.0.1:12111" doc:"Address of the built-in payment sandbox that encore dev and encore psp start."`
	PSPWebhookURL        string `env:"ENCORE_PSP_WEBHOOK_URL" default:"" doc:"Where the payment sandbox (encore psp, encore dev) posts its signed events. Empty: ENCORE_PUBLIC_URL + /v1/webhooks/stripe. In compose the sandbox reaches the API by its service name."`
	StripeAPIURL         string `env:"ENCORE_STRIPE_API_URL" default:"" doc:"Base URL stripe-go talks to. Empty: the sandbox at ENCORE_PSP_ADDR, or Stripe itself when ENCORE_STRIPE_KEY is a live or test key of a real account."`
	StripeKey            Secret `env:"ENCORE_STRIPE_KEY" default:"sk_test_encore_sandbox" use:"api worker" generate:"provider" doc:"Stripe secret key. The default is the sandbox's key."`
	StripePublishableKey string `env:"ENCORE_STRIPE_PUBLISHABLE_KEY" default:"pk_test_encore_sandbox" doc:"Stripe publishable key, handed to the web app's payment form (GET /v1/payments/config). With a real ENCORE_STRIPE_KEY it must be of the same mode (pk_live_ with sk_live_, pk_test_ with sk_test_): production refuses to start otherwise. The default is the sandbox's."`
	StripeWebhookSecret  Secret `env:"ENCORE_STRIPE_WEBHOOK_SECRET" default:"whsec_encore_sandbox" use:"api" generate:"provider" doc:"Secret that verifies Stripe-Signature on webhooks."`

	TicketSealingKey    Secret `env:"ENCORE_TICKET_SEALING_KEY" default:"f9317ccd4c5ce67ef314a19ac2ffb6febd1370422dcb1e633cfc4d5ac89922ec" use:"api worker manifest" doc:"AES-256 key (64 hex characters or base64) that seals each ticket's QR secret in the database. The default is for development only."`
	ManifestKey         Secret `env:"ENCORE_MANIFEST_KEY" default:"6ceb22d78589b2d94c8744777d7f1fc56cb21ed0cb881759c4760b37cfe92178" use:"manifest gate" doc:"AES-256 key (64 hex characters or base64) that encrypts the venue gate manifest; the gate needs the same key. The default is for development only."`
	ManifestSigningSeed Secret `env:"ENCORE_MANIFEST_SIGNING_SEED" default:"4e7b8343644a3286e97dd7479537d071cbfcb28bc7140fff5ae310d85a9dc8bf" use:"manifest" doc:"Ed25519 seed (64 hex characters or base64) that signs manifests; the gate verifies with its public key (or encore gate --verify-key). The default is for development only."`
	GateVerifyKey       string `env:"ENCORE_GATE_VERIFY_KEY" default:"" doc:"Ed25519 public key (64 hex characters) the gate verifies manifests with, as encore keys generate prints it (encore gate --verify-key overrides it). Required in production; empty in development: derived from ENCORE_MANIFEST_SIGNING_SEED."`
	GateTokens          Secret `env:"ENCORE_GATE_TOKENS" default:"" doc:"Credentials of the scanners that may call the gate's POST /v1/scan: comma-separated device:token, each token at least 32 bytes, sent as Authorization: Bearer token (encore gate token DEVICE makes a pair). Required outside development; empty in development: encore gate makes one for device dev per run and writes it to ENCORE_DATA_DIR/gate/dev.token."`
	GateAddr            string `env:"ENCORE_GATE_ADDR" default:"127.0.0.1:8090" doc:"Address of the venue gate service (encore gate): the scanner app at /, /healthz, /v1/scan and /metrics."`
	GateReportURL       string `env:"ENCORE_GATE_REPORT_URL" default:"" doc:"Base URL of the Encore API a gate reports its admissions and exits to, for the organiser's Door page (POST /v1/admin/events/{id}/door/scans), every 5s while it can reach it; the gate admits on its own either way. Empty: no reports."`
	GateReportToken     Secret `env:"ENCORE_GATE_REPORT_TOKEN" default:"" doc:"Bearer token (an organiser's of the event, or an admin's) the gate reports its scans with (ENCORE_GATE_REPORT_URL)."`

	FraudIPSecret Secret `env:"ENCORE_FRAUD_IP_SECRET" default:"dev-fraud-ip-secret-change-me" doc:"Secret of the keyed hash (HMAC-SHA256) that stands for a fan's IP address in fraud records and workflow history: the IP velocity rule counts the hash, never the address. Changing it restarts the per-IP counts. The default is for development only."`

	SMTPURL         Secret        `env:"ENCORE_SMTP_URL" default:"" doc:"SMTP server for fans' emails, as smtp://user:password@host:587 (STARTTLS when the server offers it) or smtps://user:password@host:465 (TLS from the start); user and password optional. Takes precedence over ENCORE_SMTP_ADDR. Empty, and ENCORE_SMTP_ADDR empty: encore dev's Mailpit, else the mailbox folder."`
	SMTPAddr        string        `env:"ENCORE_SMTP_ADDR" default:"" doc:"SMTP server (host:port, STARTTLS when offered) for fans' emails, with ENCORE_SMTP_USER and ENCORE_SMTP_PASSWORD; ENCORE_SMTP_URL is the newer form and wins. Both empty: encore dev's Mailpit, else emails are written to ENCORE_DATA_DIR/mailbox as .eml files."`
	SMTPFrom        string        `env:"ENCORE_SMTP_FROM" default:"tickets@encore.invalid" doc:"Sender address of fans' emails."`
	SMTPUser        string        `env:"ENCORE_SMTP_USER" default:"" doc:"SMTP user with ENCORE_SMTP_ADDR (empty: no authentication)."`
	SMTPPassword    Secret        `env:"ENCORE_SMTP_PASSWORD" default:"" doc:"SMTP password with ENCORE_SMTP_ADDR."`
	MailpitSMTPAddr string        `env:"ENCORE_MAILPIT_SMTP_ADDR" default:"127.0.0.1:1025" doc:"encore dev: loopback address of the SMTP side of the Mailpit mail catcher it starts (or reuses) when ENCORE_SMTP_URL and ENCORE_SMTP_ADDR are empty; every email of the run goes there."`
	MailpitHTTPAddr string        `env:"ENCORE_MAILPIT_HTTP_ADDR" default:"127.0.0.1:8025" doc:"encore dev: loopback address of Mailpit's web UI and API (GET /api/v1/messages), where the run's emails are read."`
	ReconcileEvery  time.Duration `env:"ENCORE_RECONCILE_EVERY" default:"15m" doc:"How often the reconciliation workflow matches provider payments with bookings."`
	AuditEvery      time.Duration `env:"ENCORE_AUDIT_EVERY" default:"24h" doc:"How often the scheduled inventory audit (workflow AuditInventory, schedule encore-audit) checks seats and room-nights; a broken rule fails the run and is logged at error level."`
	CancelRate      int           `env:"ENCORE_CANCEL_RATE" default:"20" doc:"Bookings a second an event cancellation job refunds."`

	DBMigratorPassword Secret `env:"ENCORE_DB_MIGRATOR_PASSWORD" default:"" generate:"password" doc:"encore db logins only: password it gives the encore_migrator login (owns the schema; encore migrate connects as it)."`
	DBAppPassword      Secret `env:"ENCORE_DB_APP_PASSWORD" default:"" generate:"password" doc:"encore db logins only: password it gives the encore_app login (reads and writes rows, no DDL; encore api and worker connect as it)."`
	DBReaderPassword   Secret `env:"ENCORE_DB_READER_PASSWORD" default:"" generate:"password" doc:"encore db logins only: password it gives the encore_reader login (reads the browse tables; ENCORE_READER_DATABASE_URL)."`

	LogLevel string `env:"ENCORE_LOG_LEVEL" default:"info" doc:"debug, info, warn or error."`
}

// EffectivePublicURL is the base of every link sent to a fan or a provider:
// ENCORE_PUBLIC_URL, or else the API's listen address with an unspecified
// host read as loopback. It must be an absolute http or https URL.
func (c Config) EffectivePublicURL() (string, error) {
	raw := strings.TrimRight(c.PublicURL, "/")
	if raw == "" {
		host, port, err := net.SplitHostPort(c.HTTPAddr)
		if err != nil {
			return "", fmt.Errorf("ENCORE_HTTP_ADDR %q: %w (set ENCORE_PUBLIC_URL)", c.HTTPAddr, err)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		return "http://" + net.JoinHostPort(host, port), nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("ENCORE_PUBLIC_URL %q: must be an absolute http or https URL without query or fragment", c.PublicURL)
	}
	return raw, nil
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
		if oneof := strings.Fields(f.Tag.Get("oneof")); len(oneof) > 0 && !slices.Contains(oneof, raw) {
			return Config{}, fmt.Errorf("config: %s=%q: want one of %s", f.Tag.Get("env"), raw, strings.Join(oneof, ", "))
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
