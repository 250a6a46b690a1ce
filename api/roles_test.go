package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/session"
)

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
