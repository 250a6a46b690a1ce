package api

import (
	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/webapp"
)

// fanApp serves the embedded fan web app at / and /app/*; payments are the
// payment script's origins, connect further origins it may fetch from
// (webapp.New).
func fanApp(payments webapp.Sources, connect ...string) gin.HandlerFunc {
	h := webapp.New(connect...).Allow(payments)
	return func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) }
}
