package system_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"
)

func trivial(ctx workflow.Context) (string, error) { return "done", nil }

// BenchmarkBookingsEndToEnd: each op is one booking through the real edge,
// saga and sandbox: hold, checkout (fraud, authorise), the sandbox's signed
// webhook, confirm, capture, tickets, notification. 64 fans at a time.
// Reported beside trivial workflows per second on the same server, with the
// workflow tasks one booking costs.
func BenchmarkBookingsEndToEnd(b *testing.B) {
	e := newE2E(b)
	// The ceiling: 400 trivial workflows, 64 at a time, on the same server
	// and worker process.
	ceiling, _ := trivialCeiling(b, e.temporal, 400, 64)
	seats := 30 * 20
	if b.N > seats {
		b.Fatalf("at most %d bookings per run (-benchtime %dx)", seats, seats)
	}
	ids := make([]string, b.N)
	b.ResetTimer()
	start := time.Now()
	parallel(64, b.N, func(i int) {
		token := e.fan(fmt.Sprintf("bench%d", i))
		id, status, co := e.holdAndCheckout(token, []string{e.seat(i/20, 1+i%20)}, e.pay.card())
		if status != http.StatusOK {
			b.Errorf("checkout: %d %v", status, co)
			return
		}
		ids[i] = id
	})
	// Completed means notified: the saga's last step.
	for e.count(`SELECT count(*) FROM reservations r WHERE r.event_id = $1 AND (EXISTS (SELECT 1 FROM mail_queue m WHERE m.key = r.id::text || '-confirmation')
		OR EXISTS (SELECT 1 FROM notification_log n WHERE n.reservation_id = r.id AND NOT n.resend))`, e.eventID) < b.N {
		if time.Since(start) > 5*time.Minute {
			b.Fatal("bookings did not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	// Workflow tasks per booking, from one booking's history.
	tasks, _ := e.workflowTasks(ids[0])
	b.ReportMetric(rate, "bookings/s")
	b.ReportMetric(ceiling, "trivial_wf/s")
	b.ReportMetric(rate/ceiling, "fraction_of_ceiling")
	b.ReportMetric(float64(tasks), "wf_tasks/booking")
}
