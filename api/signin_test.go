package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/session"
)

// oidcStack is the API with the development issuer on, at its own origin,
// whose clock a test can move forward.
type oidcStack struct {
	url    string
	issuer *session.Issuer
	skew   atomic.Int64 // nanoseconds added to the issuer's clock
	client *http.Client // follows no redirect: the tests read them
	// verifier and its S256 challenge are the PKCE pair of the client's
	// sign-in.
	verifier, challenge string
}

func newOIDCStack(t *testing.T, clientID string) *oidcStack {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	s := &oidcStack{url: "http://" + ts.Listener.Addr().String()}
	s.issuer = session.NewIssuerAt("test-secret", s.url+session.DevIssuerPath, session.DefaultAudience)
	s.issuer.SetClock(func() time.Time { return time.Now().Add(time.Duration(s.skew.Load())) })
	srv := &api.Server{Sessions: s.issuer, ClientID: clientID, Log: quiet(t)}
	ts.Config.Handler = srv.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	s.client = &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s.verifier = strings.Repeat("v3rifier-", 6)
	sum := sha256.Sum256([]byte(s.verifier))
	s.challenge = base64.RawURLEncoding.EncodeToString(sum[:])
	return s
}

// authParams is a good authorization request of client "encore-web" back
// to the API's own origin.
func (s *oidcStack) authParams() url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {"encore-web"}, "redirect_uri": {s.url + "/"},
		"scope": {api.SignInScopes}, "state": {"st-123"}, "nonce": {"n-456"},
		"code_challenge": {s.challenge}, "code_challenge_method": {"S256"}}
}

// authorize signs asha in on the issuer's page and returns the code the
// redirect carries.
func (s *oidcStack) authorize(t *testing.T, params url.Values) string {
	t.Helper()
	form := url.Values{"user_id": {"asha"}, "email": {"asha@example.com"}, "role": {"fan"}, "decision": {"allow"}}
	for k, v := range params {
		form[k] = v
	}
	resp, err := s.client.PostForm(s.url+session.DevIssuerPath+"/authorize", form)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, s.url+"/", back.Scheme+"://"+back.Host+back.Path, "back to the redirect URI")
	require.Equal(t, "st-123", back.Query().Get("state"))
	require.NotEmpty(t, back.Query().Get("code"))
	return back.Query().Get("code")
}

// exchange posts a token request and decodes the answer.
func (s *oidcStack) exchange(t *testing.T, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := s.client.PostForm(s.url+session.DevIssuerPath+"/token", form)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

func TestTheDevelopmentIssuersTokenEndpointExchangesACodeOnceForItsClientRedirectAndVerifier(t *testing.T) {
	s := newOIDCStack(t, "encore-web")
	for _, tc := range []struct {
		name string
		// change alters the good token request; before runs ahead of it.
		change func(form url.Values)
		before func(t *testing.T, form url.Values)
		status int
		err    string
	}{
		{name: "the right verifier, client and redirect URI get tokens", status: http.StatusOK},
		{name: "a wrong verifier is refused", status: http.StatusBadRequest, err: "invalid_grant",
			change: func(f url.Values) { f.Set("code_verifier", strings.Repeat("wrong-verifier-", 4)) }},
		{name: "a missing verifier is refused", status: http.StatusBadRequest, err: "invalid_grant",
			change: func(f url.Values) { f.Del("code_verifier") }},
		{name: "a code used once is refused", status: http.StatusBadRequest, err: "invalid_grant",
			before: func(t *testing.T, f url.Values) {
				status, _ := s.exchange(t, f)
				require.Equal(t, http.StatusOK, status, "the first use")
			}},
		{name: "another redirect URI is refused", status: http.StatusBadRequest, err: "invalid_grant",
			change: func(f url.Values) { f.Set("redirect_uri", s.url+"/elsewhere") }},
		{name: "another client is refused", status: http.StatusBadRequest, err: "invalid_grant",
			change: func(f url.Values) { f.Set("client_id", "someone-else") }},
		{name: "an expired code is refused", status: http.StatusBadRequest, err: "invalid_grant",
			before: func(t *testing.T, _ url.Values) { s.skew.Store(int64(session.CodeTTL + time.Second)) }},
		{name: "a made-up code is refused", status: http.StatusBadRequest, err: "invalid_grant",
			change: func(f url.Values) { f.Set("code", "made-up") }},
		{name: "another grant type is refused", status: http.StatusBadRequest, err: "unsupported_grant_type",
			change: func(f url.Values) { f.Set("grant_type", "password") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.skew.Store(0)
			t.Cleanup(func() { s.skew.Store(0) })
			form := url.Values{"grant_type": {"authorization_code"}, "code": {s.authorize(t, s.authParams())},
				"client_id": {"encore-web"}, "redirect_uri": {s.url + "/"}, "code_verifier": {s.verifier}}
			if tc.change != nil {
				tc.change(form)
			}
			if tc.before != nil {
				tc.before(t, form)
			}
			status, out := s.exchange(t, form)
			require.Equal(t, tc.status, status, "%v", out)
			if tc.err != "" {
				require.Equal(t, tc.err, out["error"])
				require.NotEmpty(t, out["error_description"])
				require.NotContains(t, out, "access_token")
				return
			}
			require.Equal(t, "Bearer", out["token_type"])
			require.EqualValues(t, session.TTL/time.Second, out["expires_in"])

			// The access token is one the API accepts.
			req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/me", nil)
			req.Header.Set("Authorization", "Bearer "+out["access_token"].(string))
			resp, err := s.client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			var me struct {
				UserID string   `json:"user_id"`
				Email  string   `json:"email"`
				Roles  []string `json:"roles"`
			}
			require.NoError(t, json.Unmarshal(body, &me))
			require.Equal(t, "asha", me.UserID)
			require.Equal(t, "asha@example.com", me.Email)
			require.Equal(t, []string{"fan"}, me.Roles)

			// The ID token is for the client, with its nonce; the API
			// does not take it (its audience is the client's).
			var claims jwt.MapClaims
			_, _, err = jwt.NewParser().ParseUnverified(out["id_token"].(string), &claims)
			require.NoError(t, err)
			require.Equal(t, "encore-web", claims["aud"].([]any)[0])
			require.Equal(t, "n-456", claims["nonce"])
			require.Equal(t, s.issuer.URL(), claims["iss"])
			_, err = s.issuer.Verifier().Verify(t.Context(), out["id_token"].(string))
			require.ErrorIs(t, err, session.ErrInvalid)
		})
	}
}

func TestTheDevelopmentIssuersAuthorizeEndpointRefusesForeignRedirectsAndRequestsWithoutS256(t *testing.T) {
	s := newOIDCStack(t, "encore-web")
	for _, tc := range []struct {
		name   string
		change func(q url.Values)
		// status 400: an error page, no redirect; 303: the error goes back
		// to the client.
		status int
		err    string
	}{
		{name: "a redirect URI on another host", status: http.StatusBadRequest,
			change: func(q url.Values) { q.Set("redirect_uri", "https://tickets.example.org/") }},
		{name: "a redirect URI on another host claiming loopback in its user info", status: http.StatusBadRequest,
			change: func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1@tickets.example.org/") }},
		{name: "a relative redirect URI", status: http.StatusBadRequest,
			change: func(q url.Values) { q.Set("redirect_uri", "/elsewhere") }},
		{name: "no client ID", status: http.StatusBadRequest,
			change: func(q url.Values) { q.Del("client_id") }},
		{name: "no code challenge", status: http.StatusSeeOther, err: "invalid_request",
			change: func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }},
		{name: "a plain code challenge", status: http.StatusSeeOther, err: "invalid_request",
			change: func(q url.Values) { q.Set("code_challenge_method", "plain") }},
		{name: "a challenge that is no SHA-256", status: http.StatusSeeOther, err: "invalid_request",
			change: func(q url.Values) { q.Set("code_challenge", "short") }},
		{name: "another response type", status: http.StatusSeeOther, err: "unsupported_response_type",
			change: func(q url.Values) { q.Set("response_type", "token") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := s.authParams()
			tc.change(q)
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				var resp *http.Response
				var err error
				if method == http.MethodGet {
					resp, err = s.client.Get(s.url + session.DevIssuerPath + "/authorize?" + q.Encode())
				} else {
					q.Set("user_id", "asha")
					q.Set("role", "fan")
					resp, err = s.client.PostForm(s.url+session.DevIssuerPath+"/authorize", q)
				}
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, tc.status, resp.StatusCode, method)
				loc := resp.Header.Get("Location")
				if tc.status == http.StatusBadRequest {
					require.Empty(t, loc, "%s: no redirect to an unchecked URI", method)
					continue
				}
				back, err := url.Parse(loc)
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(loc, s.url+"/?"), loc)
				require.Equal(t, tc.err, back.Query().Get("error"), method)
				require.Equal(t, "st-123", back.Query().Get("state"))
				require.Empty(t, back.Query().Get("code"), "no code without S256")
			}
		})
	}
}

func TestTheDevelopmentIssuersSignInPageCarriesTheRequestAndCancelGoesBackWithAccessDenied(t *testing.T) {
	s := newOIDCStack(t, "encore-web")
	q := s.authParams()
	resp, err := s.client.Get(s.url + session.DevIssuerPath + "/authorize?" + q.Encode())
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	csp := resp.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.Contains(t, csp, "form-action 'self' "+s.url)
	require.NotContains(t, csp, "script-src")
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	page := string(body)
	require.Contains(t, page, `name="code_challenge" value="`+s.challenge+`"`)
	require.Contains(t, page, `<input name="user_id" required`)
	require.NotContains(t, page, "<script")
	require.NotContains(t, page, "style=")

	// A bad user ID shows the page again, with the reason.
	bad := url.Values{"user_id": {"no spaces please"}, "role": {"fan"}, "decision": {"allow"}}
	for k, v := range q {
		bad[k] = v
	}
	resp, err = s.client.PostForm(s.url+session.DevIssuerPath+"/authorize", bad)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, string(body), "the user ID is required")

	// Cancel: access_denied goes back to the client, with its state.
	bad.Set("decision", "deny")
	resp, err = s.client.PostForm(s.url+session.DevIssuerPath+"/authorize", bad)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "access_denied", back.Query().Get("error"))
	require.Equal(t, "st-123", back.Query().Get("state"))
}

func TestTheWebAppLearnsHowToSignInAndTheIssuerAdvertisesTheCodeFlow(t *testing.T) {
	for _, tc := range []struct {
		name, clientID string
		redirect       bool
	}{
		{name: "with a client ID: redirect sign-in", clientID: "encore-web", redirect: true},
		{name: "without: the demo form", clientID: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newOIDCStack(t, tc.clientID)
			var cfg struct {
				DemoLogin bool   `json:"demo_login"`
				Issuer    string `json:"issuer"`
				ClientID  string `json:"client_id"`
				Audience  string `json:"audience"`
				Scopes    string `json:"scopes"`
			}
			getJSON(t, s.client, s.url+"/v1/auth/config", &cfg)
			require.True(t, cfg.DemoLogin)
			require.Equal(t, "openid email profile", cfg.Scopes)
			require.Equal(t, session.DefaultAudience, cfg.Audience)
			if tc.redirect {
				require.Equal(t, s.issuer.URL(), cfg.Issuer)
				require.Equal(t, "encore-web", cfg.ClientID)
			} else {
				require.Empty(t, cfg.Issuer)
				require.Empty(t, cfg.ClientID)
			}

			var doc map[string]any
			getJSON(t, s.client, s.url+session.DevIssuerPath+"/.well-known/openid-configuration", &doc)
			require.Equal(t, s.issuer.URL()+"/authorize", doc["authorization_endpoint"])
			require.Equal(t, s.issuer.URL()+"/token", doc["token_endpoint"])
			require.Equal(t, []any{"S256"}, doc["code_challenge_methods_supported"])
			require.Equal(t, []any{"authorization_code"}, doc["grant_types_supported"])

			// The app's policy lets it fetch from the issuer's origin when
			// redirect sign-in is on (here the API's own: 'self' too).
			resp, err := s.client.Get(s.url + "/")
			require.NoError(t, err)
			resp.Body.Close()
			host := strings.TrimPrefix(s.url, "http://")
			connect := "connect-src 'self' ws://" + host + " wss://" + host
			if tc.redirect {
				connect += " " + s.url
			}
			require.Contains(t, resp.Header.Get("Content-Security-Policy"), connect+";")
		})
	}
}

func getJSON(t *testing.T, c *http.Client, u string, v any) {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, u)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

// call sends one request to base and decodes a JSON answer.
func call(t *testing.T, base, method, path, token string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	r := apitest.Do(t, method, base+path, token, body)
	return r.Status, r.Header, r.Body
}

func TestTheDemoLoginsTokenVerifiesWithTheKeysServedAtDevOIDC(t *testing.T) {
	t.Parallel()
	// The demo login, its issuer at the API's own origin as encore dev runs it.
	s := newOIDCStack(t, "")
	status, _, body := call(t, s.url, http.MethodPost, "/v1/sessions", "", map[string]any{
		"user_id": "asha", "device_id": "phone", "email": "asha@example.com", "roles": []string{"organiser"}, "org": "org-1"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	token := body["token"].(string)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := session.Discover(ctx, session.Options{Issuer: s.issuer.URL(), Audience: session.DefaultAudience, Client: s.client})
	require.NoError(t, err, "discovery and the key set are served on the API's origin")
	id, err := v.Verify(ctx, token)
	require.NoError(t, err)
	require.Equal(t, session.Identity{UserID: "asha", DeviceID: "phone", Email: "asha@example.com",
		Roles: []session.Role{session.Organiser}, Org: "org-1", IssuedAt: id.IssuedAt}, id)

	status, _, me := call(t, s.url, http.MethodGet, "/v1/me", token, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"user_id": "asha", "device_id": "phone", "email": "asha@example.com",
		"roles": []any{"organiser"}, "org": "org-1"}, me)

	status, _, me = call(t, s.url, http.MethodGet, "/v1/me", s.issuer.Issue("bo", "laptop", time.Now()), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []any{"fan"}, me["roles"], "no roles claim means fan")
}

func TestTheDemoLoginRefusesUnknownRolesAndMalformedEmails(t *testing.T) {
	t.Parallel()
	s := newOIDCStack(t, "")
	for name, body := range map[string]map[string]any{
		"an unknown role":                 {"user_id": "u", "device_id": "d", "roles": []string{"root"}},
		"an email with a display name":    {"user_id": "u", "device_id": "d", "email": "Asha <asha@example.com>"},
		"an email with a header smuggled": {"user_id": "u", "device_id": "d", "email": "a@example.com\r\nBcc: x@example.com"},
		"an org with a space":             {"user_id": "u", "device_id": "d", "org": "org 1"},
	} {
		t.Run(name, func(t *testing.T) {
			status, _, p := call(t, s.url, http.MethodPost, "/v1/sessions", "", body)
			require.Equal(t, http.StatusUnprocessableEntity, status)
			require.Equal(t, "/problems/invalid-request", p["type"])
		})
	}
}

func TestWithTheDemoLoginOffThereIsNoSessionRouteNorDevelopmentIssuer(t *testing.T) {
	t.Parallel()
	dev := session.NewIssuer("elsewhere")
	// An API verifying an issuer's tokens without the demo login.
	ts := httptest.NewServer((&api.Server{Tokens: dev.Verifier(), Log: quiet(t)}).Handler())
	defer ts.Close()
	for _, path := range []string{"/v1/sessions", "/dev/oidc/jwks.json", "/dev/oidc/.well-known/openid-configuration"} {
		method := http.MethodGet
		if path == "/v1/sessions" {
			method = http.MethodPost
		}
		status, _, p := call(t, ts.URL, method, path, "", map[string]any{"user_id": "u", "device_id": "d"})
		require.Equal(t, http.StatusNotFound, status, path)
		require.Equal(t, "/problems/not-found", p["type"])
	}
	status, _, _ := call(t, ts.URL, http.MethodGet, "/v1/me", dev.Issue("asha", "phone", time.Now()), nil)
	require.Equal(t, http.StatusOK, status, "the issuer's tokens still verify")
	status, _, p := call(t, ts.URL, http.MethodGet, "/v1/me", session.NewIssuer("forger").Issue("asha", "phone", time.Now()), nil)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, "/problems/unauthorized", p["type"])
}
