package session

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// DefaultAudience is the audience of the development issuer's tokens unless
// another is configured (ENCORE_OIDC_AUDIENCE's default).
const DefaultAudience = "encore"

// DevIssuerPath is where the API serves the development issuer, under its
// own origin.
const DevIssuerPath = "/dev/oidc"

// Issuer is the development OpenID Connect issuer: it mints the demo login's
// tokens and publishes its one public key as a JWKS. Its Ed25519 key is
// derived from a secret, so tokens survive restarts. It is for development
// only: whoever calls the demo login gets any identity they ask for.
type Issuer struct {
	url, audience string
	key           ed25519.PrivateKey
	kid           string
	jwks          []byte
	verifier      *Verifier
	// codes are the authorization codes issued and not yet exchanged
	// (authorize.go); now is the clock (nil: time.Now).
	codes *codes
	now   func() time.Time
}

// NewIssuer returns a development issuer for secret at a placeholder URL and
// the default audience: for tests, which verify its tokens with
// Issuer.Verifier.
func NewIssuer(secret string) *Issuer {
	return NewIssuerAt(secret, "http://127.0.0.1:8080"+DevIssuerPath, DefaultAudience)
}

// NewIssuerAt returns the development issuer whose issuer URL is issuerURL
// (the API's public origin + DevIssuerPath) and whose tokens are for
// audience.
func NewIssuerAt(secret, issuerURL, audience string) *Issuer {
	seed := sha256.Sum256([]byte("encore development OpenID Connect issuer\x00" + secret))
	key := ed25519.NewKeyFromSeed(seed[:])
	pub := key.Public().(ed25519.PublicKey)
	thumb := sha256.Sum256(pub)
	i := &Issuer{url: issuerURL, audience: audience, key: key, kid: "dev-" + base64.RawURLEncoding.EncodeToString(thumb[:9]),
		codes: &codes{pending: map[string]grant{}}}
	i.jwks, _ = json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(pub),
		"kid": i.kid, "alg": "EdDSA", "use": "sig",
	}}})
	keys, err := keyfunc.NewJWKSetJSON(i.jwks)
	if err != nil {
		panic(fmt.Sprintf("session: the development JWKS does not parse: %v", err)) // a programming error
	}
	i.verifier = newVerifier(issuerURL, audience, keys)
	return i
}

// URL is the issuer URL its tokens name.
func (i *Issuer) URL() string { return i.url }

// Verifier verifies the issuer's tokens with its key set, held in memory:
// the same checks as any issuer's (newVerifier).
func (i *Issuer) Verifier() *Verifier { return i.verifier }

// JWKS is the issuer's public key set, as served at jwks.json.
func (i *Issuer) JWKS() []byte { return i.jwks }

// Discovery is the issuer's OpenID Connect discovery document: the
// authorization code flow with PKCE (S256) for public clients, which
// authenticate with no secret.
func (i *Issuer) Discovery() map[string]any {
	return map[string]any{
		"issuer":                                i.url,
		"jwks_uri":                              i.url + "/jwks.json",
		"authorization_endpoint":                i.AuthorizeURL(),
		"token_endpoint":                        i.TokenURL(),
		"code_challenge_methods_supported":      []string{"S256"},
		"grant_types_supported":                 []string{"authorization_code"},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported":                      Scopes,
		"id_token_signing_alg_values_supported": []string{"EdDSA"},
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"claims_supported":                      []string{"sub", "email", "roles", "org", "device_id", "nonce", "auth_time"},
	}
}

// devClaims are the claims the development issuer signs.
type devClaims struct {
	jwt.RegisteredClaims
	Email    string   `json:"email,omitempty"`
	Roles    []string `json:"roles,omitempty"`
	Org      string   `json:"org,omitempty"`
	DeviceID string   `json:"device_id,omitempty"`
}

// Mint signs a token for id, valid for TTL from now. Ed25519 signatures are
// deterministic: the same identity and instant give the same token.
func (i *Issuer) Mint(id Identity, now time.Time) (string, error) {
	return i.sign(i.claims(id, i.audience, now))
}

// claims are id's claims for audience, valid for TTL from now.
func (i *Issuer) claims(id Identity, audience string, now time.Time) devClaims {
	c := devClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: i.url, Subject: id.UserID, Audience: jwt.ClaimStrings{audience},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(TTL)),
		},
		Email: id.Email, Org: id.Org, DeviceID: id.DeviceID,
	}
	for _, r := range id.Roles {
		c.Roles = append(c.Roles, string(r))
	}
	return c
}

// sign signs c with the issuer's key, naming the key in the header.
func (i *Issuer) sign(c jwt.Claims) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	t.Header["kid"] = i.kid
	return t.SignedString(i.key)
}

// Issue mints a fan's token for a user on a device (no email, no roles).
func (i *Issuer) Issue(userID, deviceID string, now time.Time) string {
	tok, err := i.Mint(Identity{UserID: userID, DeviceID: deviceID}, now)
	if err != nil {
		panic(fmt.Sprintf("session: sign with Ed25519: %v", err)) // cannot fail with a valid key
	}
	return tok
}
