package session

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/encore-tickets/encore/internal/lru"
)

// Algorithms are the only signature algorithms a token may use: asymmetric
// ones, so a verifier's public keys can never be used as an HMAC secret, and
// never "none".
var Algorithms = []string{"RS256", "ES256", "EdDSA"}

// Leeway is the clock skew tolerated on exp, nbf and iat.
const Leeway = 30 * time.Second

// maxTokenBytes bounds what is parsed at all: real ID and access tokens are a
// few kilobytes.
const maxTokenBytes = 8 << 10

// Verifier checks bearer tokens of one issuer and audience against the
// issuer's keys.
type Verifier struct {
	issuer   string
	audience string
	parser   *jwt.Parser
	keys     keyfunc.Keyfunc
	// verified are the tokens this verifier accepted, by the SHA-256 of
	// their bytes, until they expire (verifiedToken).
	verified *lru.Cache[[sha256.Size]byte, verifiedToken]
}

// verifiedTokens bounds the tokens remembered as verified: a fan's page and
// its checkout send the same token request after request.
const verifiedTokens = 16384

// verifiedToken is what a verified token said, and the key that signed it.
// The same bytes, still within their lifetime and signed by a key still in
// the issuer's set, say the same again: Verify answers them without the
// signature's arithmetic (an Ed25519 verification was a fifth of the edge's
// CPU on a hold). A token whose key left the set, or whose kid now names
// other key material, is verified afresh, and refused.
type verifiedToken struct {
	id  Identity
	kid string
	alg string
	key crypto.PublicKey // the key the verification used, not one read after it
}

// newVerifier is the one place the parse options are set: every issuer, the
// development one included, is verified with them.
func newVerifier(issuer, audience string, keys keyfunc.Keyfunc) *Verifier {
	return &Verifier{issuer: issuer, audience: audience, keys: keys,
		verified: lru.New[[sha256.Size]byte, verifiedToken](verifiedTokens), parser: jwt.NewParser(
			jwt.WithValidMethods(Algorithms),
			jwt.WithIssuer(issuer),
			jwt.WithAudience(audience),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(Leeway),
			// One encoding per token: a verified token is byte for byte the
			// one its issuer signed.
			jwt.WithStrictDecoding(),
		)}
}

// Issuer is the issuer URL tokens must name.
func (v *Verifier) Issuer() string { return v.issuer }

// Audience is the audience tokens must name.
func (v *Verifier) Audience() string { return v.audience }

// claims are the parts of a token Encore reads.
type claims struct {
	jwt.RegisteredClaims
	Email    string     `json:"email"`
	Roles    stringList `json:"roles"`
	Org      string     `json:"org"`
	DeviceID string     `json:"device_id"`
	SID      string     `json:"sid"`
}

// Verify checks token's signature (pinned algorithms, a key of the issuer's
// set), issuer, audience and lifetime, and returns who it names. Every
// failure wraps ErrInvalid.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	if len(token) > maxTokenBytes {
		return Identity{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalid, maxTokenBytes)
	}
	sum := sha256.Sum256([]byte(token))
	now := time.Now()
	if hit, ok := v.verified.Get(sum, now); ok {
		if v.stillSigns(ctx, hit) {
			id := hit.id
			id.Roles = slices.Clone(id.Roles) // the caller's to change, not the remembered one
			return id, nil
		}
		v.verified.Remove(sum) // verified afresh below, and refused
	}
	var c claims
	keyOf := v.keys.KeyfuncCtx(ctx)
	var used any // the key the signature was checked with
	tok, err := v.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		k, err := keyOf(t)
		used = k
		return k, err
	})
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if !plain(c.Subject, 255) {
		return Identity{}, fmt.Errorf("%w: sub is missing or malformed", ErrInvalid)
	}
	id := Identity{UserID: c.Subject, Email: address(c.Email), Roles: ParseRoles(c.Roles), DeviceID: DefaultDevice}
	if plain(c.Org, 255) {
		id.Org = c.Org
	}
	for _, d := range []string{c.DeviceID, c.SID} {
		if d == "" {
			continue
		}
		if !plain(d, 128) {
			// An odd device or session ID still names one device.
			sum := sha256.Sum256([]byte(d))
			d = "h:" + hex.EncodeToString(sum[:16])
		}
		id.DeviceID = d
		break
	}
	if c.IssuedAt != nil {
		id.IssuedAt = c.IssuedAt.Unix()
	}
	if kid, _ := tok.Header["kid"].(string); kid != "" && used != nil {
		kept := id
		kept.Roles = slices.Clone(id.Roles)
		// Refused by the parser from exp plus the leeway on: so here.
		v.verified.Add(sum, verifiedToken{id: kept, kid: kid, alg: tok.Method.Alg(), key: used}, c.ExpiresAt.Add(Leeway))
	}
	return id, nil
}

// stillSigns reports whether the key that signed a remembered token is
// still the issuer's signing key of that kid.
func (v *Verifier) stillSigns(ctx context.Context, t verifiedToken) bool {
	key, ok := v.signingKey(ctx, t.kid, t.alg)
	if !ok {
		return false
	}
	k, ok := key.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(t.key)
}

// signingKey is the issuer's key of kid in its current set, when the set
// has one for signatures with alg (or naming no algorithm), as keyfunc
// picks it.
func (v *Verifier) signingKey(ctx context.Context, kid, alg string) (crypto.PublicKey, bool) {
	jwk, err := v.keys.Storage().KeyRead(ctx, kid)
	if err != nil {
		return nil, false
	}
	m := jwk.Marshal()
	if m.USE != jwkset.UseSig && m.USE != "" {
		return nil, false
	}
	if m.ALG != "" && string(m.ALG) != alg {
		return nil, false
	}
	return jwk.Key(), true
}

// plain reports whether s is non-empty, at most max bytes and free of spaces
// and control characters: safe in keys, logs and database rows.
func plain(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

// address is s when it is one bare email address, else empty: the claim ends
// up in an email's To header.
func address(s string) string {
	if s == "" || len(s) > 254 {
		return ""
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s || !plain(s, 254) {
		return ""
	}
	return s
}

// stringList is a claim that issuers write as an array of strings or as one
// string; anything else reads as empty.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var many []string
	if json.Unmarshal(b, &many) == nil {
		*l = many
		return nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil && one != "" {
		*l = []string{one}
		return nil
	}
	*l = nil
	return nil
}

// Options configures a Verifier of an OpenID Connect issuer.
type Options struct {
	// Issuer is the issuer URL, exactly as tokens name it ("iss").
	Issuer string
	// Audience must be among a token's "aud".
	Audience string
	// JWKSURL is where the issuer publishes its keys; empty: the jwks_uri
	// of the issuer's discovery document.
	JWKSURL string
	// Client fetches the discovery document and the keys (default: one with
	// a 10s timeout).
	Client *http.Client
	// RefreshInterval is how often the keys are fetched again, so rotated
	// keys are picked up (default 1h).
	RefreshInterval time.Duration
	// RefetchInterval is the least time between two fetches caused by a
	// token whose key ID is unknown (a key rotated in since the last
	// refresh); tokens with made-up key IDs cannot make the verifier hammer
	// the issuer (default 1m).
	RefetchInterval time.Duration
	// Log reports failed refreshes (default slog.Default()).
	Log *slog.Logger
}

// Discover builds a verifier for an OpenID Connect issuer: it reads the
// issuer's discovery document for its jwks_uri (unless Options.JWKSURL is
// set) and fetches the keys once. The keys are refreshed until ctx ends.
func Discover(ctx context.Context, o Options) (*Verifier, error) {
	if o.Issuer == "" || o.Audience == "" {
		return nil, errors.New("session: an issuer and an audience are required")
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = time.Hour
	}
	if o.RefetchInterval <= 0 {
		o.RefetchInterval = time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.JWKSURL == "" {
		var err error
		if o.JWKSURL, err = discoverJWKS(ctx, o.Client, o.Issuer); err != nil {
			return nil, err
		}
	}
	if err := secureURL(o.JWKSURL); err != nil {
		return nil, fmt.Errorf("session: JWKS URL: %w", err)
	}
	firstErr := false // fail now, not on the first fan's request
	keys, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{o.JWKSURL}, keyfunc.Override{
		Client:                    o.Client,
		HTTPTimeout:               10 * time.Second,
		NoErrorReturnFirstHTTPReq: &firstErr,
		RefreshInterval:           o.RefreshInterval,
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(o.RefetchInterval), 1),
		// Bounds the refetch and the wait for the limiter: a token with an
		// unknown key ID is refused at once when the next refetch is
		// further away than this (the default RefetchInterval is).
		RateLimitWaitMax: 5 * time.Second,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(ctx context.Context, err error) {
				o.Log.WarnContext(ctx, "refresh the identity provider's keys", "url", u, "err", err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("session: fetch the keys at %s: %w", o.JWKSURL, err)
	}
	return newVerifier(o.Issuer, o.Audience, signingKeysOnly(keys)), nil
}

// signingKeysOnly refuses keys the issuer marked for encryption.
func signingKeysOnly(k keyfunc.Keyfunc) keyfunc.Keyfunc {
	only, err := keyfunc.New(keyfunc.Options{Storage: k.Storage(), UseWhitelist: []jwkset.USE{jwkset.UseSig, ""}})
	if err != nil {
		return k // unreachable: the storage is not nil
	}
	return only
}

// discoverJWKS reads the issuer's discovery document and returns its
// jwks_uri.
func discoverJWKS(ctx context.Context, client *http.Client, issuer string) (string, error) {
	if err := secureURL(issuer); err != nil {
		return "", fmt.Errorf("session: issuer: %w", err)
	}
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("session: discovery: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("session: discovery at %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("session: discovery at %s: status %d", u, resp.StatusCode)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return "", fmt.Errorf("session: discovery at %s: %w", u, err)
	}
	// OpenID Connect Discovery 1.0, section 4.3: the document must name the
	// issuer it was fetched for.
	if doc.Issuer != issuer {
		return "", fmt.Errorf("session: discovery at %s names issuer %q, not %q", u, doc.Issuer, issuer)
	}
	if doc.JWKSURI == "" {
		return "", fmt.Errorf("session: discovery at %s has no jwks_uri", u)
	}
	return doc.JWKSURI, nil
}

// secureURL accepts https URLs, and http ones only to a loopback host (a
// development issuer or a test's).
func secureURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && loopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q is not an https URL (http is allowed to loopback only)", raw)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
