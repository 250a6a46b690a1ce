// Package pass mints and verifies admission passes: EdDSA (Ed25519) JWTs,
// valid for at most MaxTTL, bound to one user, one device and one event, and
// naming the server-side lease they were minted for. Minting needs the private
// key; verifying needs only the public key, so the booking plane (or a gateway)
// can check a pass and can never mint one.
//
// A pass alone is not enough to hold seats: a signature cannot be revoked, so
// the waiting room also keeps a lease in Redis whose ID must match the pass's
// "jti". Revoking the lease kills the pass.
package pass

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MaxTTL is the longest a pass may live, as the admission design fixes it (docs/ARCHITECTURE.md).
const MaxTTL = 5 * time.Minute

// MaxLen bounds a pass before any parsing: a real one is about 400 bytes.
const MaxLen = 2048

const (
	issuer   = "encore-waiting-room"
	audience = "encore-holds"
	leeway   = 5 * time.Second
)

// Claims are what a pass says.
type Claims struct {
	UserID    string
	DeviceID  string
	EventID   string
	LeaseID   string
	IssuedAt  time.Time
	ExpiresAt time.Time
}

type jwtClaims struct {
	Event  string `json:"evt"`
	Device string `json:"dev"`
	jwt.RegisteredClaims
}

// Errors of Verify. Every failure wraps ErrInvalid.
var (
	ErrInvalid  = errors.New("pass: invalid")
	ErrMismatch = fmt.Errorf("%w: bound to another user, device or event", ErrInvalid)
)

// KeyFromSeed derives the signing key from a configured secret of any length
// (the SHA-256 of it is the Ed25519 seed), so a development default can be a
// readable string and production a long random one.
func KeyFromSeed(secret string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("encore admission pass v1\x00" + secret))
	return ed25519.NewKeyFromSeed(seed[:])
}

// Signer mints passes. It never exposes its key; String is redacted.
type Signer struct {
	key ed25519.PrivateKey
	ttl time.Duration
}

// NewSigner returns a signer whose passes live ttl (capped at MaxTTL).
func NewSigner(key ed25519.PrivateKey, ttl time.Duration) *Signer {
	if ttl <= 0 || ttl > MaxTTL {
		ttl = MaxTTL
	}
	return &Signer{key: key, ttl: ttl}
}

func (s *Signer) String() string { return "pass.Signer{[redacted]}" }

// TTL is the longest pass this signer mints.
func (s *Signer) TTL() time.Duration { return s.ttl }

// PublicKey is what verifiers need.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Verifier returns a verifier for this signer's public key.
func (s *Signer) Verifier() *Verifier { return NewVerifier(s.PublicKey()) }

// Sign mints a pass for c, expiring at the earlier of c.ExpiresAt and
// IssuedAt+TTL. It returns the pass and its expiry.
func (s *Signer) Sign(c Claims) (string, time.Time, error) {
	if c.UserID == "" || c.DeviceID == "" || c.EventID == "" || c.LeaseID == "" {
		return "", time.Time{}, errors.New("pass: user, device, event and lease are required")
	}
	iat := c.IssuedAt.Truncate(time.Second)
	exp := iat.Add(s.ttl)
	if !c.ExpiresAt.IsZero() && c.ExpiresAt.Before(exp) {
		exp = c.ExpiresAt.Truncate(time.Second)
	}
	if !exp.After(iat) {
		return "", time.Time{}, errors.New("pass: already expired")
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwtClaims{
		Event: c.EventID, Device: c.DeviceID,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: issuer, Subject: c.UserID, Audience: jwt.ClaimStrings{audience},
			IssuedAt: jwt.NewNumericDate(iat), NotBefore: jwt.NewNumericDate(iat),
			ExpiresAt: jwt.NewNumericDate(exp), ID: c.LeaseID,
		},
	})
	signed, err := tok.SignedString(s.key)
	return signed, exp, err
}

// Verifier checks passes with a public key only.
type Verifier struct{ pub ed25519.PublicKey }

// NewVerifier returns a verifier for pub.
func NewVerifier(pub ed25519.PublicKey) *Verifier { return &Verifier{pub: pub} }

// Verify checks the signature (EdDSA only: "none", HMAC and every other
// algorithm are refused), issuer, audience, times and lifetime, and returns
// the claims. It does not check the binding or the lease: see Claims.Bound.
func (v *Verifier) Verify(token string, now time.Time) (Claims, error) {
	if token == "" || len(token) > MaxLen {
		return Claims{}, ErrInvalid
	}
	var jc jwtClaims
	_, err := jwt.ParseWithClaims(token, &jc, func(t *jwt.Token) (any, error) { return v.pub, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithIssuer(issuer), jwt.WithAudience(audience),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway), jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if jc.IssuedAt == nil || jc.Subject == "" || jc.Event == "" || jc.Device == "" || jc.ID == "" {
		return Claims{}, fmt.Errorf("%w: missing claims", ErrInvalid)
	}
	c := Claims{UserID: jc.Subject, DeviceID: jc.Device, EventID: jc.Event, LeaseID: jc.ID,
		IssuedAt: jc.IssuedAt.Time, ExpiresAt: jc.ExpiresAt.Time}
	// A pass that claims a longer life than any we mint is refused even if
	// signed: a misconfigured issuer must not hand out long-lived passes.
	if c.ExpiresAt.Sub(c.IssuedAt) > MaxTTL {
		return Claims{}, fmt.Errorf("%w: lifetime over %s", ErrInvalid, MaxTTL)
	}
	return c, nil
}

// Bound reports whether the pass belongs to this user, device and event.
func (c Claims) Bound(userID, deviceID, eventID string) error {
	if c.UserID != userID || c.DeviceID != deviceID || c.EventID != eventID {
		return ErrMismatch
	}
	return nil
}
