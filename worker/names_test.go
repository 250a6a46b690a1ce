package worker

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/workflows"
)

// TestActivitiesKeepTheirRecordedNames pins the activity names the recorded
// histories hold. The workflows call methods, so each method must carry the
// name it is registered under, and every exported method of the activity
// structs must be one of them (a helper made exported would otherwise be
// callable from a workflow without being registered).
func TestActivitiesKeepTheirRecordedNames(t *testing.T) {
	recorded := []string{workflows.ActivityLoadBooking, workflows.ActivityExpireHold, workflows.ActivityReleaseHold, workflows.ActivityExtendHold,
		workflows.ActivityFraudCheck, workflows.ActivityAuthorise, workflows.ActivityConfirmSale, workflows.ActivityCapture, workflows.ActivityVoid, workflows.ActivityRefund,
		workflows.ActivityCancelSale, workflows.ActivityIssueTickets, workflows.ActivityNotify, workflows.ActivityFlagPayment, workflows.ActivityReconcile, workflows.ActivityRefundPart,
		workflows.ActivityStaffAction, workflows.ActivityPaidPage, workflows.ActivityJobItem, workflows.ActivityFinishJob, workflows.ActivityRelocate, workflows.ActivityRefundWalk,
		workflows.ActivityTellWalked, workflows.ActivityAuditStore, workflows.ActivityUndeliveredWebhooks, workflows.ActivityRepair,
		workflows.ActivityRecordStaffStep, workflows.ActivitySettledStatus, workflows.ActivityCheckPayment, workflows.ActivityPaySellers}
	var got []string
	for _, act := range activitiesOf(Dependencies{Holds: &activities.Holds{}, Booking: &activities.Booking{}}) {
		got = append(got, act.name)
		fn := runtime.FuncForPC(reflect.ValueOf(act.fn).Pointer()).Name()
		require.Truef(t, strings.HasSuffix(fn, "."+act.name+"-fm"), "%s is registered as %q", fn, act.name)
	}
	require.ElementsMatch(t, recorded, got)
	for _, typ := range []reflect.Type{reflect.TypeFor[*activities.Booking](), reflect.TypeFor[*activities.Holds](),
		reflect.TypeFor[*activities.Reconciliation](), reflect.TypeFor[*activities.Walks]()} {
		for m := range typ.Methods() {
			require.Containsf(t, got, m.Name, "%s.%s is exported but not an activity", typ, m.Name)
		}
	}
}
