package api

import (
	"net/http"

	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/session"
)

// access says who may call a route.
type access int

const (
	public    access = iota // anyone
	fan                     // a bearer token of the OpenID Connect issuer (or the demo login's)
	fanSocket               // the same, or ?access_token= (browsers cannot set headers on a WebSocket)
)

// route is one row of the table.
type route struct {
	method, path string
	access       access
	// roles, when set, are the roles of which the caller must hold one
	// (403 forbidden otherwise); they imply a bearer token.
	roles []session.Role
	// before runs ahead of authentication (limits that must hold for
	// anonymous floods too); after runs behind it.
	before, after []gin.HandlerFunc
	handler       gin.HandlerFunc
	// deadline bounds the request (0: the server's RequestTimeout;
	// noDeadline: none, for WebSockets).
	deadline time.Duration
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
	// Sockets: no deadline, and the shared socket cap before anything else.
	socket := []gin.HandlerFunc{s.capSocket}
	staff := []session.Role{session.Support, session.Admin}
	app := fanApp(s.signInOrigins()...)
	cors := []gin.HandlerFunc{anyOrigin}
	return append([]route{
		// The fan web app and the organiser app, embedded (package webapp);
		// me.go: the fan's own lists.
		{method: http.MethodGet, path: "/", handler: app, enabled: true},
		{method: http.MethodHead, path: "/", handler: app, enabled: true},
		{method: http.MethodGet, path: "/app/*file", handler: app, enabled: true},
		{method: http.MethodHead, path: "/app/*file", handler: app, enabled: true},
		{method: http.MethodGet, path: "/organiser/*file", handler: app, enabled: true},
		{method: http.MethodHead, path: "/organiser/*file", handler: app, enabled: true},
		{method: http.MethodGet, path: "/v1/me/bookings", access: fan, handler: s.myBookings, enabled: bookings},
		{method: http.MethodGet, path: "/v1/me/tickets", access: fan, handler: s.myTickets, enabled: s.Tickets != nil},

		// Operations.
		{method: http.MethodGet, path: "/healthz", handler: healthz, enabled: true},
		{method: http.MethodGet, path: "/readyz", handler: s.ready, enabled: true},

		// Identity. The demo login and its development issuer exist only
		// while ENCORE_DEMO_LOGIN is on.
		{method: http.MethodPost, path: "/v1/sessions", handler: s.createSession, enabled: s.Sessions != nil},
		{method: http.MethodGet, path: session.DevIssuerPath + "/.well-known/openid-configuration", before: cors, handler: s.devDiscovery, enabled: s.Sessions != nil},
		{method: http.MethodGet, path: session.DevIssuerPath + "/jwks.json", before: cors, handler: s.devJWKS, enabled: s.Sessions != nil},
		// Its authorization code flow with PKCE and how the web app signs in (signin.go).
		{method: http.MethodGet, path: session.DevIssuerPath + "/authorize", handler: s.devAuthorizePage, enabled: s.Sessions != nil},
		{method: http.MethodPost, path: session.DevIssuerPath + "/authorize", handler: s.devAuthorize, enabled: s.Sessions != nil},
		{method: http.MethodPost, path: session.DevIssuerPath + "/token", before: cors, handler: s.devToken, enabled: s.Sessions != nil},
		{method: http.MethodGet, path: "/v1/auth/config", handler: s.authConfig, enabled: true},
		{method: http.MethodGet, path: "/v1/me", access: fan, handler: me, enabled: true},

		// Browse plane.
		{method: http.MethodGet, path: "/v1/events", handler: s.search, enabled: browse},
		{method: http.MethodGet, path: "/v1/events/suggest", handler: s.suggest, enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id", handler: s.event, enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id/sections/:section_id/seats", handler: s.seats(seatmap.FormatJSON), enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id/sections/:section_id/seats.bin", handler: s.seats(seatmap.FormatBitmap), enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id/live", before: socket, deadline: noDeadline, handler: s.live, enabled: browse},
		{method: http.MethodGet, path: "/v1/hotels/search", handler: s.searchHotels, enabled: browse && s.Browse.Hotels != nil},

		// Admit plane.
		{method: http.MethodPost, path: "/v1/events/:event_id/queue", access: fan, handler: s.joinQueue, enabled: room},
		{method: http.MethodGet, path: "/v1/events/:event_id/queue", access: fan, handler: s.pollQueue, enabled: room},
		{method: http.MethodGet, path: "/v1/events/:event_id/queue/ws", access: fanSocket, before: socket, deadline: noDeadline, handler: s.queueSocket, enabled: room},
		// The waitlist of sold-out events (waitlist.go).
		{method: http.MethodPost, path: "/v1/events/:event_id/waitlist", access: fan, handler: s.joinWaitlist, enabled: s.Waitlist != nil},
		{method: http.MethodDelete, path: "/v1/events/:event_id/waitlist", access: fan, handler: s.leaveWaitlist, enabled: s.Waitlist != nil},
		{method: http.MethodGet, path: "/v1/me/waitlist", access: fan, handler: s.myWaitlist, enabled: s.Waitlist != nil},

		// Buy plane.
		{method: http.MethodPost, path: "/v1/holds", access: fan, before: limitHold, handler: s.createHold, enabled: holds},
		{method: http.MethodGet, path: "/v1/holds/:id", access: fan, handler: s.getHold, enabled: holds},
		{method: http.MethodDelete, path: "/v1/holds/:id", access: fan, handler: s.deleteHold, enabled: holds},
		{method: http.MethodPost, path: "/v1/holds/:id/checkout", access: fan, after: limitCheckout, deadline: updateDeadline, handler: s.checkout, enabled: bookings},
		{method: http.MethodGet, path: "/v1/bookings/:id", access: fan, handler: s.getBooking, enabled: bookings},
		{method: http.MethodPost, path: "/v1/bookings/:id/cancel", access: fan, deadline: updateDeadline, handler: s.cancelBooking, enabled: bookings},
		{method: http.MethodGet, path: "/v1/tickets/:ticket_id/qr", access: fan, handler: s.ticketQR, enabled: s.Tickets != nil},

		// Event cancellation and support staff.
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/cancel", roles: []session.Role{session.Organiser, session.Admin}, deadline: staffDeadline, handler: s.cancelEvent, enabled: bookings},
		{method: http.MethodGet, path: "/v1/admin/jobs/:job_id", roles: []session.Role{session.Organiser, session.Support, session.Admin}, handler: s.getJob, enabled: bookings},
		{method: http.MethodGet, path: "/v1/admin/bookings", roles: staff, handler: s.searchBookings, enabled: bookings},
		{method: http.MethodGet, path: "/v1/admin/bookings/:booking_id", roles: staff, handler: s.supportBooking, enabled: bookings},
		{method: http.MethodPost, path: "/v1/admin/bookings/:booking_id/refund", roles: staff, deadline: staffDeadline, handler: s.supportRefund, enabled: bookings},
		{method: http.MethodPost, path: "/v1/admin/bookings/:booking_id/resend", roles: staff, deadline: staffDeadline, handler: s.supportResend, enabled: bookings},

		// The payment provider.
		{method: http.MethodPost, path: "/v1/webhooks/stripe", handler: s.stripeWebhook, enabled: bookings},
		{method: http.MethodGet, path: "/v1/payments/return", handler: paymentReturn, enabled: bookings},
		{method: http.MethodPost, path: "/v1/payments/return", handler: paymentReturn, enabled: bookings},
	}, append(s.adminRoutes(), // Organisers and admins (admin.go).
		s.operatorRoutes()...)...) // Operators (operator.go).
}

// staffDeadline bounds a staff action that waits on the worker (a refund,
// a walk, an event's cancellation), inside the API's 90-second write
// timeout; the work itself goes on in its workflow past a deadline.
const staffDeadline = 80 * time.Second

// importDeadline bounds a layout import and an event drafted from one (up
// to 100,000 seats, one transaction): tens of seconds on a busy machine,
// inside the API's 90-second write timeout.
const importDeadline = 80 * time.Second

func healthz(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) }
