package temporalserver

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/encore-tickets/encore/session"
)

// userClient is a client that sends bearer as its credential, as the Web
// UI forwards its signed-in user's access token. Lazy: the SDK's dial-time
// call would be refused for most of them.
func userClient(t *testing.T, s *Server, bearer string) client.Client {
	t.Helper()
	opts := client.Options{HostPort: s.FrontendAddress(), Namespace: s.Namespace(), Logger: quietLogger{}}
	if bearer != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(bearer)
		opts.ConnectionOptions.TLSDisabled = true
	}
	c, err := client.NewLazyClient(opts)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func requireRefused(t *testing.T, err error, what string) {
	t.Helper()
	var denied *serviceerror.PermissionDenied
	require.True(t, errors.As(err, &denied), "%s: want PermissionDenied, got %v", what, err)
}

func TestTheFrontendRefusesEveryCallWithoutTheAPIKeyOrAStaffToken(t *testing.T) {
	t.Parallel()
	s := StartForTest(t, testDatabaseURL(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for name, bearer := range map[string]string{"no credential": "", "a wrong key": "not-the-key",
		"the key's prefix": s.APIKey()[:10]} {
		c := userClient(t, s, bearer)
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.Namespace()})
		requireRefused(t, err, name+": DescribeNamespace")
		_, err = c.WorkflowService().ListNamespaces(ctx, &workflowservice.ListNamespacesRequest{})
		requireRefused(t, err, name+": ListNamespaces")
		_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "tq"}, "greet", "intruder")
		requireRefused(t, err, name+": StartWorkflowExecution")
	}

	// The frontend's HTTP API too.
	resp, err := http.Get("http://" + s.FrontendHTTPAddress() + "/api/v1/namespaces/" + s.Namespace())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "the HTTP API without a credential")

	// The key admits: the server's own client and a client that sends it.
	c := userClient(t, s, s.APIKey())
	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.Namespace()})
	require.NoError(t, err)
}

// A booking's workflow as the Web UI's users reach it: fans and organisers
// can neither read nor steer it; support and admin read it and signal,
// update, cancel and terminate it, but never do a worker's part.
func TestOnlySupportAndAdminTokensMayReadAndSteerWorkflows(t *testing.T) {
	t.Parallel()
	issuer := session.NewIssuer("temporal-ui-test-secret")
	s := StartForTest(t, testDatabaseURL(t), func(c *Config) {
		c.StaffTokens = func() *session.Verifier { return issuer.Verifier() }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	internal := workingClient(ctx, t, s, "bookings")
	start := func(id string) {
		_, err := internal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "bookings"}, "checkout")
		require.NoError(t, err)
	}
	token := func(user string, roles ...session.Role) string {
		tok, err := issuer.Mint(session.Identity{UserID: user, Roles: roles, Org: "org_1"}, time.Now())
		require.NoError(t, err)
		return tok
	}
	start("booking-1")

	for name, tok := range map[string]string{
		"a fan":        token("fan_1"),
		"an organiser": token("org_user", session.Organiser),
		"an operator":  token("ops_1", session.Operator),
		"another issuer's support": func() string {
			tok, _ := session.NewIssuer("other").Mint(session.Identity{UserID: "x", Roles: []session.Role{session.Support}}, time.Now())
			return tok
		}(),
		"an expired support token": func() string {
			tok, _ := issuer.Mint(session.Identity{UserID: "olga", Roles: []session.Role{session.Support}}, time.Now().Add(-48*time.Hour))
			return tok
		}(),
	} {
		c := userClient(t, s, tok)
		_, err := c.DescribeWorkflowExecution(ctx, "booking-1", "")
		requireRefused(t, err, name+": describe")
		requireRefused(t, c.SignalWorkflow(ctx, "booking-1", "", "payment", "forged"), name+": signal")
		_, err = c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "booking-1", UpdateName: "pay",
			Args: []any{"forged"}, WaitForStage: client.WorkflowUpdateStageCompleted})
		requireRefused(t, err, name+": update")
		requireRefused(t, c.CancelWorkflow(ctx, "booking-1", ""), name+": cancel")
		requireRefused(t, c.TerminateWorkflow(ctx, "booking-1", "", "forged"), name+": terminate")
	}

	for _, role := range []session.Role{session.Support, session.Admin} {
		id := "booking-" + string(role)
		start(id)
		c := userClient(t, s, token("staff_"+string(role), role))
		_, err := c.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err, role)
		_, err = c.WorkflowService().ListNamespaces(ctx, &workflowservice.ListNamespacesRequest{})
		require.NoError(t, err, "%s: the UI lists the namespaces", role)
		require.NoError(t, c.SignalWorkflow(ctx, id, "", "note", "from support"), role)
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: "pay",
			Args: []any{"card"}, WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err, role)
		var out string
		require.NoError(t, h.Get(ctx, &out))
		require.Equal(t, "secret_card", out)

		// Never a worker's part, nor the namespace's administration.
		_, err = c.WorkflowService().PollWorkflowTaskQueue(ctx, &workflowservice.PollWorkflowTaskQueueRequest{
			Namespace: s.Namespace(), TaskQueue: &taskqueuepb.TaskQueue{Name: "bookings"}})
		requireRefused(t, err, string(role)+": poll")
		_, err = c.WorkflowService().RespondActivityTaskCompletedById(ctx, &workflowservice.RespondActivityTaskCompletedByIdRequest{
			Namespace: s.Namespace(), WorkflowId: id, ActivityId: "1"})
		requireRefused(t, err, string(role)+": complete an activity")
		_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "bookings"}, "checkout")
		requireRefused(t, err, string(role)+": start")
		_, err = c.WorkflowService().UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{Namespace: s.Namespace()})
		requireRefused(t, err, string(role)+": update the namespace")
		_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "temporal-system"})
		requireRefused(t, err, string(role)+": the server's own namespace")
		_, err = c.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{Namespace: s.Namespace()})
		requireRefused(t, err, string(role)+": delete a history")
	}

	start("booking-3")
	support := userClient(t, s, token("olga", session.Support))
	require.NoError(t, support.CancelWorkflow(ctx, "booking-3", ""))
	start("booking-4")
	require.NoError(t, support.TerminateWorkflow(ctx, "booking-4", "", "support: stuck"))
	d, err := internal.DescribeWorkflowExecution(ctx, "booking-4", "")
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_TERMINATED, d.GetWorkflowExecutionInfo().GetStatus())
}

// The server's own system workers (the scheduler behind Encore's
// schedules) reach it through the internal frontend: a schedule still runs
// its workflow.
func TestSchedulesRunBehindTheAuthorisedFrontend(t *testing.T) {
	t.Parallel()
	s := StartForTest(t, testDatabaseURL(t), func(c *Config) { c.SearchAttributes = testSearchAttributes })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := workingClient(ctx, t, s, "scheduled")
	h, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{ID: "every-second",
		Spec:   client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Second}}},
		Action: &client.ScheduleWorkflowAction{ID: "greet-scheduled", Workflow: "greet", Args: []any{"schedule"}, TaskQueue: "scheduled"}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := h.Describe(ctx)
		return err == nil && len(d.Info.RecentActions) > 0
	}, time.Minute, 200*time.Millisecond, "the schedule started its workflow")
}

// quietLogger drops the SDK's log lines: refusals are what these tests want.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
