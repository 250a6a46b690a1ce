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
	e := newE2E(t)
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	issuer := session.NewIssuerAt("signin-nonce-secret", base+session.DevIssuerPath, session.DefaultAudience)
	a := browserServer(t, e, e.eventID)
	a.Sessions, a.ClientID = issuer, "encore-web"
	srv.Config.Handler = withoutIDToken(a.Handler())
	srv.Start()
	t.Cleanup(srv.Close)
	ctx := browser(t, 3*time.Minute)

	do(t, ctx, "sign in at the issuer's page",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css(`#oidc-signin`)),
		chromedp.Focus(css(`#oidc-signin`)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`form#authorize input[name=user_id]`)),
		chromedp.SendKeys(css(`form#authorize input[name=user_id]`), "nonce_"+e.eventID[4:]),
		chromedp.Click(css(`form#authorize button[value=allow]`)),
		chromedp.WaitVisible(css(`#problem`)),
	)
	require.Contains(t, js(t, ctx, `document.getElementById('problem').textContent`), "did not match this sign-in")
	require.Equal(t, "none", js(t, ctx, `sessionStorage.getItem('token') === null ? 'none' : 'kept'`), "no token is kept")
	require.True(t, strings.HasPrefix(js(t, ctx, `location.href`), base+"/"))
}
