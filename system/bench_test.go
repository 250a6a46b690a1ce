package system_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/workflows"
)

func trivial(ctx workflow.Context) (string, error) { return "done", nil }

// trivialPerSecond starts and finishes n trivial workflows, 64 at a time,
// on the same server and worker process: the ceiling a booking is compared
// with.
func trivialPerSecond(b *testing.B, c client.Client, n int) float64 {
	w := sdkworker.New(c, "bench-trivial", sdkworker.Options{})
	w.RegisterWorkflowWithOptions(trivial, workflow.RegisterOptions{Name: "Trivial"})
	require.NoError(b, w.Start())
	defer w.Stop()
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
					TaskQueue: "bench-trivial", EnableEagerStart: true}, "Trivial")
				if err != nil {
					b.Error(err)
					return
				}
				if err := run.Get(context.Background(), nil); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkBookingsEndToEnd: each op is one booking through the real edge,
// saga and sandbox: hold, checkout (fraud, authorise), the sandbox's signed
// webhook, confirm, capture, tickets, notification. 64 fans at a time.
// Reported beside trivial workflows per second on the same server, with the
// workflow tasks one booking costs.
func BenchmarkBookingsEndToEnd(b *testing.B) {
	e := newE2E(b)
	ctx := context.Background()
	ceiling := trivialPerSecond(b, e.temporal, 400)
	seats := 30 * 20
	if b.N > seats {
		b.Fatalf("at most %d bookings per run (-benchtime %dx)", seats, seats)
	}
	var next atomic.Int64
	ids := make([]string, b.N)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				token := e.fan(fmt.Sprintf("bench%d", i))
				id, status, co := e.holdAndCheckout(token, []string{e.seat(i/20, 1+i%20)}, e.card())
				if status != http.StatusOK {
					b.Errorf("checkout: %d %v", status, co)
					return
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	// Completed means notified: the saga's last step.
	for e.count(`SELECT count(*) FROM notifications n JOIN reservations r ON r.id = n.reservation_id WHERE r.event_id = $1`, e.eventID) < b.N {
		if time.Since(start) > 5*time.Minute {
			b.Fatal("bookings did not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	// Workflow tasks per booking, from one booking's history.
	tasks := 0
	iter := e.temporal.GetWorkflowHistory(ctx, workflows.BookingWorkflowID(ids[0]), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(b, err)
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			tasks++
		}
	}
	b.ReportMetric(rate, "bookings/s")
	b.ReportMetric(ceiling, "trivial_wf/s")
	b.ReportMetric(rate/ceiling, "fraction_of_ceiling")
	b.ReportMetric(float64(tasks), "wf_tasks/booking")
}
