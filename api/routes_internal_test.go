package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/session"
)

// A dependency that answers only when its caller's context ends (as pgx,
// go-redis and the Temporal client do) ends with the request's deadline: the
// fan gets 503 unavailable, not a hang.
func TestARequestPastItsDeadlineAnswersUnavailable(t *testing.T) {
	s := &Server{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RequestTimeout: 100 * time.Millisecond}
	r := s.Handler().(*gin.Engine)
	slowDependency := func(c *gin.Context) {
		<-c.Request.Context().Done()
		s.fail(c, c.Request.Context().Err())
	}
	r.GET("/test/slow", s.deadline(0), slowDependency)
	ts := httptest.NewServer(r)
	defer ts.Close()

	start := time.Now()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(ts.URL + "/test/slow")
	require.NoError(t, err, "answered, not hung")
	defer resp.Body.Close()
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	var p Problem
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	require.Equal(t, "/problems/"+ProbUnavailable, p.Type)
}

func TestWebSocketRoutesHaveNoDeadlineAndEveryOtherRouteHasOne(t *testing.T) {
	s := &Server{RequestTimeout: time.Second}
	for _, rt := range s.routes() {
		socket := len(rt.path) > 3 && (rt.path[len(rt.path)-3:] == "/ws" || rt.path[len(rt.path)-5:] == "/live")
		if socket {
			require.Nil(t, s.deadline(rt.deadline), rt.path)
		} else {
			require.NotNil(t, s.deadline(rt.deadline), rt.path)
		}
	}
}

// A 100,000-seat layout is one transaction of tens of seconds on a busy
// machine: its import, and an event drafted from it, run under the longer
// import deadline, never the default one a fan's request gets.
func TestLayoutImportsAndEventDraftsRunUnderTheImportDeadline(t *testing.T) {
	s := &Server{RequestTimeout: 10 * time.Second, Admin: &Admin{}}
	want := map[string]bool{"/v1/admin/venues": true, "/v1/admin/events": true}
	for _, rt := range s.routes() {
		if rt.method == http.MethodPost && want[rt.path] {
			require.Equal(t, importDeadline, rt.deadline, rt.path)
			delete(want, rt.path)
		}
	}
	require.Empty(t, want, "both routes are served")
	require.Less(t, importDeadline, 90*time.Second, "inside the API's write timeout")
}

// A staff action waits on the worker: its routes have the staff deadline,
// itself inside the API's 90-second write timeout (past it the connection
// would be cut before the answer).
func TestStaffActionsRunUnderTheStaffDeadline(t *testing.T) {
	s := &Server{RequestTimeout: 10 * time.Second, Admin: &Admin{}}
	staff := map[string]bool{"/v1/admin/properties/:property_id/walks": true, "/v1/admin/events/:event_id/cancel": true,
		"/v1/admin/bookings/:booking_id/refund": true, "/v1/admin/bookings/:booking_id/resend": true}
	for _, rt := range s.routes() {
		if staff[rt.path] {
			require.Equal(t, staffDeadline, rt.deadline, rt.path)
			delete(staff, rt.path)
		}
	}
	require.Empty(t, staff, "every staff route is in the table")
	require.Less(t, staffDeadline, 90*time.Second)
}

func TestARoleGatedRouteAnswersForbiddenToACallerWithoutTheRole(t *testing.T) {
	t.Parallel()
	dev := session.NewIssuer("roles-secret")
	s := &Server{Sessions: dev}
	gated := route{method: http.MethodGet, path: "/v1/admin/probe", roles: []session.Role{session.Admin, session.Operator},
		handler: func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"user_id": identity(c).UserID}) }, enabled: true}
	h := s.handler(append(s.routes(), gated))
	mint := func(roles ...session.Role) string {
		tok, err := dev.Mint(session.Identity{UserID: "u", DeviceID: "d", Roles: roles}, time.Now())
		require.NoError(t, err)
		return tok
	}
	cases := map[string]struct {
		token   string
		status  int
		problem string
	}{
		"no token":                    {"", http.StatusUnauthorized, "/problems/unauthorized"},
		"a fan":                       {mint(), http.StatusForbidden, "/problems/forbidden"},
		"an organiser":                {mint(session.Organiser), http.StatusForbidden, "/problems/forbidden"},
		"support":                     {mint(session.Support, session.Fan), http.StatusForbidden, "/problems/forbidden"},
		"an admin":                    {mint(session.Admin), http.StatusOK, ""},
		"an operator (either role)":   {mint(session.Fan, session.Operator), http.StatusOK, ""},
		"an admin's token, re-signed": {session.NewIssuer("forger").Issue("u", "d", time.Now()), http.StatusUnauthorized, "/problems/unauthorized"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/v1/admin/probe", nil)
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, c.status, rec.Code, rec.Body.String())
			if c.problem != "" {
				require.Contains(t, rec.Body.String(), `"type":"`+c.problem+`"`)
			}
		})
	}
}
