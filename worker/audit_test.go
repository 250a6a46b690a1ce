package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/workflows"
)

// runAudit runs the inventory audit workflow once, as its schedule does.
func runAudit(t *testing.T, c client.Client) (store.AuditReport, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.AuditWorkflowID + "-" + testenv.RandomSuffix(),
		TaskQueue: workflows.TaskQueue}, workflows.AuditWorkflowName)
	require.NoError(t, err)
	var rep store.AuditReport
	err = run.Get(ctx, &rep)
	return rep, err
}

// TestTheScheduledAuditFailsOnARoomNightWhoseCountersDriftedFromItsHolds:
// the audit the worker schedules nightly passes on consistent inventory and
// fails, naming the rule, when a room-night's sold counter no longer
// matches its paid nights (the check that sold never passes allotment plus
// the overbooking limit rests on those counters; the table's CHECK refuses
// a counter past the limit outright).
func TestTheScheduledAuditFailsOnARoomNightWhoseCountersDriftedFromItsHolds(t *testing.T) {
	f := newWorkerFixture(t)
	ctx := context.Background()
	prop := "prp_" + testenv.RandomSuffix()
	night := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 3)
	require.NoError(t, f.svc.Store.Hotels.CreateProperty(ctx, store.PropertySpec{ID: prop, Name: "Audit Hotel", City: "A", Currency: "EUR",
		FreeCancelDays: 1, RoomTypes: []store.RoomTypeSpec{{ID: "double", Name: "Double", MaxGuests: 2, Allotment: 2, Price: 9000}}},
		night, 1))

	rep, err := runAudit(t, f.client)
	require.NoError(t, err, "consistent inventory: %s", rep)
	require.Zero(t, rep.Violations())

	_, err = f.pool.Exec(ctx, `UPDATE room_nights SET sold = sold + 1 WHERE property_id = $1`, prop)
	require.NoError(t, err)
	rep, err = runAudit(t, f.client)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, activities.ErrTypeAuditFailed, app.Type())
	require.Contains(t, app.Error(), "room-nights miscounted: 1")

	_, err = f.pool.Exec(ctx, `UPDATE room_nights SET sold = sold - 1 WHERE property_id = $1`, prop)
	require.NoError(t, err)
	_, err = runAudit(t, f.client)
	require.NoError(t, err)

	// The worker's schedule: created once, a second call is a no-op.
	require.NoError(t, workflows.EnsureAuditSchedule(ctx, f.client, 24*time.Hour))
	require.NoError(t, workflows.EnsureAuditSchedule(ctx, f.client, 24*time.Hour))
	desc, err := f.client.ScheduleClient().GetHandle(ctx, workflows.AuditScheduleID).Describe(ctx)
	require.NoError(t, err)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, workflows.AuditWorkflowName, action.Workflow)
}
