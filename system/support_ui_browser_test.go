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
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/dev/temporalserver"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/dev/testenv/temporaltest"
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
	e := newE2E(t)
	ctx := context.Background()
	ns := e.cfg.TemporalNamespace
	ui := supportWebUI(t, e.cfg)

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

// supportWebUI serves the embedded Temporal Web UI against the package's
// Temporal server, opening the test's namespace, with the payload codec
// behind the UI's /codec proxy and its bearer, as encore dev serves it; it
// returns the UI's base URL.
func supportWebUI(t *testing.T, cfg config.Config) string {
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
	srv := temporaltest.Temporal(t)
	ui, err := temporalserver.StartWebUI(ln, srv.FrontendAddress(), cfg.TemporalNamespace, admin.URL+"/codec", supportUICodecBearer)
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
