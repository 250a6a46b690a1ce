package system_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/session"
)

// oidcBrowserStack is browserStack's app and browse plane with the web app
// set up for OpenID Connect redirect sign-in: its issuer is the development
// issuer on the API's own origin, its client ID clientID. wrap, when given,
// wraps the API's handler (to bend what the issuer answers).
func oidcBrowserStack(t *testing.T, clientID string, wrap ...func(http.Handler) http.Handler) (*e2e, string) {
	t.Helper()
	e := newE2E(t)
	// The issuer's URL is the server's: known once it listens.
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	issuer := session.NewIssuerAt("signin-browser-secret", base+session.DevIssuerPath, session.DefaultAudience)
	a := browserServer(t, e, e.eventID)
	a.Sessions, a.ClientID = issuer, clientID
	h := a.Handler()
	for _, w := range wrap {
		h = w(h)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return e, base
}

func TestAFanSignsInThroughTheIssuersPageAndComesBackSignedInToTheirTickets(t *testing.T) {
	t.Parallel()
	e, base := oidcBrowserStack(t, "encore-web")
	ctx := browser(t, 3*time.Minute)
	user := "oidc_" + e.eventID[4:]
	email := user + "@example.com"

	do(t, ctx, "open the app: a Sign in button, no demo form",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css(`#oidc-signin`)),
	)
	require.Equal(t, "none", js(t, ctx, `document.querySelector('#signin') ? 'demo form' : 'none'`))

	// Cancelling at the issuer comes back with ?error= and says so.
	do(t, ctx, "sign in, then cancel at the issuer",
		chromedp.Focus(css(`#oidc-signin`)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`form#authorize input[name=user_id]`)),
		pressIssuer("deny"),
		chromedp.WaitVisible(css(`#problem`)),
		chromedp.WaitVisible(css(`#oidc-signin`)),
	)
	require.Contains(t, js(t, ctx, `document.getElementById('problem').textContent`), "Sign-in was cancelled")
	require.Equal(t, "", js(t, ctx, `location.search`), "the error is cleaned from the address")

	do(t, ctx, "sign in at the issuer's page",
		chromedp.Focus(css(`#oidc-signin`)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`form#authorize input[name=user_id]`)),
	)
	loc := js(t, ctx, `location.href`)
	require.True(t, strings.HasPrefix(loc, base+session.DevIssuerPath+"/authorize?"), loc)
	require.Contains(t, loc, "code_challenge_method=S256")
	require.Contains(t, loc, "redirect_uri="+strings.ReplaceAll(strings.ReplaceAll(base, ":", "%3A"), "/", "%2F")+"%2F")
	do(t, ctx, "submit the issuer's page and come back signed in",
		chromedp.SendKeys(css(`form#authorize input[name=user_id]`), user),
		chromedp.SendKeys(css(`form#authorize input[name=email]`), email),
		chromedp.SetValue(css(`form#authorize select[name=role]`), "fan"),
		pressIssuer("allow"),
		chromedp.WaitVisible(css(`#signout`)),
	)
	require.Contains(t, js(t, ctx, `document.getElementById('who').textContent`), email, "the header shows the fan")
	require.Equal(t, base+"/", js(t, ctx, `location.href`), "the code and state are cleaned from the address")
	require.Equal(t, "gone", js(t, ctx, `sessionStorage.getItem('oidc') === null ? 'gone' : 'kept'`), "the verifier is dropped")
	require.Equal(t, "none", js(t, ctx, `document.getElementById('problem').hidden ? 'none' : document.getElementById('problem').textContent`))

	// The token kept is the access token for the API's audience.
	aud := js(t, ctx, `JSON.parse(atob(sessionStorage.getItem('token').split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))).aud.join(',')`)
	require.Equal(t, session.DefaultAudience, aud)

	do(t, ctx, "open My tickets: an authenticated call",
		chromedp.Click(css(`nav a[href="#/tickets"]`)),
		chromedp.WaitVisible(css(`#tickets li`)),
	)
	require.Equal(t, "No tickets yet.", js(t, ctx, `document.querySelector('#tickets li').textContent`))
	require.Equal(t, "none", js(t, ctx, `document.getElementById('problem').hidden ? 'none' : document.getElementById('problem').textContent`))
}

// withoutIDToken answers the issuer's token endpoint without its ID token:
// the answer of a sign-in whose nonce the app never sees (only the access
// token comes back).
func withoutIDToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != session.DevIssuerPath+"/token" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err == nil {
			delete(out, "id_token")
			b, _ := json.Marshal(out)
			rec.Body = bytes.NewBuffer(b)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = io.Copy(w, rec.Body)
	})
}

func TestARedirectSignInWhoseAnswerCarriesNoIDTokenWithTheNonceIsRefused(t *testing.T) {
	t.Parallel()
	e, base := oidcBrowserStack(t, "encore-web", withoutIDToken)
	ctx := browser(t, 3*time.Minute)

	do(t, ctx, "sign in at the issuer's page",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css(`#oidc-signin`)),
		chromedp.Focus(css(`#oidc-signin`)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`form#authorize input[name=user_id]`)),
		chromedp.SendKeys(css(`form#authorize input[name=user_id]`), "nonce_"+e.eventID[4:]),
		pressIssuer("allow"),
		chromedp.WaitVisible(css(`#problem`)),
	)
	require.Contains(t, js(t, ctx, `document.getElementById('problem').textContent`), "did not match this sign-in")
	require.Equal(t, "none", js(t, ctx, `sessionStorage.getItem('token') === null ? 'none' : 'kept'`), "no token is kept")
	require.True(t, strings.HasPrefix(js(t, ctx, `location.href`), base+"/"))
}

// pressIssuer presses the issuer's Sign in (allow) or Cancel (deny): a
// loaded CI runner once clicked Cancel while the issuer's page still laid
// itself out, and nothing happened.
func pressIssuer(value string) chromedp.Action[chromedp.Void] {
	return press(`form#authorize button[value=` + value + `]`)
}
