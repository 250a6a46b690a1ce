package worker_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/dev/testenv/temporaltest"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
	encworker "github.com/encore-tickets/encore/worker"
	"github.com/encore-tickets/encore/workflows"

	"github.com/encore-tickets/encore/vocab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// deps are the worker's real activities (the payment client is never called
// by these tests: no checkout happens).
func deps(t *testing.T, svc *holds.Service) encworker.Dependencies {
	booking, err := system.BookingActivities(config.Default(), svc.Store, svc.Log)
	require.NoError(t, err)
	return encworker.Dependencies{Holds: &activities.Holds{Service: svc}, Booking: booking}
}

// workerFixture is a one-section event, the hold service over the real
// database and Redis, and the project's own worker on the embedded Temporal
// server.
type workerFixture struct {
	pool    *pgxpool.Pool
	rdb     *redis.Client
	prefix  string
	eventID string
	svc     *holds.Service
	client  client.Client
}

func newWorkerFixture(t *testing.T, with ...func(*encworker.Dependencies)) *workerFixture {
	t.Helper()
	f := &workerFixture{pool: testenv.DB(t), eventID: "evt_" + testenv.RandomSuffix()}
	f.rdb, f.prefix = testenv.Redis(t)
	require.NoError(t, demo.Create(context.Background(), f.pool, demo.Event{
		ID: f.eventID, Title: "Worker test " + t.Name(), VenueID: "ven_w", VenueName: "W", City: "C", Currency: "EUR",
		StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour),
		Sections: []demo.Section{{ID: f.eventID + "_a", Name: "A", Rows: 1, PerRow: 10, BasePrice: 1000}},
	}))
	f.svc = &holds.Service{Store: store.New(f.pool, store.Options{}), Hints: seathint.New(f.rdb, f.prefix),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	f.svc.Register(prometheus.NewRegistry())
	f.client = temporaltest.TemporalClient(t, nil)
	d := deps(t, f.svc)
	for _, fn := range with {
		fn(&d)
	}
	w := encworker.New(f.client, d)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return f
}

// hold places a one-seat hold for a fresh fan.
func (f *workerFixture) hold(t *testing.T, seat string) (store.Hold, session.Identity) {
	t.Helper()
	who := session.Identity{UserID: "fan-" + f.eventID, DeviceID: "d"}
	ans, err := f.svc.Hold(context.Background(), who, holds.Cart{EventID: f.eventID, SeatIDs: []string{seat}}, "", nil, "")
	require.NoError(t, err)
	return ans.Hold, who
}

// startWithoutCheckout starts a booking workflow with no checkout Update, as
// bookings were started when a hold committed before checkout started them:
// such workflows may still be running, and their timer and release must work.
func startWithoutCheckout(t *testing.T, c client.Client, in workflows.BookingInput) {
	t.Helper()
	_, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: workflows.BookingWorkflowID(in.ReservationID),
		TaskQueue: workflows.TaskQueue}, workflows.BookingWorkflowName, in)
	require.NoError(t, err)
}

// TestTheBookingWorkflowExpiresAHoldInTheRealDatabase runs the project's own
// worker against the embedded Temporal server: a hold is placed, its booking
// workflow started, and the expiry timer at the hold's absolute expires_at
// ends the reservation in PostgreSQL.
func TestTheBookingWorkflowExpiresAHoldInTheRealDatabase(t *testing.T) {
	ctx := context.Background()
	f := newWorkerFixture(t)
	pool, rdb, prefix, eventID, c := f.pool, f.rdb, f.prefix, f.eventID, f.client
	seat := demo.SeatID(eventID+"_a", 0, 1)
	hold, who := f.hold(t, seat)
	// Shorten the hold so the test need not wait ten minutes: the workflow
	// takes the absolute expiry from its input, as the API passes it.
	var expiresAt time.Time
	require.NoError(t, pool.QueryRow(ctx, `UPDATE reservations SET expires_at = now() + interval '2 seconds' WHERE id = $1 RETURNING expires_at`, hold.ID).Scan(&expiresAt))

	in := workflows.BookingInput{ReservationID: hold.ID.String(), EventID: eventID, UserID: who.UserID, ExpiresAt: expiresAt,
		LateEventGrace: time.Millisecond}
	startWithoutCheckout(t, c, in)

	var res workflows.BookingResult
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, c.GetWorkflow(wctx, workflows.BookingWorkflowID(hold.ID.String()), "").Get(wctx, &res))
	require.Equal(t, vocab.BookingExpired, res.Status)

	var status vocab.ReservationStatus
	var seatStatus vocab.SeatStatus
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM reservations WHERE id = $1`, hold.ID).Scan(&status))
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM seats WHERE id = $1`, seat).Scan(&seatStatus))
	require.Equal(t, vocab.ReservationExpired, status)
	require.Equal(t, vocab.SeatAvailable, seatStatus)
	require.Zero(t, rdb.Exists(ctx, seathint.New(rdb, prefix).Key(eventID, seat)).Val(), "the hint was given back")
}

func TestAReleaseSignalEndsTheHoldAsCancelled(t *testing.T) {
	ctx := context.Background()
	f := newWorkerFixture(t)
	c := f.client
	hold, who := f.hold(t, demo.SeatID(f.eventID+"_a", 0, 2))
	id := workflows.BookingWorkflowID(hold.ID.String())
	startWithoutCheckout(t, c, workflows.BookingInput{ReservationID: hold.ID.String(), EventID: f.eventID,
		UserID: who.UserID, ExpiresAt: hold.ExpiresAt, LateEventGrace: time.Millisecond})
	require.NoError(t, c.SignalWorkflow(ctx, id, "", workflows.SignalRelease, nil))
	var res workflows.BookingResult
	require.NoError(t, c.GetWorkflow(ctx, id, "").Get(ctx, &res))
	require.Equal(t, vocab.BookingCancelled, res.Status)
	resp, err := c.QueryWorkflow(ctx, id, "", workflows.QueryStep)
	require.NoError(t, err)
	var step vocab.Step
	require.NoError(t, resp.Get(&step))
	require.Equal(t, vocab.StepDone, step)
}

// TestTheBacklogIsTheAgeOfTheOldestWorkflowTaskNoWorkerTook: a workflow
// started on a queue nobody polls waits, and its age is the backlog.
func TestTheBacklogIsTheAgeOfTheOldestWorkflowTaskNoWorkerTook(t *testing.T) {
	srv := temporaltest.Temporal(t)
	c := temporaltest.TemporalClient(t, nil)
	ctx := context.Background()
	queue := "unpolled-" + testenv.RandomSuffix()
	idle, err := workflows.Backlog(ctx, c, srv.Namespace(), queue)
	require.NoError(t, err)
	require.Zero(t, idle, "nothing waits on a new queue")

	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, workflows.BookingWorkflowName, workflows.BookingInput{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		age, err := workflows.Backlog(ctx, c, srv.Namespace(), queue)
		return err == nil && age >= time.Second
	}, 20*time.Second, 200*time.Millisecond, "the waiting task ages")
}
