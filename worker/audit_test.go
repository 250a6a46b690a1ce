package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
	encworker "github.com/encore-tickets/encore/worker"
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

// auditGauge reads encore_audit_violations for one rule.
func auditGauge(t *testing.T, reg *prometheus.Registry, rule string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != "encore_audit_violations" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "rule" && l.GetValue() == rule {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no encore_audit_violations{rule=%q}", rule)
	return 0
}

// TestTheScheduledAuditFailsOnTicketsBeyondTheirSaleOrRevokedTwiceAndPublishesEachRule:
// the nightly audit checks the tickets as encore audit does, per booking no
// more tickets or revoked tickets than its sale issued (the event
// cancellation's 501st revoked ticket for 500 paid bookings) and no ticket
// revoked twice, fails naming each, and publishes every rule's count on
// encore_audit_violations (the scheduled run published nothing before).
func TestTheScheduledAuditFailsOnTicketsBeyondTheirSaleOrRevokedTwiceAndPublishesEachRule(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newWorkerFixture(t, func(d *encworker.Dependencies) { d.Booking.Metrics = activities.NewMetrics(reg) })
	ctx := context.Background()
	st := f.svc.Store
	seat := func(n int) string { return demo.SeatID(f.eventID+"_a", 0, n) }
	ticket := func(id uuid.UUID, n int) store.TicketRow {
		return store.TicketRow{ID: "tkt_" + uuid.NewString(), ReservationID: id, EventID: f.eventID, SectionID: f.eventID + "_a",
			SeatID: seat(n), Unit: 1, UserID: "fan-" + f.eventID, SecretSealed: []byte("sealed")}
	}
	sold, _ := f.hold(t, seat(1))
	ok, err := st.Bookings.ConfirmSale(ctx, sold.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, st.Tickets.InsertTickets(ctx, []store.TicketRow{ticket(sold.ID, 1)}))
	_, err = st.Bookings.CancelPaid(ctx, sold.ID)
	require.NoError(t, err)
	require.NoError(t, st.Bookings.SavePayment(ctx, sold.ID, "pi_"+f.eventID, money.Money{Amount: 1000, Currency: "EUR"},
		vocab.PaymentRefunded, 1))

	rep, err := runAudit(t, f.client)
	require.NoError(t, err, "a sold booking's ticket, revoked once: %s", rep)
	for _, rule := range []string{"tickets_beyond_sale", "tickets_revoked_twice", "double_sale", "places_with_two_holders"} {
		require.Zero(t, auditGauge(t, reg, rule), rule)
	}

	// A hold never sold with a revoked ticket: more revoked tickets than
	// its sale issued.
	never, _ := f.hold(t, seat(2))
	_, err = st.Holds.Release(ctx, never.ID, "")
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `INSERT INTO tickets (id, reservation_id, event_id, section_id, seat_id, user_id, secret_sealed, status, revoked_at)
		VALUES ($1, $2, $3, $4, $5, 'fan', '\x00', 'REVOKED', now())`, "tkt_"+uuid.NewString(), never.ID, f.eventID, f.eventID+"_a", seat(2))
	require.NoError(t, err)
	// The sold booking's revocation rewritten: revoked twice.
	_, err = f.pool.Exec(ctx, `UPDATE tickets SET status = 'VALID' WHERE reservation_id = $1`, sold.ID)
	require.NoError(t, err)
	rep, err = runAudit(t, f.client)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, activities.ErrTypeAuditFailed, app.Type())
	require.Contains(t, app.Error(), "bookings with more tickets or revoked tickets than their sale issued: 1")
	require.Contains(t, app.Error(), "tickets revoked twice: 1")
	require.Equal(t, 1.0, auditGauge(t, reg, "tickets_beyond_sale"))
	require.Equal(t, 1.0, auditGauge(t, reg, "tickets_revoked_twice"))
}
