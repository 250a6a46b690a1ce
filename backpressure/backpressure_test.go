package backpressure_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/backpressure"
	"github.com/encore-tickets/encore/dev/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// clock is the time the monitors of a test read: a test moves it on
// instead of sleeping, so the bounds on time (latency, the probe interval,
// a stopped process's last report) are tested exactly and at once.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// monitors are processes of one deployment sharing their load in the test's
// Redis under a key of their own, reading the time from one clock.
func monitors(t *testing.T, b backpressure.Bounds, n int) ([]*backpressure.Monitor, *clock) {
	t.Helper()
	rdb, prefix := testenv.RedisPrefix(t)
	clk := &clock{t: time.Now()}
	out := make([]*backpressure.Monitor, n)
	for i := range out {
		out[i] = backpressure.New(rdb, prefix, b, slog.Default())
		out[i].SetClock(clk.Now)
	}
	return out, clk
}

// monitor is a single process's monitor.
func monitor(t *testing.T, b backpressure.Bounds) (*backpressure.Monitor, *clock) {
	t.Helper()
	ms, clk := monitors(t, b, 1)
	return ms[0], clk
}

func overloaded(t *testing.T, err error) *backpressure.OverloadedError {
	t.Helper()
	var o *backpressure.OverloadedError
	require.ErrorAs(t, err, &o)
	return o
}

func TestANilMonitorAdmitsEverything(t *testing.T) {
	t.Parallel()
	var m *backpressure.Monitor
	m.Begin()(true)
	require.NoError(t, m.Check())
	require.Zero(t, m.Load())
}

func TestCallsWaitingOnTheSagaPastTheBoundAreRefusedWithRetryAfter(t *testing.T) {
	t.Parallel()
	m, _ := monitor(t, backpressure.Bounds{MaxInFlight: 2, RetryAfter: 7 * time.Second})
	first, second := m.Begin(), m.Begin()
	o := overloaded(t, m.Check())
	require.Equal(t, backpressure.ReasonInFlight, o.Reason)
	require.Equal(t, 7*time.Second, o.RetryAfter)
	require.Contains(t, o.Error(), "2 checkouts in progress")
	first(false)
	require.NoError(t, m.Check(), "one call left in flight is under the bound")
	second(false)
	second(false) // ending twice counts once
	require.EqualValues(t, 0, m.Load().InFlight)
}

func TestFailingAndSlowCallsPastTheBoundsAreRefusedOnceThereAreEnough(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		calls   int
		failed  int
		reason  string
		refused bool
	}{
		{"a few failures are not trusted yet", 4, 4, "", false},
		{"most calls failing is refused", 10, 6, backpressure.ReasonErrors, true},
		{"half failing is at the bound", 10, 5, "", false},
		{"all answered is fine", 20, 0, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, _ := monitor(t, backpressure.Bounds{MinCalls: 10, MaxErrorRate: 0.5})
			for i := range tc.calls {
				m.Begin()(i < tc.failed)
			}
			if !tc.refused {
				require.NoError(t, m.Check())
				return
			}
			require.Equal(t, tc.reason, overloaded(t, m.Check()).Reason)
		})
	}
	t.Run("slow calls are refused", func(t *testing.T) {
		t.Parallel()
		m, clk := monitor(t, backpressure.Bounds{MinCalls: 2, MaxLatency: 20 * time.Millisecond})
		for range 2 {
			end := m.Begin()
			clk.Advance(30 * time.Millisecond) // the saga takes 30ms to answer
			end(false)
		}
		o := overloaded(t, m.Check())
		require.Equal(t, backpressure.ReasonLatency, o.Reason)
		require.GreaterOrEqual(t, o.Load.MeanLatency(), 30*time.Millisecond)
	})
}

func TestOneCallAnIntervalFindsOutThatTheSagaRecovered(t *testing.T) {
	t.Parallel()
	// Time moves only when the test moves it: between two checks none
	// passes, however loaded the machine, so no extra probe gets through.
	const interval, slow = 2 * time.Second, 100 * time.Millisecond
	m, clk := monitor(t, backpressure.Bounds{MinCalls: 10, MaxErrorRate: 0.5, MaxLatency: slow, Interval: interval})
	for range 10 {
		m.Begin()(true) // Temporal is down
	}
	require.Equal(t, backpressure.ReasonErrors, overloaded(t, m.Check()).Reason, "refused at once")

	// A probe that fails changes nothing: the next one waits an Interval.
	clk.Advance(interval)
	require.NoError(t, m.Check(), "one call goes through to probe")
	m.Begin()(true)
	require.Equal(t, backpressure.ReasonErrors, overloaded(t, m.Check()).Reason, "refused until the next probe")

	// A slow answer is no recovery either.
	clk.Advance(interval)
	require.NoError(t, m.Check())
	end := m.Begin()
	clk.Advance(slow + 10*time.Millisecond)
	end(false)
	overloaded(t, m.Check())

	// A quick answer ends the refusals at once, not when the failures
	// leave the window ten seconds later.
	clk.Advance(interval)
	require.NoError(t, m.Check())
	m.Begin()(false)
	for range 5 {
		require.NoError(t, m.Check(), "recovered")
	}
	require.EqualValues(t, 0, m.Load().Failures, "the failures before the recovery are history")
	require.EqualValues(t, 1, m.Load().Calls)

	// Failing again trips the bound again, once there are enough calls.
	for range 9 {
		m.Begin()(true)
	}
	require.Equal(t, backpressure.ReasonErrors, overloaded(t, m.Check()).Reason)
}

func TestEveryProcessSeesTheLoadOfTheWholeDeployment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := monitors(t, backpressure.Bounds{MaxInFlight: 3, MinCalls: 4, MaxErrorRate: 0.5}, 2)
	busy, quiet := ms[0], ms[1]
	for range 4 {
		busy.Begin()(true) // Temporal is not answering this process
	}
	hanging := []func(bool){busy.Begin(), busy.Begin(), busy.Begin()}
	require.NoError(t, quiet.Check(), "nothing shared yet")
	require.NoError(t, busy.Sync(ctx))
	require.NoError(t, quiet.Sync(ctx))
	l := quiet.Load()
	require.Equal(t, 2, l.Processes)
	require.EqualValues(t, 4, l.Calls)
	require.EqualValues(t, 4, l.Failures)
	require.EqualValues(t, 3, l.InFlight)
	require.Equal(t, backpressure.ReasonInFlight, overloaded(t, quiet.Check()).Reason)

	for _, end := range hanging {
		end(false)
	}
	require.NoError(t, busy.Sync(ctx))
	require.NoError(t, quiet.Sync(ctx))
	require.EqualValues(t, 0, quiet.Load().InFlight)
	require.Equal(t, backpressure.ReasonErrors, overloaded(t, quiet.Check()).Reason, "4 of 7 calls failed")
}

func TestAStoppedProcessLoadIsForgotten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, clk := monitors(t, backpressure.Bounds{MaxInFlight: 1, Interval: 50 * time.Millisecond}, 2)
	stopped, alive := ms[0], ms[1]
	stopped.Begin() // never ends: the process died mid-call
	require.NoError(t, stopped.Sync(ctx))
	require.NoError(t, alive.Sync(ctx))
	require.Error(t, alive.Check())
	clk.Advance(200 * time.Millisecond) // past three intervals without a report
	require.NoError(t, alive.Sync(ctx))
	require.NoError(t, alive.Check())
	require.Equal(t, 1, alive.Load().Processes)
}

func TestABacklogPastTheBoundIsRefusedAndAFailedProbeIsNotMistakenForOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, _ := monitor(t, backpressure.Bounds{MaxBacklog: 5 * time.Second})
	backlog, probeErr := 12*time.Second, error(nil)
	m.ProbeBacklog(func(context.Context) (time.Duration, error) { return backlog, probeErr })
	require.NoError(t, m.Sync(ctx))
	o := overloaded(t, m.Check())
	require.Equal(t, backpressure.ReasonBacklog, o.Reason)
	require.Contains(t, o.Error(), "12s")

	backlog, probeErr = 0, errors.New("temporal unreachable")
	require.NoError(t, m.Sync(ctx))
	require.NoError(t, m.Check())
}
