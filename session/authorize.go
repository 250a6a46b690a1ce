package session

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"sync"
	"time"
)

// The development issuer's authorization code flow with PKCE (RFC 6749
// section 4.1, RFC 7636), for public clients such as the web app: it lets
// the web app's standard OpenID Connect redirect sign-in run against the
// development issuer, with no outside identity provider. Anyone may still
// sign in as anyone: it is the demo login behind a standard protocol.

// CodeTTL is how long an authorization code may be exchanged.
const CodeTTL = 60 * time.Second

// maxPendingCodes bounds the codes held at once: a flood of authorizations
// cannot grow the issuer's memory without limit.
const maxPendingCodes = 10000

// Scopes are the scopes the development issuer supports.
var Scopes = []string{"openid", "email", "profile"}

// AuthRequest is an authorization request, as CheckAuthRequest accepted
// it.
type AuthRequest struct {
	ClientID    string
	RedirectURI string
	State       string
	Nonce       string
	Scope       string
	// CodeChallenge is the S256 PKCE challenge: base64url(SHA-256(verifier)).
	CodeChallenge string
}

// AuthError is an OAuth 2.0 error: Code is its "error", Description its
// "error_description".
type AuthError struct {
	Code, Description string
	// Redirect is true when the error may be sent to the client's
	// redirect URI; false when the client or the redirect URI itself is in
	// doubt, so the error is shown to the user instead (RFC 6749 section
	// 4.1.2.1: never redirect to an unchecked URI).
	Redirect bool
}

func (e *AuthError) Error() string { return e.Code + ": " + e.Description }

// TokenResponse is the token endpoint's answer (RFC 6749 section 5.1,
// OpenID Connect Core section 3.1.3.3).
type TokenResponse struct {
	AccessToken string `json:"access_token"`
	IDToken     string `json:"id_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
	Scope       string `json:"scope,omitempty"`
}

// grant is an issued authorization code's binding: who signed in, for
// which client, redirect URI, PKCE challenge and nonce, until when.
type grant struct {
	req     AuthRequest
	id      Identity
	expires time.Time
}

// codes holds the issued codes in memory. The development issuer serves one
// process (encore dev), a code lives a minute and is used once, seconds
// after it is issued, in the same process that issued it; a restart only
// means signing in again. Several API replicas with the demo login on
// (staging) would need sticky sessions for the exchange or a shared store.
type codes struct {
	mu      sync.Mutex
	pending map[string]grant
}

// pkcePattern is a PKCE value: a code verifier (43 to 128 unreserved
// characters, RFC 7636 section 4.1) or an S256 challenge (exactly 43).
var pkcePattern = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// SetClock replaces the issuer's clock for codes and tokens (default
// time.Now): tests let a code expire without waiting.
func (i *Issuer) SetClock(now func() time.Time) { i.now = now }

func (i *Issuer) clock() time.Time {
	if i.now != nil {
		return i.now()
	}
	return time.Now()
}

// AuthorizeURL is the issuer's authorization endpoint.
func (i *Issuer) AuthorizeURL() string { return i.url + "/authorize" }

// TokenURL is the issuer's token endpoint.
func (i *Issuer) TokenURL() string { return i.url + "/token" }

// CheckAuthRequest checks an authorization request's parameters, read with
// get: a client ID, a redirect URI on the issuer's own origin or a loopback
// address (so the issuer never becomes an open redirect), response_type
// code and an S256 PKCE challenge (a plain or missing one is refused:
// without S256 an intercepted code could be exchanged).
func (i *Issuer) CheckAuthRequest(get func(string) string) (AuthRequest, *AuthError) {
	req := AuthRequest{ClientID: get("client_id"), RedirectURI: get("redirect_uri"), State: get("state"),
		Nonce: get("nonce"), Scope: get("scope"), CodeChallenge: get("code_challenge")}
	if !plain(req.ClientID, 255) {
		return req, &AuthError{Code: "invalid_request", Description: "client_id is missing or malformed"}
	}
	if err := i.checkRedirect(req.RedirectURI); err != nil {
		return req, &AuthError{Code: "invalid_request", Description: err.Error()}
	}
	if len(req.State) > 512 || len(req.Nonce) > 512 || len(req.Scope) > 512 {
		return req, &AuthError{Code: "invalid_request", Description: "state, nonce and scope are at most 512 bytes each", Redirect: true}
	}
	if rt := get("response_type"); rt != "code" {
		return req, &AuthError{Code: "unsupported_response_type", Description: "only response_type=code is supported", Redirect: true}
	}
	if get("code_challenge_method") != "S256" || len(req.CodeChallenge) != 43 || !pkcePattern.MatchString(req.CodeChallenge) {
		return req, &AuthError{Code: "invalid_request", Description: "a PKCE code_challenge with code_challenge_method=S256 is required", Redirect: true}
	}
	return req, nil
}

// checkRedirect accepts an absolute http(s) URI without fragment or user
// info whose origin is the issuer's own or whose host is a loopback address.
func (i *Issuer) checkRedirect(raw string) error {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" || len(raw) > 2048 {
		return fmt.Errorf("redirect_uri must be an absolute http or https URI without fragment")
	}
	own, err := url.Parse(i.url)
	if err == nil && u.Scheme == own.Scheme && u.Host == own.Host {
		return nil
	}
	if loopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("redirect_uri must be on %s://%s or a loopback address", own.Scheme, own.Host)
}

// Authorize issues a one-time code for id, bound to the request; it may be
// exchanged once, within CodeTTL.
func (i *Issuer) Authorize(req AuthRequest, id Identity) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	code := base64.RawURLEncoding.EncodeToString(b)
	now := i.clock()
	i.codes.mu.Lock()
	defer i.codes.mu.Unlock()
	for c, g := range i.codes.pending {
		if now.After(g.expires) {
			delete(i.codes.pending, c)
		}
	}
	if len(i.codes.pending) >= maxPendingCodes {
		return "", &AuthError{Code: "temporarily_unavailable", Description: "too many sign-ins in progress", Redirect: true}
	}
	i.codes.pending[code] = grant{req: req, id: id, expires: now.Add(CodeTTL)}
	return code, nil
}

// Exchange redeems a code at the token endpoint (form values read with
// get): grant_type authorization_code, the code (once only: it is gone
// after its first presentation, right or wrong), the client ID and
// redirect URI it was issued for, and the PKCE verifier of its challenge.
// It returns an access token for the API's audience and an ID token for the
// client.
func (i *Issuer) Exchange(get func(string) string) (TokenResponse, *AuthError) {
	invalid := func(why string) (TokenResponse, *AuthError) {
		return TokenResponse{}, &AuthError{Code: "invalid_grant", Description: why}
	}
	if gt := get("grant_type"); gt != "authorization_code" {
		return TokenResponse{}, &AuthError{Code: "unsupported_grant_type", Description: "only grant_type=authorization_code is supported"}
	}
	now := i.clock()
	i.codes.mu.Lock()
	g, ok := i.codes.pending[get("code")]
	delete(i.codes.pending, get("code"))
	i.codes.mu.Unlock()
	switch {
	case !ok:
		return invalid("the code is unknown or was already used")
	case now.After(g.expires):
		return invalid("the code has expired")
	case get("client_id") != g.req.ClientID:
		return invalid("the code was issued to another client")
	case get("redirect_uri") != g.req.RedirectURI:
		return invalid("redirect_uri differs from the authorization request's")
	}
	verifier := get("code_verifier")
	sum := sha256.Sum256([]byte(verifier))
	if !pkcePattern.MatchString(verifier) ||
		subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(g.req.CodeChallenge)) != 1 {
		return invalid("code_verifier does not match the code_challenge")
	}
	access, err := i.Mint(g.id, now)
	if err != nil {
		return TokenResponse{}, &AuthError{Code: "server_error", Description: "the token could not be signed"}
	}
	idToken, err := i.mintIDToken(g, now)
	if err != nil {
		return TokenResponse{}, &AuthError{Code: "server_error", Description: "the token could not be signed"}
	}
	return TokenResponse{AccessToken: access, IDToken: idToken, TokenType: "Bearer",
		ExpiresIn: int(TTL / time.Second), Scope: g.req.Scope}, nil
}

// idClaims are an ID token's claims (OpenID Connect Core section 2): its
// audience is the client, and its nonce the one the client sent.
type idClaims struct {
	devClaims
	Nonce    string `json:"nonce,omitempty"`
	AuthTime int64  `json:"auth_time"`
}

func (i *Issuer) mintIDToken(g grant, now time.Time) (string, error) {
	return i.sign(idClaims{devClaims: i.claims(g.id, g.req.ClientID, now), Nonce: g.req.Nonce, AuthTime: now.Unix()})
}
