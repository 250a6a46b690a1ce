package api

import (
	"crypto/rand"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/session"
)

// SignInScopes are the scopes the web app asks the issuer for.
const SignInScopes = "openid email profile"

// signIn serves how fans sign in: the web app's sign-in configuration and,
// while the demo login is on, the development issuer (its demo login, its
// OpenID Connect discovery, keys, authorization page and token endpoint).
// Verifying a caller's token is the server's (authenticate).
type signIn struct {
	// tokens verifies the configured issuer's tokens (nil: sessions').
	tokens *session.Verifier
	// sessions is the development issuer; nil in production.
	sessions *session.Issuer
	clientID string
	log      *slog.Logger
	problems problems
}

// issuerURL is the issuer whose tokens the API accepts: the configured
// OpenID Connect issuer's, else the development issuer's.
func (s *signIn) issuerURL() string {
	switch {
	case s.tokens != nil:
		return s.tokens.Issuer()
	case s.sessions != nil:
		return s.sessions.URL()
	}
	return ""
}

// audience is the audience the API's tokens must name.
func (s *signIn) audience() string {
	switch {
	case s.tokens != nil:
		return s.tokens.Audience()
	case s.sessions != nil:
		return s.sessions.Verifier().Audience()
	}
	return ""
}

// redirectSignIn reports whether the web app signs fans in by redirect to
// the issuer: a client ID is configured and there is an issuer.
func (s *signIn) redirectSignIn() bool { return s.clientID != "" && s.issuerURL() != "" }

// signInOrigins are the origins the web app must fetch from beyond its own
// for redirect sign-in: the issuer's (its discovery document and token
// endpoint), for the app's connect-src.
func (s *signIn) signInOrigins() []string {
	if !s.redirectSignIn() {
		return nil
	}
	u, err := url.Parse(s.issuerURL())
	if err != nil || u.Host == "" {
		return nil
	}
	return []string{u.Scheme + "://" + u.Host}
}

// createSession is the demo login: a token of the development issuer for
// whoever and whatever roles the body names.
func (s *signIn) createSession(c *gin.Context) {
	var req struct {
		UserID   string   `json:"user_id"`
		DeviceID string   `json:"device_id"`
		Email    string   `json:"email"`
		Roles    []string `json:"roles"`
		Org      string   `json:"org"`
	}
	if err := decodeJSON(c, &req); err != nil {
		writeProblem(c, Invalid(*err))
		return
	}
	const idRule = "letters, digits, '_', '-', '.', ':' (at most 100)"
	var errs []FieldError
	if !idPattern.MatchString(req.UserID) {
		errs = append(errs, FieldError{"user_id", "required: " + idRule})
	}
	if !idPattern.MatchString(req.DeviceID) {
		errs = append(errs, FieldError{"device_id", "required: " + idRule})
	}
	if req.Email != "" {
		if a, err := mail.ParseAddress(req.Email); err != nil || a.Name != "" || a.Address != req.Email || len(req.Email) > 254 {
			errs = append(errs, FieldError{"email", "one plain address, such as fan@example.com"})
		}
	}
	roles := make([]session.Role, 0, len(req.Roles))
	for _, r := range req.Roles {
		if !slices.Contains(session.Roles, session.Role(r)) {
			errs = append(errs, FieldError{"roles", fmt.Sprintf("%q is not a role: fan, organiser, support, operator, admin or hotelier", r)})
			break
		}
		roles = append(roles, session.Role(r))
	}
	if req.Org != "" && !idPattern.MatchString(req.Org) {
		errs = append(errs, FieldError{"org", idRule})
	}
	if len(errs) > 0 {
		writeProblem(c, Invalid(errs...))
		return
	}
	token, err := s.sessions.Mint(session.Identity{UserID: req.UserID, DeviceID: req.DeviceID, Email: req.Email,
		Roles: roles, Org: req.Org}, time.Now())
	if err != nil {
		writeProblem(c, s.problems.problemFor(err))
		return
	}
	c.JSON(http.StatusCreated, gin.H{"token": token})
}

// devDiscovery is the development issuer's OpenID Connect discovery
// document.
func (s *signIn) devDiscovery(c *gin.Context) { c.JSON(http.StatusOK, s.sessions.Discovery()) }

// devJWKS is the development issuer's key set: the one its own verifier
// holds.
func (s *signIn) devJWKS(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.Data(http.StatusOK, "application/json", s.sessions.JWKS())
}

// authConfig tells the web app how to sign fans in: the demo form, or the
// OpenID Connect redirect to the issuer with the app's public client ID
// (client_id empty: redirect sign-in is off). Nothing in it is secret.
func (s *signIn) authConfig(c *gin.Context) {
	out := gin.H{"demo_login": s.sessions != nil, "issuer": "", "client_id": "", "audience": s.audience(), "scopes": SignInScopes}
	if s.redirectSignIn() {
		out["issuer"], out["client_id"] = s.issuerURL(), s.clientID
	}
	c.Header("Cache-Control", "no-cache")
	c.JSON(http.StatusOK, out)
}

// anyOrigin lets a page on another origin read a development issuer's
// public answers (its discovery document, keys and token responses carry no
// cookie-bound data): a web app on a loopback origin other than
// ENCORE_PUBLIC_URL's.
func anyOrigin(c *gin.Context) {
	c.Header("Access-Control-Allow-Origin", "*")
	c.Next()
}

// authorizePage is the development issuer's sign-in page: no script, its
// style from the app's stylesheet (the page's policy allows nothing
// inline).
var authorizePage = template.Must(template.New("authorize").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in: Encore development issuer</title>
<link rel="stylesheet" href="/app/app.css">
</head>
<body>
<main id="main">
<h1>Sign in</h1>
<p>This is Encore's development identity provider: anyone may sign in as anyone, with any role.
<strong>{{.Client}}</strong> asks you to sign in and will receive your identity at <strong>{{.Origin}}</strong>.</p>
{{if .Error}}<p class="problem" role="alert" id="error">{{.Error}}</p>{{end}}
<form method="post" action="{{.Action}}" id="authorize">
{{range .Hidden}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">
{{end}}<p><label>User ID <input name="user_id" required autocomplete="username" pattern="[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}" value="{{.UserID}}"></label></p>
<p><label>Email <input name="email" type="email" autocomplete="email" value="{{.Email}}"></label></p>
<p><label>Role <select name="role">{{range .Roles}}<option value="{{.}}"{{if eq . $.Role}} selected{{end}}>{{.}}</option>{{end}}</select></label></p>
<p><label>Organiser ID (for the organiser role) <input name="org" autocomplete="off" pattern="[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}" value="{{.Org}}"></label></p>
<p class="row"><button name="decision" value="allow">Sign in</button>
<button name="decision" value="deny" class="secondary" formnovalidate>Cancel</button></p>
</form>
</main>
</body>
</html>
`))

// authorizeParams are the authorization request's parameters, carried from
// the page's query to its form.
var authorizeParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge", "code_challenge_method"}

type hiddenField struct{ Name, Value string }

type authorizeView struct {
	Client, Origin, Action, Error string
	Hidden                        []hiddenField
	UserID, Email, Role, Org      string
	Roles                         []session.Role
}

// devAuthorizePage is GET /dev/oidc/authorize: the sign-in page of an
// authorization request, or the request's error.
func (s *signIn) devAuthorizePage(c *gin.Context) {
	req, aerr := s.sessions.CheckAuthRequest(c.Query)
	if aerr != nil {
		s.authorizeFailed(c, req, aerr)
		return
	}
	s.renderAuthorize(c, http.StatusOK, req, c.Query, authorizeView{Role: string(session.Fan)})
}

// devAuthorize is POST /dev/oidc/authorize: the page's answer. It checks
// the request again (the form is the client's to tamper with), then sends
// the browser back to the client with a one-time code, or with
// access_denied when the user cancelled.
func (s *signIn) devAuthorize(c *gin.Context) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, 16<<10)
	if err := c.Request.ParseForm(); err != nil {
		s.authorizeFailed(c, session.AuthRequest{}, &session.AuthError{Code: "invalid_request", Description: "the form is larger than 16 KiB or unreadable"})
		return
	}
	get := c.Request.PostForm.Get
	req, aerr := s.sessions.CheckAuthRequest(get)
	if aerr != nil {
		s.authorizeFailed(c, req, aerr)
		return
	}
	if get("decision") == "deny" {
		s.authorizeFailed(c, req, &session.AuthError{Code: "access_denied", Description: "the user cancelled the sign-in", Redirect: true})
		return
	}
	v := authorizeView{UserID: get("user_id"), Email: get("email"), Role: get("role"), Org: get("org")}
	var problems []string
	if !idPattern.MatchString(v.UserID) {
		problems = append(problems, "the user ID is required: letters, digits, '_', '-', '.', ':' (at most 100)")
	}
	if v.Email != "" {
		if a, err := mail.ParseAddress(v.Email); err != nil || a.Name != "" || a.Address != v.Email || len(v.Email) > 254 {
			problems = append(problems, "the email must be one plain address, such as fan@example.com")
		}
	}
	if !slices.Contains(session.Roles, session.Role(v.Role)) {
		problems = append(problems, "choose a role from the list")
	}
	if v.Org != "" && !idPattern.MatchString(v.Org) {
		problems = append(problems, "the organiser ID may hold letters, digits, '_', '-', '.', ':' (at most 100)")
	}
	if len(problems) > 0 {
		v.Error = "Please check: " + strings.Join(problems, "; ") + "."
		s.renderAuthorize(c, http.StatusBadRequest, req, get, v)
		return
	}
	id := session.Identity{UserID: v.UserID, Email: v.Email, Roles: []session.Role{session.Role(v.Role)}, Org: v.Org,
		// One sign-in, one device, as a real issuer's "sid" is one login
		// session: a waiting-room admission binds to it.
		DeviceID: "web-" + rand.Text()}
	code, err := s.sessions.Authorize(req, id)
	if err != nil {
		aerr, ok := err.(*session.AuthError)
		if !ok {
			aerr = &session.AuthError{Code: "server_error", Description: "no code could be issued", Redirect: true}
		}
		s.authorizeFailed(c, req, aerr)
		return
	}
	redirectBack(c, req, url.Values{"code": {code}})
}

// authorizeFailed answers an authorization error: back to the client's
// redirect URI when it was checked (RFC 6749 section 4.1.2.1), else a page
// that says what is wrong and redirects nowhere.
func (s *signIn) authorizeFailed(c *gin.Context, req session.AuthRequest, aerr *session.AuthError) {
	if aerr.Redirect {
		redirectBack(c, req, url.Values{"error": {aerr.Code}, "error_description": {aerr.Description}})
		return
	}
	pageHeaders(c, "")
	c.Data(http.StatusBadRequest, "text/plain; charset=utf-8",
		[]byte("The sign-in request was refused ("+aerr.Code+"): "+aerr.Description+".\n"))
}

// redirectBack sends the browser to the checked redirect URI with params
// and the request's state.
func redirectBack(c *gin.Context, req session.AuthRequest, params url.Values) {
	u, _ := url.Parse(req.RedirectURI) // checked by CheckAuthRequest
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if req.State != "" {
		q.Set("state", req.State)
	}
	u.RawQuery = q.Encode()
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusSeeOther, u.String())
}

func (s *signIn) renderAuthorize(c *gin.Context, status int, req session.AuthRequest, get func(string) string, v authorizeView) {
	u, _ := url.Parse(req.RedirectURI)
	origin := u.Scheme + "://" + u.Host
	v.Client, v.Origin, v.Action, v.Roles = req.ClientID, origin, session.DevIssuerPath+"/authorize", session.Roles
	for _, name := range authorizeParams {
		if val := get(name); val != "" {
			v.Hidden = append(v.Hidden, hiddenField{name, val})
		}
	}
	pageHeaders(c, origin)
	c.Status(status)
	c.Header("Content-Type", "text/html; charset=utf-8")
	if err := authorizePage.Execute(c.Writer, v); err != nil {
		s.log.Error("render the development sign-in page", "err", err)
	}
}

// pageHeaders are the sign-in page's: no script at all, style from the
// app's own stylesheet, the form posted to this origin and its redirect
// allowed to the client's origin only (browsers apply form-action to the
// redirect after a post), never framed (a hidden sign-in page is
// clickjacking), never cached.
func pageHeaders(c *gin.Context, redirectOrigin string) {
	formAction := "'self'"
	if redirectOrigin != "" {
		formAction += " " + redirectOrigin
	}
	c.Header("Content-Security-Policy", "default-src 'none'; style-src 'self'; form-action "+formAction+
		"; frame-ancestors 'none'; base-uri 'none'")
	c.Header("X-Frame-Options", "DENY")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "no-referrer")
	c.Header("Cache-Control", "no-store")
}

// devToken is POST /dev/oidc/token: a code exchanged for an access token
// (for the API) and an ID token (for the client), or OAuth's JSON error.
func (s *signIn) devToken(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, 16<<10)
	if !strings.HasPrefix(c.ContentType(), "application/x-www-form-urlencoded") || c.Request.ParseForm() != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": "invalid_request",
			"error_description": "send the parameters form-encoded (application/x-www-form-urlencoded), at most 16 KiB"})
		return
	}
	out, aerr := s.sessions.Exchange(c.Request.PostForm.Get)
	if aerr != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": aerr.Code, "error_description": aerr.Description})
		return
	}
	c.JSON(http.StatusOK, out)
}
