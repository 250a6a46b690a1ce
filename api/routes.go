package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/encore-tickets/encore/seatmap"
)

// access says who may call a route.
type access int

const (
	public    access = iota // anyone
	fan                     // a bearer token from POST /v1/sessions
	fanSocket               // the same, or ?access_token= (browsers cannot set headers on a WebSocket)
)

// route is one row of the table.
type route struct {
	method, path string
	access       access
	// before runs ahead of authentication (limits that must hold for
	// anonymous floods too); after runs behind it.
	before, after []gin.HandlerFunc
	handler       gin.HandlerFunc
	// enabled is false when the plane the route needs is not wired.
	enabled bool
}

// routes is every route the edge serves, in one table.
func (s *Server) routes() []route {
	holds, bookings, room, browse := s.Holds != nil, s.Bookings != nil, s.Room != nil, s.Browse != nil
	var limitHold, limitCheckout []gin.HandlerFunc
	if room {
		limitHold, limitCheckout = []gin.HandlerFunc{s.limitHold}, []gin.HandlerFunc{s.limitCheckout}
	}
	return []route{
		// Operations.
		{method: http.MethodGet, path: "/healthz", handler: healthz, enabled: true},
		{method: http.MethodGet, path: "/readyz", handler: s.ready, enabled: true},
		{method: http.MethodGet, path: "/metrics", handler: s.metrics(), enabled: s.Gatherer != nil},

		// Identity.
		{method: http.MethodPost, path: "/v1/sessions", handler: s.createSession, enabled: s.Sessions != nil},

		// Browse plane.
		{method: http.MethodGet, path: "/v1/events", handler: s.search, enabled: browse},
		{method: http.MethodGet, path: "/v1/events/suggest", handler: s.suggest, enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id", handler: s.event, enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id/sections/:section_id/seats", handler: s.seats(seatmap.FormatJSON), enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id/sections/:section_id/seats.bin", handler: s.seats(seatmap.FormatBitmap), enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id/live", handler: s.live, enabled: browse},

		// Admit plane.
		{method: http.MethodPost, path: "/v1/events/:event_id/queue", access: fan, handler: s.joinQueue, enabled: room},
		{method: http.MethodGet, path: "/v1/events/:event_id/queue", access: fan, handler: s.pollQueue, enabled: room},
		{method: http.MethodGet, path: "/v1/events/:event_id/queue/ws", access: fanSocket, handler: s.queueSocket, enabled: room},

		// Buy plane.
		{method: http.MethodPost, path: "/v1/holds", access: fan, before: limitHold, handler: s.createHold, enabled: holds},
		{method: http.MethodGet, path: "/v1/holds/:id", access: fan, handler: s.getHold, enabled: holds},
		{method: http.MethodDelete, path: "/v1/holds/:id", access: fan, handler: s.deleteHold, enabled: holds},
		{method: http.MethodPost, path: "/v1/holds/:id/checkout", access: fan, after: limitCheckout, handler: s.checkout, enabled: bookings},
		{method: http.MethodGet, path: "/v1/bookings/:id", access: fan, handler: s.getBooking, enabled: bookings},
		{method: http.MethodPost, path: "/v1/bookings/:id/cancel", access: fan, handler: s.cancelBooking, enabled: bookings},
		{method: http.MethodGet, path: "/v1/tickets/:ticket_id/qr", access: fan, handler: s.ticketQR, enabled: s.Tickets != nil},

		// The payment provider.
		{method: http.MethodPost, path: "/v1/webhooks/stripe", handler: s.stripeWebhook, enabled: bookings},
		{method: http.MethodGet, path: "/v1/payments/return", handler: paymentReturn, enabled: bookings},
		{method: http.MethodPost, path: "/v1/payments/return", handler: paymentReturn, enabled: bookings},
	}
}

func healthz(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) }

// metrics serves the registry; the handler is built once, not per scrape.
func (s *Server) metrics() gin.HandlerFunc {
	if s.Gatherer == nil {
		return nil
	}
	return gin.WrapH(promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{}))
}
