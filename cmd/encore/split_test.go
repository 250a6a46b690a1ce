package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/dev/testenv/temporaltest"
	"github.com/encore-tickets/encore/dev/topology"
	"github.com/encore-tickets/encore/rehearsal"
	"github.com/encore-tickets/encore/temporalclient"
	"github.com/encore-tickets/encore/workflows"
)

// lockedBuffer is a bytes.Buffer safe to write from the command and read
// from the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDevSplitRunsEachPartAsItsOwnProcessSurvivesARehearsalThatBreaksEachAndCtrlCStopsThemAll:
// encore dev --split brings up Temporal, the sandbox, two workers and two
// APIs behind the balancer on ENCORE_HTTP_ADDR, with a replica for the
// browse plane and the demo seeded; the list names every part with its pid
// and log; the fans' address answers. Then, on that same stack (one start
// for both: a split topology's start is the costliest thing in the
// package), what encore rehearse --chaos worker,api,temporal,postgres,redis,psp
// does: a short metered sale of 200 fans (seats, a standing area, hotel
// packages, transfers and resales in the mix) while each part is broken
// once: a worker, an API and Temporal SIGKILLed and restarted,
// PostgreSQL's primary crashed and restarted, Redis's master killed and
// failed over, the provider's faults thrown and its sandbox killed. After
// the drain the books hold: no double sale, no unmatched capture, no audit
// violation, every paid booking exactly its tickets, no stuck saga, no
// lost webhook. Last, cancelling (Ctrl-C) ends every process, the
// restarted ones included.
func TestDevSplitRunsEachPartAsItsOwnProcessSurvivesARehearsalThatBreaksEachAndCtrlCStopsThemAll(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the whole split topology and plays a sale")
	}
	bin := os.Getenv(testenv.EnvBinary)
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "encore")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		require.NoError(t, topology.Build(ctx, "../..", bin))
		cancel()
	}
	ports, err := topology.FreePorts(1)
	require.NoError(t, err)
	cfg := config.Default()
	cfg.DataDir = testenv.ServerTempDir(t)
	cfg.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	cfg.SMTPURL = "smtp://127.0.0.1:1" // no Mailpit in the test: its emails are not read here

	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	var out lockedBuffer
	var c *topology.Cluster
	done := make(chan error, 1)
	// However the test ends (a failed check ends it at once), the topology
	// is stopped before it does: otherwise a failing run left its Redis,
	// sentinel and PostgreSQL replica running after the test binary exited.
	var stopped chan struct{}
	t.Cleanup(func() {
		cancel()
		if stopped == nil {
			return
		}
		select {
		case <-stopped:
		case <-time.After(time.Minute):
			t.Logf("the split topology did not stop within a minute:\n%s", out.String())
		}
	})
	for attempt := 1; c == nil; attempt++ {
		up := make(chan *topology.Cluster, 1)
		stopped = make(chan struct{})
		go func(stopped chan struct{}) {
			err := runSplit(ctx, cfg, bin, &out, func(c *topology.Cluster) { up <- c })
			close(stopped)
			done <- err
		}(stopped)
		select {
		case c = <-up:
		case err := <-done:
			if portClash(err) && attempt < 3 {
				continue // another test took a port the topology had picked
			}
			t.Fatalf("split ended before it was up: %v\n%s", err, out.String())
		case <-time.After(5 * time.Minute):
			t.Fatalf("split not up in time:\n%s", out.String())
		}
	}
	listing := out.String()
	for _, part := range []string{"temporal", "psp", "worker1", "worker2", "api1", "api2", "gate", "replica (browse plane)",
		"redis (sentinel)", "redis+sentinel://", "Web UI"} {
		require.Contains(t, listing, part)
	}
	require.NotContains(t, listing, cfg.SMTPURL.Reveal(), "no secret is printed")

	for _, url := range []string{"http://" + cfg.HTTPAddr + "/readyz", "http://" + cfg.HTTPAddr + "/v1/events/evt_demo_night",
		c.GateURL + "/healthz"} {
		resp, err := http.Get(url)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, body)
	}

	rehearseWithEveryBreak(ctx, t, cfg, c)

	var pids []int
	for _, p := range c.All() {
		require.Positive(t, p.Pid(), p.Name)
		pids = append(pids, p.Pid())
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("split did not stop")
	}
	for _, pid := range pids {
		require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 30*time.Second, 100*time.Millisecond,
			"process %d is gone", pid)
	}
}

// rehearseWithEveryBreak plays the CI rehearsal on the started split
// topology c, as encore rehearse --chaos worker,api,temporal,postgres,redis,psp
// does, and requires every break played and the books balanced.
func rehearseWithEveryBreak(ctx context.Context, t *testing.T, cfg config.Config, c *topology.Cluster) {
	t.Helper()
	parts, err := parseChaos("worker,api,temporal,postgres,redis,psp")
	require.NoError(t, err)
	every, err := parseChaosGap("1s-2s")
	require.NoError(t, err)
	rc := rehearsal.Defaults()
	rc.CreateSeats, rc.CreateStanding, rc.PackageRooms, rc.OpensIn, rc.Fans, rc.ArrivalRate = 300, 60, 10, 3*time.Second, 200, 8
	rc.Duration, rc.Drain, rc.Out = 50*time.Second, 60*time.Second, t.TempDir()
	rctx, cancel := context.WithTimeout(ctx, 9*time.Minute)
	defer cancel()
	cmd := &cobra.Command{}
	var out, errs lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&errs)
	err = rehearseOn(rctx, cfg, c, rc, parts, every, cmd)
	raw, rerr := os.ReadFile(filepath.Join(rc.Out, "summary.json"))
	// The whole summary on a failure: the books' counts, errors and rereads
	// name what did not balance (the temporary directory is gone after),
	// and, read now while the stack still runs, what every process logged
	// of a booking left unsettled and where its workflow stands. A broken
	// rule already fails the command (exit 1), so this comes first.
	var s rehearsal.Summary
	books := string(raw)
	if json.Unmarshal(raw, &s) == nil && len(s.UnsettledBookings) > 0 {
		books += "\n" + logLinesOf(c, s.UnsettledBookings) + "\n" + workflowsOf(ctx, cfg, c.TemporalAddr, c.TemporalAPIKey(), s.UnsettledBookings)
	}
	require.NoError(t, err, "%s\n%s\nsummary: %s", out.String(), errs.String(), books)
	require.NoError(t, rerr)
	require.NoError(t, json.Unmarshal(raw, &s))
	var marks []string
	for _, e := range s.Chaos {
		marks = append(marks, e.What)
	}
	for _, broken := range []string{"kill worker", "kill api", "kill temporal", "kill postgres", "kill redis", "fault psp", "kill psp"} {
		require.True(t, slices.ContainsFunc(marks, func(m string) bool { return strings.HasPrefix(m, broken) }),
			"%q among the breaks: %v\n%s", broken, marks, errs.String())
	}
	require.True(t, s.BooksChecked, books)
	require.True(t, s.TicketsPerBookingExact, books)
	require.Zero(t, s.DoubleSales, books)
	require.Zero(t, s.UnmatchedCaptures, books)
	require.Zero(t, s.AuditViolations, books)
	require.Zero(t, s.StuckWorkflows, books)
	require.Zero(t, s.LostWebhooks, books)
	require.Positive(t, s.BookingsPaid, "the sale sold through the breaks")
	require.Positive(t, s.PackagesPaid, "seats with a hotel room were sold through the breaks")
}

func TestTheChaosFlagsNameKnownPartsAndSaneGaps(t *testing.T) {
	t.Parallel()
	parts, err := parseChaos("psp, worker,psp,,redis")
	require.NoError(t, err)
	require.Equal(t, []string{"psp", "worker", "redis"}, parts, "each part once, in the order named")
	_, err = parseChaos("worker,mysql")
	require.ErrorContains(t, err, `unknown part "mysql"`)
	for _, tc := range []struct {
		in     string
		lo, hi time.Duration
		bad    bool
	}{
		{in: "3s-8s", lo: 3 * time.Second, hi: 8 * time.Second},
		{in: "2s", lo: 2 * time.Second, hi: 2 * time.Second},
		{in: "8s-3s", bad: true},
		{in: "100ms", bad: true},
		{in: "soon", bad: true},
	} {
		g, err := parseChaosGap(tc.in)
		if tc.bad {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, chaosGap{tc.lo, tc.hi}, g, tc.in)
	}
}

// logLinesOf is every line of c's processes' logs that names one of the
// bookings (the first word of each of unsettled), 40 at most per process.
func logLinesOf(c *topology.Cluster, unsettled []string) string {
	ids := bookingsOf(unsettled)
	var b strings.Builder
	for _, p := range c.All() {
		if p == nil {
			continue
		}
		raw, err := os.ReadFile(p.LogPath)
		if err != nil {
			continue
		}
		n := 0
		for _, line := range strings.Split(string(raw), "\n") {
			if n < 40 && slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(line, id) }) {
				fmt.Fprintf(&b, "%s: %s\n", p.Name, line)
				n++
			}
		}
	}
	return b.String()
}

// bookingsOf is the booking of each of the books' unsettled lines (their
// first word, store.Settled.UnsettledBookings).
func bookingsOf(unsettled []string) []string {
	var ids []string
	for _, u := range unsettled {
		if f := strings.Fields(u); len(f) > 0 {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// workflowsOf describes the booking workflow of each of unsettled (first
// word: the booking) on the Temporal server at addr (cfg's namespace) while
// it runs: status, pending activities with their attempts and last failure,
// and the last events of its history, for whoever reads why the booking
// never settled.
func workflowsOf(ctx context.Context, cfg config.Config, addr, apiKey string, unsettled []string) string {
	cfg.TemporalAPIKey = config.Secret(apiKey)
	opts, err := temporalclient.Options(cfg, addr, nil)
	if err != nil {
		return "temporal client: " + err.Error()
	}
	tc, err := client.Dial(opts)
	if err != nil {
		return "temporal client: " + err.Error()
	}
	defer tc.Close()
	var b strings.Builder
	for _, booking := range bookingsOf(unsettled) {
		b.WriteString(temporaltest.Describe(ctx, tc, opts, workflows.BookingWorkflowID(booking), 25))
	}
	return b.String()
}

// encoreClient dials a namespace of the test's own on the package's
// Temporal server as Encore's processes do (payloads and failures
// encrypted), closed when the test ends.
func encoreClient(t *testing.T) (*temporaltest.Server, config.Config, client.Options, client.Client) {
	t.Helper()
	srv := temporaltest.Temporal(t)
	cfg := config.Default()
	cfg.TemporalNamespace = temporaltest.Namespace(t)
	cfg.TemporalAPIKey = config.Secret(srv.APIKey())
	opts, err := temporalclient.Options(cfg, srv.FrontendAddress(), nil)
	require.NoError(t, err)
	tc, err := client.DialContext(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	return srv, cfg, opts, tc
}

func TestAnUnsettledBookingsWorkflowIsDescribedWithItsHistoryAndAMissingOneSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, cfg, _, tc := encoreClient(t)
	id := uuid.NewString()
	// No worker serves its queue: the workflow stays where a stuck saga
	// would, running with a workflow task scheduled.
	_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.BookingWorkflowID(id), TaskQueue: "nobody-" + id}, "Booking")
	require.NoError(t, err)

	out := workflowsOf(ctx, cfg, srv.FrontendAddress(), srv.APIKey(), []string{id + " PAID payment CAPTURED places 2 tickets 0", "absent PAID"})
	require.Contains(t, out, workflows.BookingWorkflowID(id)+": Running")
	require.Contains(t, out, "1 WorkflowExecutionStarted")
	require.Contains(t, out, "2 WorkflowTaskScheduled")
	require.Contains(t, out, workflows.BookingWorkflowID("absent")+": describe:")
}

func TestADescribedWorkflowNamesEachLocalActivityAndDecodesTheFailureHistoryKeepsEncrypted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, opts, tc := encoreClient(t)

	// A saga-like step: a local activity refused for good, then the
	// workflow ends as a compensated booking would.
	queue := "describe-" + uuid.NewString()
	w := worker.New(tc, queue, worker.Options{})
	capture := func(context.Context) error {
		return temporal.NewNonRetryableApplicationError("the card issuer refused the capture", "rejected", nil)
	}
	w.RegisterActivityWithOptions(capture, activity.RegisterOptions{Name: "Capture"})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 5 * time.Second})
		_ = workflow.ExecuteLocalActivity(lctx, "Capture").Get(ctx, nil)
		return nil
	}, workflow.RegisterOptions{Name: "DescribeProbe"})
	require.NoError(t, w.Start())
	defer w.Stop()
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, "DescribeProbe")
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))

	out := temporaltest.Describe(ctx, tc, opts, run.GetID(), 25)
	require.Contains(t, out, run.GetID()+": Completed")
	require.Regexp(t, `MarkerRecorded Capture attempt 1 at [0-9:.]+: the card issuer refused the capture`, out)
	// Without the converters the marker says neither: its data and its
	// message are encrypted.
	raw := temporaltest.Describe(ctx, tc, client.Options{}, run.GetID(), 25)
	require.NotContains(t, raw, "the card issuer refused")
	require.NotContains(t, raw, "MarkerRecorded Capture")
}
