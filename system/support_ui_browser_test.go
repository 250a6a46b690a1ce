package system_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/dev/temporalserver"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

// supportUICodecBearer is the codec bearer of the test's Web UI, as encore
// dev makes one per run (.encore/codec.token).
const supportUICodecBearer = "support-ui-codec-bearer-0123456789abcdef"

// A capture stuck behind the provider's outage, as support sees it in the
// Temporal Web UI (docs/SUPPORT.md): the booking's page lists the capture
// under Pending Activities with its attempt and last failure; after the
// fault clears and support asks retry-now through the API, the page shows
// no pending activity and the capture completed. With
// ENCORE_WRITE_SCREENSHOTS=1 it writes the runbook's screenshots into
// docs/support.
func TestTheTemporalUIShowsAStuckCaptureWithItsAttemptsAndRetryNowCompletesIt(t *testing.T) {
	t.Parallel()
	e, ui := supportStack(t)
	ctx := context.Background()
	ns := e.cfg.TemporalNamespace

	_, err := psp.SetFaults(ctx, e.pspURL, psp.Faults{CaptureUnavailable: true})
	require.NoError(t, err)
	fan := e.fanWithEmail("ui-stuck", "asha-"+e.eventID+"@example.test")
	id, _ := e.checkedOut(fan, e.pay.card(), e.seat(9, 1))
	wid := workflows.BookingWorkflowID(id)
	var runID string
	require.Eventually(t, func() bool {
		d, err := e.temporal.DescribeWorkflowExecution(ctx, wid, "")
		if err != nil {
			return false
		}
		runID = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		for _, pa := range d.GetPendingActivities() {
			if pa.GetActivityType().GetName() == workflows.ActivityCapture && pa.GetAttempt() >= 3 {
				return true
			}
		}
		return false
	}, 90*time.Second, 200*time.Millisecond, "the failing capture is a pending activity past its third attempt")

	tab := browser(t, 4*time.Minute)
	page := ui + "/namespaces/" + url.PathEscape(ns) + "/workflows/" + url.PathEscape(wid) + "/" + runID
	do(t, tab, "open the booking's pending activities", chromedp.EmulateViewport(1366, 900),
		chromedp.Navigate(page+"/pending-activities"))
	// The UI sends a visitor to the issuer first: support signs in there.
	signInToTemporalUI(t, tab, "olga", session.Support)
	// The test's assertion: the UI lists the capture as a pending activity
	// with its attempt, last failure and next retry (it reads
	// DescribeWorkflowExecution, as the test above does).
	waitEval(t, tab, `(() => { const s = document.body.innerText;
		return /Capture/.test(s) && /Attempt/i.test(s) && /Last Failure/i.test(s) && /Next Retry/i.test(s); })()`, 90*time.Second)
	writeUIScreenshot(t, tab, "stuck-capture.png", "")
	do(t, tab, "open the booking's history", chromedp.Navigate(page+"/history"))
	waitEval(t, tab, `(() => { const s = document.body.innerText;
		return s.includes('Pending Activity') && /ATTEMPT \d+/i.test(s) && s.includes('staff attention'); })()`, 60*time.Second)
	writeUIScreenshot(t, tab, "stuck-capture-history.png", "Event History")

	// The provider is back: support asks the step again now.
	_, err = psp.SetFaults(ctx, e.pspURL, psp.Faults{})
	require.NoError(t, err)
	olga := e.staff("olga", "", session.Support)
	status, res := e.call(http.MethodPost, "/v1/admin/bookings/"+id+"/retry-now", olga, map[string]any{"reason": "the provider is back"})
	require.Equal(t, http.StatusOK, status, "%v", res)
	require.Equal(t, "capture", res["step"], "%v", res)
	e.waitStatus(fan, id, vocab.BookingPaid, 20*time.Second)
	require.Eventually(t, func() bool { return stepOf(t, e, wid) == vocab.StepPaid }, 20*time.Second, 100*time.Millisecond)

	do(t, tab, "reload the booking's history", chromedp.Navigate(page+"/history"))
	waitEval(t, tab, `(() => { const s = document.body.innerText;
		return s.includes('retry-now') && s.includes('Activity Task Completed') && !s.includes('Pending Activity\n'); })()`, 60*time.Second)
	writeUIScreenshot(t, tab, "after-retry-now.png", "Event History")
}

// supportStack is a stack whose workflows run on a Temporal server of the
// test's own, set up as encore dev sets up its embedded one: it admits the
// stack's processes by its API key and the Web UI's users who signed in at
// the stack's development issuer (the API's /dev/oidc) as support or
// admin. It returns the stack and the Web UI's base URL.
func supportStack(t *testing.T) (*e2e, string) {
	t.Helper()
	var staff atomic.Pointer[session.Verifier] // the stack's issuer, once it exists
	srv := temporalserver.StartForTest(t, testenv.AdminURL(t), func(c *temporalserver.Config) {
		c.SearchAttributes = workflows.SearchAttributes
		c.StaffTokens = staff.Load
	})
	e := newE2EOn(t, temporalTarget{addr: srv.FrontendAddress(), namespace: srv.Namespace(), apiKey: srv.APIKey()})
	staff.Store(e.issuer.Verifier())
	return e, supportWebUI(t, e.cfg, srv.FrontendAddress(), e.issuer.URL())
}

// signInToTemporalUI signs in at the development issuer's page, where the
// Web UI has sent the tab, as user with role, and waits until the tab is
// back on the UI.
func signInToTemporalUI(t *testing.T, tab context.Context, user string, role session.Role) {
	t.Helper()
	do(t, tab, "sign in to the Temporal UI as "+user+" ("+string(role)+")",
		chromedp.WaitVisible(css(`input[name=user_id]`)),
		chromedp.SendKeys(css(`input[name=user_id]`), user),
		chromedp.SetValue(css(`select[name=role]`), string(role)),
		chromedp.Click(css(`button[value=allow]`)),
		chromedp.WaitNotPresent(css(`input[name=user_id]`)))
}

// supportWebUI serves the embedded Temporal Web UI against the frontend
// at frontendAddr, opening the test's namespace, its users signing in at
// issuer, with the payload codec behind the UI's /codec proxy and its
// bearer, as encore dev serves it; it returns the UI's base URL.
func supportWebUI(t *testing.T, cfg config.Config, frontendAddr, issuer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cfg.Env = config.Development // the development codec key, as encore dev
	cfg.TemporalCodecToken = config.Secret(supportUICodecBearer)
	cfg.TemporalUIOrigins = "http://127.0.0.1:" + port + ",http://localhost:" + port
	h, err := system.CodecHandler(cfg, func() *session.Verifier { return nil })
	if err != nil {
		_ = ln.Close()
		require.NoError(t, err)
	}
	admin := httptest.NewServer(system.AdminHandler(prometheus.NewRegistry(), map[string]http.Handler{"/codec/": http.StripPrefix("/codec", h)}))
	t.Cleanup(admin.Close)
	ui, err := temporalserver.StartWebUI(ln, temporalserver.UIConfig{FrontendAddress: frontendAddr, Namespace: cfg.TemporalNamespace,
		CodecEndpoint: admin.URL + "/codec", CodecToken: supportUICodecBearer, SignIn: temporalserver.SignIn{Issuer: issuer}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ui.Stop() })
	return ui.URL()
}

// writeUIScreenshot writes the tab's viewport (1366x900), scrolled to the
// last element whose text starts with scrollTo (none: the top), as
// docs/support/name when ENCORE_WRITE_SCREENSHOTS=1.
func writeUIScreenshot(t *testing.T, tab context.Context, name, scrollTo string) {
	t.Helper()
	if os.Getenv("ENCORE_WRITE_SCREENSHOTS") != "1" {
		return
	}
	if scrollTo != "" {
		evalJS[bool](t, tab, `(() => { const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
			let last = null;
			for (let n = w.nextNode(); n; n = w.nextNode()) {
				if (n.textContent.trim().startsWith(`+strconvQuote(scrollTo)+`)) { last = n; }
			}
			if (last) { last.parentElement.scrollIntoView({block: 'start'}); }
			return last !== null; })()`)
		time.Sleep(500 * time.Millisecond)
	}
	sctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	_, _ = chromedp.Run(sctx, front())
	png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	dir := filepath.Join(testenv.RepoRoot(), "docs", "support")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	t.Logf("wrote docs/support/%s (%d bytes)", name, len(png))
}

func strconvQuote(s string) string { return strconv.Quote(strings.TrimSpace(s)) }
