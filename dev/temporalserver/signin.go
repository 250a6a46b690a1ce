package temporalserver

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"
	"github.com/temporalio/ui-server/v2/server/auth"
	"golang.org/x/oauth2"
)

// SignIn is where the Web UI signs its users in: an OpenID Connect issuer,
// with the authorization code flow and PKCE (S256), as a public client (no
// secret). In development that is the development issuer the API serves at
// /dev/oidc, whose page lets you pick a user and a role; otherwise
// ENCORE_OIDC_ISSUER, where the UI must be registered as a public client
// with the redirect URI <UI origin>/auth/sso/callback.
type SignIn struct {
	// Issuer is the issuer URL; its discovery document is read at the
	// first sign-in (and again after a failure), not at start: in encore
	// dev the issuer is the API, which starts after the UI.
	Issuer string
	// ClientID is the UI's client ID at the issuer, default DefaultUIClientID.
	ClientID string
	// Scopes default to openid, email and profile.
	Scopes []string

	callbackURL string
}

// DefaultUIClientID is the Web UI's client ID unless configured.
const DefaultUIClientID = "temporal-ui"

// noIssuer stands in for the issuer URL in the UI's settings when none is
// configured: the sign-in then says so.
const noIssuer = "http://127.0.0.1/no-issuer-configured"

func (s SignIn) withDefaults(uiOrigin string) SignIn {
	if s.ClientID == "" {
		s.ClientID = DefaultUIClientID
	}
	if len(s.Scopes) == 0 {
		s.Scopes = []string{oidc.ScopeOpenID, "email", "profile"}
	}
	if s.Issuer == "" {
		s.Issuer = noIssuer
	}
	s.callbackURL = uiOrigin + "/auth/sso/callback"
	return s
}

// signInRoutes serve /auth/sso (to the issuer), /auth/sso/callback (the
// code exchanged for tokens, handed to the UI's pages in the ui-server's
// own cookies, auth.SetUser) and /auth/logout. They replace ui-server's
// route.SetAuthRoutes (v2.54.1), which fits everything else but two
// things: it sends no PKCE challenge (the development issuer, like any
// issuer for a public client, requires S256) and it reads the issuer's
// discovery document when the UI starts and exits the process when that
// fails (in encore dev the API that serves the issuer starts after the UI).
type signInRoutes struct {
	cfg SignIn

	mu       sync.Mutex
	provider *oidc.Provider
}

func newSignInRoutes(cfg SignIn) *signInRoutes { return &signInRoutes{cfg: cfg} }

func (r *signInRoutes) register(e *echo.Echo) {
	g := e.Group("/auth")
	g.GET("/sso", r.start)
	g.GET("/sso/callback", r.callback)
	g.GET("/sso_callback", r.callback) // ui-server's compatibility path
	g.GET("/logout", r.logout)
}

// discover returns the issuer's provider, reading its discovery document
// on first use and after a failure.
func (r *signInRoutes) discover(ctx context.Context) (*oidc.Provider, error) {
	if r.cfg.Issuer == noIssuer {
		return nil, fmt.Errorf("no identity provider is configured: set ENCORE_OIDC_ISSUER, or run encore dev (its development issuer)")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.provider != nil {
		return r.provider, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, r.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("the identity provider %s does not answer (is the API running?): %w", r.cfg.Issuer, err)
	}
	r.provider = p
	return p, nil
}

func (r *signInRoutes) oauth(p *oidc.Provider) *oauth2.Config {
	ep := p.Endpoint()
	ep.AuthStyle = oauth2.AuthStyleInParams // a public client: client_id in the form, no secret
	return &oauth2.Config{ClientID: r.cfg.ClientID, Endpoint: ep, RedirectURL: r.cfg.callbackURL, Scopes: r.cfg.Scopes}
}

// The sign-in's cookies: HttpOnly, for this origin's /auth only, for the
// ten minutes a sign-in may take. SameSite Lax: the issuer's redirect back
// is a top-level navigation from another origin.
const (
	stateCookie    = "encore_signin_state"
	nonceCookie    = "encore_signin_nonce"
	verifierCookie = "encore_signin_verifier"
	returnCookie   = "encore_signin_return"
)

func setSignInCookie(c echo.Context, name, value string, maxAge int) {
	c.SetCookie(&http.Cookie{Name: name, Value: value, Path: "/auth", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Scheme() == "https"})
}

// start is GET /auth/sso: to the issuer's authorization endpoint with a
// fresh state, nonce and PKCE challenge.
func (r *signInRoutes) start(c echo.Context) error {
	p, err := r.discover(c.Request().Context())
	if err != nil {
		return c.String(http.StatusBadGateway, "Sign-in is not available: "+err.Error()+"\n")
	}
	state, nonce, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	for name, v := range map[string]string{stateCookie: state, nonceCookie: nonce, verifierCookie: verifier,
		returnCookie: url.QueryEscape(localPath(c.QueryParam("returnUrl"), c.Request().Host))} {
		setSignInCookie(c, name, v, 600)
	}
	return c.Redirect(http.StatusFound, r.oauth(p).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)))
}

// localPath is returnURL when it is a path on this UI (relative, or
// absolute on this host), else "/": the sign-in never redirects elsewhere.
func localPath(returnURL, host string) string {
	u, err := url.Parse(returnURL)
	if err != nil || returnURL == "" || (u.Host != "" && u.Host != host) || u.User != nil {
		return "/"
	}
	if u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" {
		return "/"
	}
	path := u.EscapedPath()
	if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") || strings.Contains(path, `\`) {
		return "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return path
}

// callback is GET /auth/sso/callback: the code exchanged with the PKCE
// verifier, the ID token verified (issuer, audience, nonce), and the tokens
// handed to the UI's pages as ui-server's own sign-in does.
func (r *signInRoutes) callback(c echo.Context) error {
	cookie := func(name string) string {
		ck, err := c.Cookie(name)
		if err != nil {
			return ""
		}
		return ck.Value
	}
	state, nonce, verifier, back := cookie(stateCookie), cookie(nonceCookie), cookie(verifierCookie), cookie(returnCookie)
	for _, name := range []string{stateCookie, nonceCookie, verifierCookie, returnCookie} {
		setSignInCookie(c, name, "", -1) // one use
	}
	q := c.Request().URL.Query()
	if e := q.Get("error"); e != "" {
		return c.String(http.StatusForbidden, "Sign-in refused by the identity provider: "+e+" "+q.Get("error_description")+"\n")
	}
	if state == "" || q.Get("state") != state || verifier == "" || nonce == "" {
		return c.String(http.StatusBadRequest, "This sign-in was not started here or took longer than ten minutes: start again.\n")
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 15*time.Second)
	defer cancel()
	p, err := r.discover(ctx)
	if err != nil {
		return c.String(http.StatusBadGateway, "Sign-in is not available: "+err.Error()+"\n")
	}
	tok, err := r.oauth(p).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return c.String(http.StatusBadGateway, "The identity provider did not exchange the code: "+err.Error()+"\n")
	}
	rawID, _ := tok.Extra("id_token").(string)
	idTok, err := p.Verifier(&oidc.Config{ClientID: r.cfg.ClientID}).Verify(ctx, rawID)
	if err != nil || idTok.Nonce != nonce {
		return c.String(http.StatusBadGateway, "The identity provider's ID token does not verify.\n")
	}
	var claims auth.Claims
	_ = idTok.Claims(&claims)
	if claims.Name == "" {
		claims.Name = idTok.Subject
	}
	if err := auth.SetUser(c, &auth.User{OAuth2Token: tok, IDToken: &auth.IDToken{RawToken: rawID, Claims: &claims}},
		c.Scheme() == "https"); err != nil {
		return c.String(http.StatusInternalServerError, "The sign-in could not be kept: "+err.Error()+"\n")
	}
	back, _ = url.QueryUnescape(back)
	return c.Redirect(http.StatusSeeOther, localPath(back, c.Request().Host))
}

// logout is GET /auth/logout: the UI's sign-in cookies cleared.
func (r *signInRoutes) logout(c echo.Context) error {
	for _, name := range []string{"refresh", "session_start", "user0", "user1", "user2", "user3"} {
		c.SetCookie(&http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	return c.Redirect(http.StatusSeeOther, "/")
}
