package system_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

// A capture stuck behind the provider's outage used to be a local activity
// retried inside the workflow task: no pending activity, nothing for support
// to see or act on. It is now a pending activity with its attempts and last
// failure, as DescribeWorkflowExecution (and so the UI's Pending Activities)
// shows; once the provider is back, retry-now takes the booking to PAID
// without waiting out the backoff.
func TestAStuckCaptureIsAPendingActivityAndRetryNowPaysOnceTheFaultClears(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	_, err := psp.SetFaults(ctx, e.pspURL, psp.Faults{CaptureUnavailable: true})
	require.NoError(t, err)
	fan := e.fan("stuck-capture")
	id, _ := e.checkedOut(fan, e.pay.card(), e.seat(1, 1))
	wid := workflows.BookingWorkflowID(id)

	// The server spaces the attempts 1, 1, 2, 4, 8 s apart: once attempt 5
	// has failed (the pending attempt reads 6, about 8 s in) the next waits
	// 8 s, well past what retry-now takes.
	var capture *workflow.PendingActivityInfo
	require.Eventually(t, func() bool {
		d, err := e.temporal.DescribeWorkflowExecution(ctx, wid, "")
		if err != nil {
			return false
		}
		for _, pa := range d.GetPendingActivities() {
			if pa.GetActivityType().GetName() == workflows.ActivityCapture && pa.GetAttempt() >= 6 {
				capture = pa
				return true
			}
		}
		return false
	}, 90*time.Second, 100*time.Millisecond, "the failing capture is a pending activity with its attempts")
	require.GreaterOrEqual(t, capture.GetAttempt(), int32(2))
	require.NotNil(t, capture.GetLastFailure(), "its last failure is shown")
	require.Equal(t, vocab.StepCapturing, stepOf(t, e, wid))
	d, err := e.temporal.DescribeWorkflowExecution(ctx, wid, "")
	require.NoError(t, err)
	attrs := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	attr := func(name string, v any) {
		t.Helper()
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(attrs[name], v), name)
	}
	var status, step string
	var attention bool
	attr(workflows.SearchAttrStatus, &status)
	attr(workflows.SearchAttrStep, &step)
	attr(workflows.SearchAttrAttention, &attention)
	require.Equal(t, string(vocab.BookingPaid), status, "the list says PAID as the database does once the sale is confirmed")
	require.Equal(t, string(vocab.StepCapturing), step)
	require.True(t, attention, "a capture failing past a few attempts asks for staff")

	_, err = psp.SetFaults(ctx, e.pspURL, psp.Faults{})
	require.NoError(t, err)
	asked := time.Now()
	step, err = workflows.RetryNow(ctx, e.temporal, id, "retry-now-test-1",
		workflows.StaffCancelRequest{Staff: "olga", Reason: "the provider is back"})
	require.NoError(t, err)
	require.Equal(t, "capture", step)
	require.Eventually(t, func() bool {
		s := stepOf(t, e, wid)
		return s == vocab.StepPaid || s == vocab.StepDone
	}, 20*time.Second, 100*time.Millisecond, "the booking completes its sale")
	require.Less(t, time.Since(asked), 5*time.Second, "sooner than the capture's next attempt (8 s after the last)")
	e.waitStatus(fan, id, vocab.BookingPaid, 10*time.Second)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM admin_audit WHERE action = 'booking.retry-now' AND target = $1`, "booking:"+id),
		"who asked is audited")
}

// stepOf queries the booking's saga for its step.
func stepOf(t *testing.T, e *e2e, wid string) vocab.Step {
	t.Helper()
	v, err := e.temporal.QueryWorkflow(context.Background(), wid, "", workflows.QueryStep)
	require.NoError(t, err)
	var s vocab.Step
	require.NoError(t, v.Get(&s))
	return s
}

// TestRecordSteeredHistories records, when ENCORE_RECORD_HISTORIES is set,
// the histories of the support paths into workflows/testdata, so their
// replay guards every later change of the saga: a capture stuck behind the
// provider's outage (local attempt, regular activity, attention) retried
// now and then refunded and closed; a booking awaiting 3-D Secure whose
// workflow is cancelled (release and void under a disconnected context).
func TestRecordSteeredHistories(t *testing.T) {
	t.Parallel()
	if os.Getenv("ENCORE_RECORD_HISTORIES") == "" {
		t.Skip("set ENCORE_RECORD_HISTORIES=1 to record the steered histories into workflows/testdata")
	}
	e := newE2E(t)
	ctx := context.Background()
	staff := workflows.StaffCancelRequest{Staff: "olga", Reason: "recorded"}

	_, err := psp.SetFaults(ctx, e.pspURL, psp.Faults{CaptureUnavailable: true})
	require.NoError(t, err)
	fan := e.fan("rec-stuck")
	id, _ := e.checkedOut(fan, e.pay.card(), e.seat(6, 1))
	require.Eventually(t, func() bool {
		d, err := e.temporal.DescribeWorkflowExecution(ctx, workflows.BookingWorkflowID(id), "")
		if err != nil {
			return false
		}
		for _, pa := range d.GetPendingActivities() {
			if pa.GetActivityType().GetName() == workflows.ActivityCapture && pa.GetAttempt() >= 5 {
				return true
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond)
	_, err = psp.SetFaults(ctx, e.pspURL, psp.Faults{})
	require.NoError(t, err)
	_, err = workflows.RetryNow(ctx, e.temporal, id, "rec-retry", staff)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return stepOf(t, e, workflows.BookingWorkflowID(id)) == vocab.StepPaid },
		20*time.Second, 100*time.Millisecond)
	status, err := workflows.RefundAndClose(ctx, e.temporal, id, "rec-close", staff)
	require.NoError(t, err)
	require.Equal(t, vocab.BookingRefunded, status)
	e.recordHistory("capture_stuck_retried_now_then_refund_and_close", id)

	fan2 := e.fan("rec-cancelled")
	id2, _ := e.checkedOut(fan2, "pm_card_threeDSecure2Required", e.seat(6, 2))
	require.NoError(t, e.temporal.CancelWorkflow(ctx, workflows.BookingWorkflowID(id2), ""))
	e.recordHistoryOf("threeds_pending_workflow_cancelled", id2)
}

// recordHistoryOf writes the history of the booking's workflow once it has
// closed however it ended (recordHistory wants it completed).
func (e *e2e) recordHistoryOf(name, id string) {
	t := e.t
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wid := workflows.BookingWorkflowID(id)
	require.Eventually(t, func() bool {
		d, err := e.temporal.DescribeWorkflowExecution(ctx, wid, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil
	}, 60*time.Second, 200*time.Millisecond)
	e.writeHistory(ctx, name, id)
}

// A refund asked for during a stuck capture used to be accepted, answered
// PAID after 80 s and do nothing, with no audit record and no e-mail; a
// second one was answered from the first's Update. refund-and-close through
// the API stops the capture, gives the money back, writes the audit record
// and tells the fan; asking again is answered from the booking as it now
// is, never a stale PAID.
func TestRefundAndCloseThroughTheAPIDuringAStuckCaptureGivesTheMoneyBackAuditsAndEmails(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ctx := context.Background()
	_, err := psp.SetFaults(ctx, e.pspURL, psp.Faults{CaptureUnavailable: true})
	require.NoError(t, err)
	fan := e.fanWithEmail("stuck-refund", "stuck-"+e.eventID+"@example.test")
	id, _ := e.checkedOut(fan, e.pay.card(), e.seat(7, 1))
	wid := workflows.BookingWorkflowID(id)
	require.Eventually(t, func() bool {
		d, err := e.temporal.DescribeWorkflowExecution(ctx, wid, "")
		return err == nil && len(d.GetPendingActivities()) > 0 && d.GetPendingActivities()[0].GetAttempt() >= 2
	}, 60*time.Second, 100*time.Millisecond)

	sam := e.staff("sam", "", session.Support)
	started := time.Now()
	status, res := e.call(http.MethodPost, "/v1/admin/bookings/"+id+"/refund-and-close", sam, map[string]any{"reason": "the provider is down"})
	require.Equal(t, http.StatusOK, status, "%v", res)
	require.Less(t, time.Since(started), 20*time.Second, "answered, not left to time out")
	// Nothing was ever captured: the authorisation is voided, and support,
	// the fan's page and the workflow's status all say CANCELLED (the saga
	// used to end REFUNDED while the page said CANCELLED).
	require.Equal(t, string(vocab.BookingCancelled), res["status"], "%v", res)
	_, page := e.call(http.MethodGet, "/v1/bookings/"+id, fan, nil)
	require.Equal(t, res["status"], page["status"], "%v", page)
	var ended workflows.BookingResult
	require.NoError(t, e.temporal.GetWorkflow(ctx, wid, "").Get(ctx, &ended))
	require.Equal(t, vocab.BookingCancelled, ended.Status)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM admin_audit WHERE action = 'booking.refund-and-close' AND target = $1 AND actor = $2`,
		"booking:"+id, "sam"))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM notification_log WHERE reservation_id = $1 AND kind = 'cancellation'`, id))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM reservations WHERE id = $1 AND cancelled_by = 'sam'`, id))

	status, res = e.call(http.MethodPost, "/v1/admin/bookings/"+id+"/refund-and-close", sam, map[string]any{"reason": "again"})
	require.NotEqual(t, string(vocab.BookingPaid), res["status"], "a second request is never answered PAID: %d %v", status, res)
}
