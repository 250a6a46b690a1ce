package saga

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestActivitiesKeepTheirRecordedNames pins the activity names the recorded
// histories hold. The workflows call methods, so each method must carry the
// name it is registered under, and every exported method of the activity
// structs must be one of them (a helper made exported would otherwise be
// callable from a workflow without being registered).
func TestActivitiesKeepTheirRecordedNames(t *testing.T) {
	recorded := []string{ActivityLoadBooking, ActivityExpireHold, ActivityReleaseHold, ActivityExtendHold,
		ActivityFraudCheck, ActivityAuthorise, ActivityConfirmSale, ActivityCapture, ActivityVoid, ActivityRefund,
		ActivityCancelSale, ActivityIssueTickets, ActivityNotify, ActivityFlagPayment, ActivityReconcile, ActivityRefundPart,
		ActivityStaffAction, ActivityPaidPage, ActivityJobItem, ActivityFinishJob, ActivityRelocate, ActivityRefundWalk,
		ActivityTellWalked, ActivityAuditStore, ActivityUndeliveredWebhooks, ActivityRepair}
	var got []string
	for _, act := range activitiesOf(Dependencies{Holds: &HoldActivities{}, Booking: &Activities{}}) {
		got = append(got, act.name)
		fn := runtime.FuncForPC(reflect.ValueOf(act.fn).Pointer()).Name()
		require.Truef(t, strings.HasSuffix(fn, "."+act.name+"-fm"), "%s is registered as %q", fn, act.name)
	}
	require.ElementsMatch(t, recorded, got)
	for _, typ := range []reflect.Type{reflect.TypeFor[*Activities](), reflect.TypeFor[*HoldActivities]()} {
		for m := range typ.Methods() {
			require.Containsf(t, got, m.Name, "%s.%s is exported but not an activity", typ, m.Name)
		}
	}
}
