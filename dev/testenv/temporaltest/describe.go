package temporaltest

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// Describe tells, for a failing test's message, what a workflow is doing
// and what it did: its status, its pending activities with their attempts
// and last failure, and the last events of its history. The saga's steps are
// local activities, whose markers all carry one name; each is shown with
// its activity type, attempt and completion time, and every failure with its
// message, decoded with opts' converters (Encore's payloads and failure
// messages are encrypted, so the raw history says little). A workflow that
// cannot be described says why.
func Describe(ctx context.Context, c client.Client, opts client.Options, workflowID string, last int) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return fmt.Sprintf("%s: describe: %v\n", workflowID, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", workflowID, d.GetWorkflowExecutionInfo().GetStatus())
	for _, a := range d.GetPendingActivities() {
		fmt.Fprintf(&b, "  pending %s attempt %d: %s\n", a.GetActivityType().GetName(), a.GetAttempt(),
			failureText(opts.FailureConverter, a.GetLastFailure()))
	}
	var lines []string
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			lines = append(lines, "  history: "+err.Error())
			break
		}
		lines = append(lines, "  "+eventLine(opts, e))
	}
	b.WriteString(strings.Join(lines[max(0, len(lines)-last):], "\n") + "\n")
	return b.String()
}

// eventLine is one history event: its ID, type and what names it.
func eventLine(opts client.Options, e *historypb.HistoryEvent) string {
	line := fmt.Sprintf("%d %s", e.GetEventId(), e.GetEventType())
	fc := opts.FailureConverter
	switch {
	case e.GetMarkerRecordedEventAttributes() != nil:
		a := e.GetMarkerRecordedEventAttributes()
		// The SDK's local-activity marker data (its fields, as recorded).
		var la struct {
			ActivityType string
			Attempt      int32
			ReplayTime   time.Time
		}
		dc := opts.DataConverter
		if dc == nil {
			dc = converter.GetDefaultDataConverter()
		}
		if data := a.GetDetails()["data"]; data != nil && dc.FromPayloads(data, &la) == nil {
			line += fmt.Sprintf(" %s attempt %d at %s", la.ActivityType, la.Attempt, la.ReplayTime.UTC().Format("15:04:05.000"))
		} else {
			line += " " + a.GetMarkerName()
		}
		if f := a.GetFailure(); f != nil {
			line += ": " + failureText(fc, f)
		}
	case e.GetActivityTaskScheduledEventAttributes() != nil:
		line += " " + e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
	case e.GetActivityTaskFailedEventAttributes() != nil:
		line += ": " + failureText(fc, e.GetActivityTaskFailedEventAttributes().GetFailure())
	case e.GetWorkflowExecutionSignaledEventAttributes() != nil:
		line += " " + e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName()
	case e.GetWorkflowExecutionUpdateAcceptedEventAttributes() != nil:
		a := e.GetWorkflowExecutionUpdateAcceptedEventAttributes()
		line += " " + a.GetAcceptedRequest().GetInput().GetName() + " " + a.GetProtocolInstanceId()
	case e.GetWorkflowExecutionUpdateCompletedEventAttributes() != nil:
		a := e.GetWorkflowExecutionUpdateCompletedEventAttributes()
		line += " " + a.GetMeta().GetUpdateId()
		if f := a.GetOutcome().GetFailure(); f != nil {
			line += ": " + failureText(fc, f)
		}
	case e.GetWorkflowTaskFailedEventAttributes() != nil:
		a := e.GetWorkflowTaskFailedEventAttributes()
		line += " " + a.GetCause().String() + ": " + failureText(fc, a.GetFailure())
	case e.GetWorkflowTaskTimedOutEventAttributes() != nil:
		line += " " + e.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType().String()
	case e.GetWorkflowExecutionFailedEventAttributes() != nil:
		line += ": " + failureText(fc, e.GetWorkflowExecutionFailedEventAttributes().GetFailure())
	}
	return line
}

// failureText is a failure's message, decoded when fc can (an encrypted
// message reads "Encoded failure" otherwise).
func failureText(fc converter.FailureConverter, f *failurepb.Failure) string {
	if f == nil {
		return ""
	}
	if fc != nil {
		if err := fc.FailureToError(f); err != nil {
			return err.Error()
		}
	}
	return f.GetMessage()
}
