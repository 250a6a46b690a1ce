package api

import (
	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/webapp"
)

// fanApp serves the embedded fan web app at / and /app/*; connect are
// further origins it may fetch from (webapp.New).
func fanApp(connect ...string) gin.HandlerFunc {
	h := webapp.New(connect...)
	return func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) }
}
