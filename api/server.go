// Package api is Encore's HTTP edge: every route of the fan API in one table
// (routes.go), one problem writer and one mapping from domain errors to RFC
// 9457 problems (problems.go), one client address and one caller identity
// (identity.go). Handlers decode and validate, call a use case, and encode;
// the rules live in the use cases below the edge, which never import it.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/waitingroom"
)

// Check is one readiness dependency.
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Browse is the browse plane behind the edge: search, seat-map snapshots and
// the live invalidation stream. It needs no login and never touches the buy
// plane's pool.
type Browse struct {
	Catalog *catalog.Service
	Cache   *seatmap.Cache
	Hub     *seatmap.Hub
	Live    seatmap.LiveOptions
}

// Server holds the use cases the edge serves. A nil plane serves no routes:
// tests and single-plane processes build only what they need.
type Server struct {
	Holds    *holds.Service
	Bookings *booking.Service
	Room     *waitingroom.Room
	Browse   *Browse
	Tickets  *tickets.Wallet
	Sessions *session.Issuer
	Checks   []Check
	Gatherer prometheus.Gatherer
	Log      *slog.Logger
	// TrustedProxies are the load balancers whose X-Forwarded-For is
	// believed (ClientAddress); empty: only the TCP peer counts.
	TrustedProxies []netip.Prefix
}

func init() { gin.SetMode(gin.ReleaseMode) }

// Handler builds the router from the route table.
func (s *Server) Handler() http.Handler {
	r := gin.New()
	// Nothing may read gin's own ClientIP: the client address is clientIP's.
	_ = r.SetTrustedProxies(nil)
	r.HandleMethodNotAllowed = true
	r.Use(s.recoverer, s.resolveClient)
	r.NoRoute(func(c *gin.Context) { writeProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such path")) })
	r.NoMethod(func(c *gin.Context) {
		writeProblem(c, NewProblem(http.StatusMethodNotAllowed, ProbMethodNotAllowed, c.Request.Method+" is not allowed here"))
	})
	for _, rt := range s.routes() {
		if !rt.enabled {
			continue
		}
		chain := append([]gin.HandlerFunc{}, rt.before...)
		switch rt.access {
		case fan:
			chain = append(chain, s.authenticate)
		case fanSocket:
			chain = append(chain, tokenFromQuery, s.authenticate)
		}
		chain = append(chain, rt.after...)
		r.Handle(rt.method, rt.path, append(chain, rt.handler)...)
	}
	return r
}

func (s *Server) recoverer(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			s.Log.Error("panic in handler", "path", c.FullPath(), "panic", v)
			writeProblem(c, NewProblem(http.StatusInternalServerError, ProbInternal, "unexpected error"))
		}
	}()
	c.Next()
}
