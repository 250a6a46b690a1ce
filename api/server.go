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
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/controls"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/invoices"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/waitingroom"
	"github.com/encore-tickets/encore/waitlist"
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
	// Hotels is hotel search; nil serves no hotel routes.
	Hotels *hotels.Search
	// Dials are the operator's dials (live_push); nil: always pushed.
	Dials *controls.Watcher
}

// Server holds the use cases the edge serves. A nil plane serves no routes:
// tests and single-plane processes build only what they need. Handler
// builds the handler groups from these fields (routes.go), each holding
// only the use cases its routes call; the server itself keeps what every
// route shares: authentication, the client address, deadlines, the socket
// cap, panics and readiness.
type Server struct {
	Holds    *holds.Service
	Bookings *booking.Service
	Room     *waitingroom.Room
	Browse   *Browse
	Tickets  *tickets.Wallet
	// Transfers hands tickets from fan to fan; nil serves no transfer route.
	Transfers *tickets.Transfers
	// Resale lists fans' tickets for resale; nil serves no listing route.
	Resale *tickets.Resale
	// Invoices renders bookings' invoices; nil serves no invoice route.
	Invoices *invoices.Service
	// Admin is the organiser and admin API; nil serves none of it.
	Admin *Admin
	// Metrics count and time every request by route (nil: none).
	Metrics *EdgeMetrics
	// Waitlist serves the waitlist routes; nil serves none.
	Waitlist *waitlist.Offers
	// Operator serves the operator's routes (dials, revocations); nil
	// serves none.
	Operator *Operator
	// Tokens verifies fans' bearer tokens (the OpenID Connect issuer's);
	// nil: Sessions' tokens are verified instead.
	Tokens *session.Verifier
	// Sessions is the development issuer behind the demo login: non-nil
	// mounts POST /v1/sessions and /dev/oidc. Nil in production.
	Sessions *session.Issuer
	// ClientID is the web app's public client ID at the issuer
	// (ENCORE_OIDC_CLIENT_ID): set, the app signs fans in by the OpenID
	// Connect redirect (signin.go); empty, by the demo form.
	ClientID string
	// Payments tells the web app which payment script to load with which
	// key (GET /v1/payments/config) and opens the app's policy to it; the
	// zero value serves an empty configuration and opens nothing.
	Payments PaymentPage
	// ReturnURLs is where a checkout's return_url may point (the zero
	// value: loopback only).
	ReturnURLs ReturnURLs
	Checks     []Check
	Log        *slog.Logger
	// Sockets caps the open queue and live seat-map sockets (nil: no cap).
	Sockets *SocketCap
	// Reads limits the browse routes per client address (nil: no limit).
	Reads *ReadLimits
	// RequestTimeout is every ordinary request's deadline (0: none); see
	// deadline.go for the routes that differ.
	RequestTimeout time.Duration
	// TrustedProxies are the load balancers whose X-Forwarded-For is
	// believed (ClientAddress); empty: only the TCP peer counts.
	TrustedProxies []netip.Prefix
}

func init() { gin.SetMode(gin.ReleaseMode) }

// Handler builds the router from the route table.
func (s *Server) Handler() http.Handler { return s.handler(s.routes()) }

func (s *Server) handler(table []route) http.Handler {
	r := gin.New()
	// Nothing may read gin's own ClientIP: the client address is clientIP's.
	_ = r.SetTrustedProxies(nil)
	r.HandleMethodNotAllowed = true
	if s.Metrics != nil {
		r.Use(s.Metrics.observe)
	}
	r.Use(s.recoverer, s.resolveClient)
	r.NoRoute(func(c *gin.Context) { writeProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such path")) })
	r.NoMethod(func(c *gin.Context) {
		writeProblem(c, NewProblem(http.StatusMethodNotAllowed, ProbMethodNotAllowed, c.Request.Method+" is not allowed here"))
	})
	for _, rt := range table {
		if !rt.enabled {
			continue
		}
		var chain []gin.HandlerFunc
		if d := s.deadline(rt.deadline); d != nil {
			chain = append(chain, d)
		}
		chain = append(chain, rt.before...)
		switch {
		case rt.access == fanSocket:
			chain = append(chain, tokenFromQuery, s.authenticate)
		case rt.access == fan || len(rt.roles) > 0:
			chain = append(chain, s.authenticate)
		}
		if len(rt.roles) > 0 {
			chain = append(chain, requireRole(rt.roles))
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
