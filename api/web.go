package api

import (
	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/webapp"
)

// fanApp serves the embedded fan web app at / and /app/*.
func fanApp() gin.HandlerFunc {
	h := webapp.New()
	return func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) }
}
