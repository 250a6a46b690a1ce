package saga_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/encore-tickets/encore/booking/saga"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/demo"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/internal/testenv"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"

	"github.com/encore-tickets/encore/vocab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// deps are the worker's real activities (the payment client is never called
// by these tests: no checkout happens).
func deps(t *testing.T, svc *holds.Service) saga.Dependencies {
	booking, err := system.BookingActivities(config.Default(), svc.Store, svc.Log)
	require.NoError(t, err)
	return saga.Dependencies{Holds: &saga.HoldActivities{Service: svc}, Booking: booking}
}

// TestTheBookingWorkflowExpiresAHoldInTheRealDatabase runs the project's own
// worker against the embedded Temporal server: a hold is placed, its booking
// workflow started, and the expiry timer at the hold's absolute expires_at
// ends the reservation in PostgreSQL.
func TestTheBookingWorkflowExpiresAHoldInTheRealDatabase(t *testing.T) {
	ctx := context.Background()
	pool := testenv.DB(t)
	rdb, prefix := testenv.Redis(t)
	srv := testenv.Temporal(t)
	eventID := "evt_" + testenv.RandomSuffix()
	require.NoError(t, demo.Create(ctx, pool, demo.Event{
		ID: eventID, Title: "Worker test", VenueID: "ven_w", VenueName: "W", City: "C", Currency: "EUR",
		StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour),
		Sections: []demo.Section{{ID: eventID + "_a", Name: "A", Rows: 1, PerRow: 10, BasePrice: 1000}},
	}))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := &holds.Service{Store: store.New(pool, store.Options{}), Hints: seathint.New(rdb, prefix), Log: log}
	svc.Register(prometheus.NewRegistry())

	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace()})
	require.NoError(t, err)
	defer c.Close()
	w := saga.NewWorker(c, deps(t, svc))
	require.NoError(t, w.Start())
	defer w.Stop()

	seat := demo.SeatID(eventID+"_a", 0, 1)
	who := session.Identity{UserID: "fan-" + eventID, DeviceID: "d"}
	ans, err := svc.Hold(ctx, who, holds.Cart{EventID: eventID, SeatIDs: []string{seat}}, "", nil, "")
	require.NoError(t, err)
	hold := ans.Hold
	// Shorten the hold so the test need not wait ten minutes: the workflow
	// takes the absolute expiry from its input, as the API passes it.
	var expiresAt time.Time
	require.NoError(t, pool.QueryRow(ctx, `UPDATE reservations SET expires_at = now() + interval '2 seconds' WHERE id = $1 RETURNING expires_at`, hold.ID).Scan(&expiresAt))

	in := saga.BookingInput{ReservationID: hold.ID.String(), EventID: eventID, UserID: who.UserID, ExpiresAt: expiresAt,
		LateEventGrace: time.Millisecond}
	require.NoError(t, saga.StartBooking(ctx, c, in))
	require.NoError(t, saga.StartBooking(ctx, c, in), "a second start is a no-op")

	var res saga.BookingResult
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, c.GetWorkflow(wctx, saga.BookingWorkflowID(hold.ID.String()), "").Get(wctx, &res))
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
	pool := testenv.DB(t)
	srv := testenv.Temporal(t)
	eventID := "evt_" + testenv.RandomSuffix()
	require.NoError(t, demo.Create(ctx, pool, demo.Event{
		ID: eventID, Title: "Release test", VenueID: "ven_w", VenueName: "W", City: "C", Currency: "EUR",
		StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour),
		Sections: []demo.Section{{ID: eventID + "_a", Name: "A", Rows: 1, PerRow: 10, BasePrice: 1000}},
	}))
	svc := &holds.Service{Store: store.New(pool, store.Options{}), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace()})
	require.NoError(t, err)
	defer c.Close()
	w := saga.NewWorker(c, deps(t, svc))
	require.NoError(t, w.Start())
	defer w.Stop()

	who := session.Identity{UserID: "fan-" + eventID, DeviceID: "d"}
	ans, err := svc.Hold(ctx, who, holds.Cart{EventID: eventID, SeatIDs: []string{demo.SeatID(eventID+"_a", 0, 2)}}, "", nil, "")
	require.NoError(t, err)
	hold := ans.Hold
	id := saga.BookingWorkflowID(hold.ID.String())
	require.NoError(t, saga.StartBooking(ctx, c, saga.BookingInput{ReservationID: hold.ID.String(), EventID: eventID,
		UserID: who.UserID, ExpiresAt: hold.ExpiresAt, LateEventGrace: time.Millisecond}))
	require.NoError(t, c.SignalWorkflow(ctx, id, "", saga.SignalRelease, nil))
	var res saga.BookingResult
	require.NoError(t, c.GetWorkflow(ctx, id, "").Get(ctx, &res))
	require.Equal(t, vocab.BookingCancelled, res.Status)
	resp, err := c.QueryWorkflow(ctx, id, "", saga.QueryStep)
	require.NoError(t, err)
	var step vocab.Step
	require.NoError(t, resp.Get(&step))
	require.Equal(t, vocab.StepDone, step)
}
