package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
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

// routes is every route the edge serves, in one table. It builds the
// handler groups from the server's fields: each holds only the use cases
// its routes call, and a route whose plane is not wired is not served.
func (s *Server) routes() []route {
	holdsOn, bookings, room, browse := s.Holds != nil, s.Bookings != nil, s.Room != nil, s.Browse != nil
	admin, operator := s.Admin != nil, s.Operator != nil
	p := problems{log: s.Log}
	var (
		auth    = &signIn{tokens: s.Tokens, sessions: s.Sessions, clientID: s.ClientID, log: s.Log, problems: p}
		mine    = &meHandlers{bookings: s.Bookings, tickets: s.Tickets, waitlist: s.Waitlist, problems: p}
		browser = &browseHandlers{browse: s.Browse, problems: p}
		hotel   = newHotelHandlers(s.Browse, s.Admin, p)
		props   = newPropertyHandlers(s.Admin, p)
		queue   = &queueHandlers{room: s.Room, problems: p}
		waiting = &waitlistHandlers{offers: s.Waitlist, problems: p}
		hold    = &holdHandlers{holds: s.Holds, bookings: s.Bookings, returns: s.ReturnURLs, problems: p}
		booked  = &bookingHandlers{bookings: s.Bookings, tickets: s.Tickets, problems: p}
		support = &supportHandlers{bookings: s.Bookings, problems: p}
		emails  = &emailHandlers{store: bookingStore(s.Bookings), problems: p}
		webhook = &webhookHandlers{bookings: s.Bookings, problems: p}
		handing = &transferHandlers{transfers: s.Transfers, problems: p}
		selling = &resaleHandlers{resale: s.Resale, problems: p}
		billing = &invoiceHandlers{invoices: s.Invoices, problems: p}
		org     = newAdminHandlers(s.Admin, p)
		ops     = newOperatorHandlers(s.Operator, s.Room, p)
	)
	var limitHold, limitCheckout []gin.HandlerFunc
	if room {
		limitHold, limitCheckout = []gin.HandlerFunc{queue.limitHold}, []gin.HandlerFunc{queue.limitCheckout}
	}
	// The browse routes need no login: each is limited per client address
	// before it reads anything (reads.go).
	search, suggest := []gin.HandlerFunc{s.limitRead(readSearch)}, []gin.HandlerFunc{s.limitRead(readSuggest)}
	eventPage, seats := []gin.HandlerFunc{s.limitRead(readEvent)}, []gin.HandlerFunc{s.limitRead(readSeats)}
	// Sockets: no deadline, and the shared socket cap before anything else.
	socket := []gin.HandlerFunc{s.capSocket}
	staff := []session.Role{session.Support, session.Admin}
	own := []gin.HandlerFunc{org.ownEvent}
	ownProperty := []gin.HandlerFunc{props.ownProperty}
	properties := admin && props.hotels != nil
	app := fanApp(s.Payments.sources(), auth.signInOrigins()...)
	cors := []gin.HandlerFunc{anyOrigin}
	return []route{
		// The fan web app (its service worker at the root, so it covers "/")
		// and the organiser app, embedded (package webapp);
		// me.go: the fan's own lists.
		{method: http.MethodGet, path: "/", handler: app, enabled: true},
		{method: http.MethodHead, path: "/", handler: app, enabled: true},
		{method: http.MethodGet, path: "/sw.js", handler: app, enabled: true},
		{method: http.MethodGet, path: "/app/*file", handler: app, enabled: true},
		{method: http.MethodHead, path: "/app/*file", handler: app, enabled: true},
		{method: http.MethodGet, path: "/organiser/*file", handler: app, enabled: true},
		{method: http.MethodHead, path: "/organiser/*file", handler: app, enabled: true},
		{method: http.MethodGet, path: "/hotel/*file", handler: app, enabled: true},
		{method: http.MethodHead, path: "/hotel/*file", handler: app, enabled: true},
		{method: http.MethodGet, path: "/v1/me/bookings", access: fan, handler: mine.myBookings, enabled: bookings},
		{method: http.MethodGet, path: "/v1/me/tickets", access: fan, handler: mine.myTickets, enabled: s.Tickets != nil},

		// Operations.
		{method: http.MethodGet, path: "/healthz", handler: healthz, enabled: true},
		{method: http.MethodGet, path: "/readyz", handler: s.ready, enabled: true},

		// Identity. The demo login and its development issuer exist only
		// while ENCORE_DEMO_LOGIN is on.
		{method: http.MethodPost, path: "/v1/sessions", handler: auth.createSession, enabled: s.Sessions != nil},
		{method: http.MethodGet, path: session.DevIssuerPath + "/.well-known/openid-configuration", before: cors, handler: auth.devDiscovery, enabled: s.Sessions != nil},
		{method: http.MethodGet, path: session.DevIssuerPath + "/jwks.json", before: cors, handler: auth.devJWKS, enabled: s.Sessions != nil},
		// Its authorization code flow with PKCE and how the web app signs in (signin.go).
		{method: http.MethodGet, path: session.DevIssuerPath + "/authorize", handler: auth.devAuthorizePage, enabled: s.Sessions != nil},
		{method: http.MethodPost, path: session.DevIssuerPath + "/authorize", handler: auth.devAuthorize, enabled: s.Sessions != nil},
		{method: http.MethodPost, path: session.DevIssuerPath + "/token", before: cors, handler: auth.devToken, enabled: s.Sessions != nil},
		{method: http.MethodGet, path: "/v1/auth/config", handler: auth.authConfig, enabled: true},
		{method: http.MethodGet, path: "/v1/payments/config", handler: paymentsConfig(s.Payments), enabled: true},
		{method: http.MethodGet, path: "/v1/me", access: fan, handler: me, enabled: true},
		{method: http.MethodDelete, path: "/v1/me", access: fan, handler: mine.eraseMe, enabled: bookings},

		// Browse plane.
		{method: http.MethodGet, path: "/v1/events", before: search, handler: browser.search, enabled: browse},
		{method: http.MethodGet, path: "/v1/events/suggest", before: suggest, handler: browser.suggest, enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id", before: eventPage, handler: browser.event, enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id/sections/:section_id/seats", before: seats, handler: browser.seats(seatmap.FormatJSON), enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id/sections/:section_id/seats.bin", before: seats, handler: browser.seats(seatmap.FormatBitmap), enabled: browse},
		{method: http.MethodGet, path: "/v1/events/:event_id/live", before: socket, deadline: noDeadline, handler: browser.live, enabled: browse},
		{method: http.MethodGet, path: "/v1/hotels/search", before: search, handler: hotel.searchHotels, enabled: browse && s.Browse.Hotels != nil},
		{method: http.MethodGet, path: "/v1/events/:event_id/hotels", before: search, handler: hotel.eventHotels, enabled: browse && s.Browse.Hotels != nil},

		// Admit plane.
		{method: http.MethodPost, path: "/v1/events/:event_id/queue", access: fan, handler: queue.joinQueue, enabled: room},
		{method: http.MethodGet, path: "/v1/events/:event_id/queue", access: fan, handler: queue.pollQueue, enabled: room},
		{method: http.MethodGet, path: "/v1/events/:event_id/queue/ws", access: fanSocket, before: socket, deadline: noDeadline, handler: queue.queueSocket, enabled: room},
		// The waitlist of sold-out events (waitlist.go).
		{method: http.MethodPost, path: "/v1/events/:event_id/waitlist", access: fan, handler: waiting.joinWaitlist, enabled: s.Waitlist != nil},
		{method: http.MethodDelete, path: "/v1/events/:event_id/waitlist", access: fan, handler: waiting.leaveWaitlist, enabled: s.Waitlist != nil},
		{method: http.MethodGet, path: "/v1/me/waitlist", access: fan, handler: mine.myWaitlist, enabled: s.Waitlist != nil},

		// Buy plane.
		{method: http.MethodPost, path: "/v1/holds", access: fan, before: limitHold, handler: hold.createHold, enabled: holdsOn},
		{method: http.MethodGet, path: "/v1/holds/:id", access: fan, handler: hold.getHold, enabled: holdsOn},
		{method: http.MethodDelete, path: "/v1/holds/:id", access: fan, handler: hold.deleteHold, enabled: holdsOn},
		{method: http.MethodPost, path: "/v1/holds/:id/checkout", access: fan, after: limitCheckout, deadline: updateDeadline, handler: hold.checkout, enabled: bookings},
		{method: http.MethodGet, path: "/v1/bookings/:id", access: fan, deadline: bookingWaitDeadline, handler: booked.getBooking, enabled: bookings},
		{method: http.MethodPost, path: "/v1/bookings/:id/cancel", access: fan, deadline: updateDeadline, handler: booked.cancelBooking, enabled: bookings},
		{method: http.MethodGet, path: "/v1/bookings/:id/invoice.pdf", access: fan, handler: billing.invoicePDF(store.KindInvoice), enabled: s.Invoices != nil},
		{method: http.MethodGet, path: "/v1/bookings/:id/credit-note.pdf", access: fan, handler: billing.invoicePDF(store.KindCreditNote), enabled: s.Invoices != nil},
		{method: http.MethodGet, path: "/v1/tickets/:ticket_id/qr", access: fan, handler: booked.ticketQR, enabled: s.Tickets != nil},
		{method: http.MethodGet, path: "/v1/tickets/:ticket_id/wallet", access: fan, handler: booked.ticketWallet, enabled: s.Tickets != nil},
		{method: http.MethodPost, path: "/v1/tickets/:ticket_id/transfer", access: fan, handler: handing.offerTransfer, enabled: s.Transfers != nil},
		{method: http.MethodPost, path: "/v1/transfers/:transfer_id/accept", access: fan, handler: handing.acceptTransfer, enabled: s.Transfers != nil},
		{method: http.MethodDelete, path: "/v1/transfers/:transfer_id", access: fan, handler: handing.cancelTransfer, enabled: s.Transfers != nil},
		{method: http.MethodGet, path: "/v1/me/transfers", access: fan, handler: handing.myTransfers, enabled: s.Transfers != nil},
		// Resale (resale.go); a listing is bought with POST /v1/holds {"listing_ids"}.
		{method: http.MethodPost, path: "/v1/tickets/:ticket_id/listings", access: fan, handler: selling.createListing, enabled: s.Resale != nil},
		{method: http.MethodDelete, path: "/v1/listings/:listing_id", access: fan, handler: selling.withdrawListing, enabled: s.Resale != nil},
		{method: http.MethodGet, path: "/v1/events/:event_id/listings", access: fan, handler: selling.eventListings, enabled: s.Resale != nil},
		{method: http.MethodGet, path: "/v1/me/listings", access: fan, handler: selling.myListings, enabled: s.Resale != nil},

		// Event cancellation and support staff.
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/cancel", roles: []session.Role{session.Organiser, session.Admin}, deadline: staffDeadline, handler: support.cancelEvent, enabled: bookings},
		{method: http.MethodGet, path: "/v1/admin/jobs/:job_id", roles: []session.Role{session.Organiser, session.Support, session.Admin}, handler: support.getJob, enabled: bookings},
		{method: http.MethodGet, path: "/v1/admin/bookings", roles: staff, handler: support.searchBookings, enabled: bookings},
		{method: http.MethodGet, path: "/v1/admin/bookings/:booking_id", roles: staff, handler: support.supportBooking, enabled: bookings},
		{method: http.MethodPost, path: "/v1/admin/bookings/:booking_id/refund", roles: staff, deadline: staffDeadline, handler: support.supportRefund, enabled: bookings},
		{method: http.MethodPost, path: "/v1/admin/bookings/:booking_id/resend", roles: staff, deadline: staffDeadline, handler: support.supportResend, enabled: bookings},
		{method: http.MethodPost, path: "/v1/admin/bookings/:booking_id/refund-and-close", roles: staff, deadline: staffDeadline, handler: support.supportRefundAndClose, enabled: bookings},
		{method: http.MethodPost, path: "/v1/admin/bookings/:booking_id/retry-now", roles: staff, deadline: staffDeadline, handler: support.supportRetryNow, enabled: bookings},
		{method: http.MethodGet, path: "/v1/support/emails", roles: staff, handler: emails.listEmails, enabled: bookings},
		{method: http.MethodPost, path: "/v1/support/emails/:email_id/resend", roles: staff, handler: emails.resendEmail, enabled: bookings},

		// The payment provider.
		{method: http.MethodPost, path: "/v1/webhooks/stripe", handler: webhook.stripeWebhook, enabled: bookings},
		{method: http.MethodGet, path: "/v1/payments/return", handler: paymentReturn, enabled: bookings},
		{method: http.MethodPost, path: "/v1/payments/return", handler: paymentReturn, enabled: bookings},

		// Organisers and admins (admin.go): venues, events, seat blocks,
		// promotions, sales, the audit log.
		{method: http.MethodPost, path: "/v1/admin/venues", roles: organiserRoles, deadline: importDeadline, handler: org.createVenue, enabled: admin},
		{method: http.MethodGet, path: "/v1/admin/venues", roles: organiserRoles, handler: org.listVenues, enabled: admin},
		{method: http.MethodGet, path: "/v1/admin/events", roles: organiserRoles, handler: org.listEvents, enabled: admin},
		{method: http.MethodPost, path: "/v1/admin/events", roles: organiserRoles, deadline: importDeadline, handler: org.createEvent, enabled: admin},
		{method: http.MethodGet, path: "/v1/admin/events/:event_id", roles: organiserRoles, after: own, handler: org.adminEvent, enabled: admin},
		{method: http.MethodPatch, path: "/v1/admin/events/:event_id", roles: organiserRoles, after: own, handler: org.patchEvent, enabled: admin},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/publish", roles: organiserRoles, after: own, handler: org.publishEvent, enabled: admin},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/seats/block", roles: organiserRoles, after: own, handler: org.blockSeats(true), enabled: admin},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/seats/unblock", roles: organiserRoles, after: own, handler: org.blockSeats(false), enabled: admin},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/promotions", roles: organiserRoles, after: own, handler: org.createPromotion, enabled: admin},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/door/scans", roles: organiserRoles, after: own, handler: org.recordDoorScans, enabled: admin && org.door != nil},
		{method: http.MethodGet, path: "/v1/admin/events/:event_id/door", roles: organiserRoles, after: own, handler: org.doorReport, enabled: admin && org.door != nil},
		{method: http.MethodGet, path: "/v1/admin/events/:event_id/promotions", roles: organiserRoles, after: own, handler: org.listPromotions, enabled: admin},
		{method: http.MethodDelete, path: "/v1/admin/events/:event_id/promotions/:code", roles: organiserRoles, after: own, handler: org.disablePromotion, enabled: admin},
		{method: http.MethodPatch, path: "/v1/admin/events/:event_id/promotions/:code", roles: organiserRoles, after: own, handler: org.updatePromotion, enabled: admin},
		{method: http.MethodGet, path: "/v1/admin/events/:event_id/attendees", roles: organiserRoles, after: own, handler: org.attendees, enabled: admin},
		{method: http.MethodGet, path: "/v1/admin/events/:event_id/orders", roles: organiserRoles, after: own, handler: org.orders, enabled: admin},
		{method: http.MethodGet, path: "/v1/admin/events/:event_id/sales", roles: organiserRoles, after: own, handler: org.salesReport, enabled: admin && s.Admin.Sales != nil},
		{method: http.MethodGet, path: "/v1/admin/audit", roles: organiserRoles, handler: org.listAudit, enabled: admin},
		{method: http.MethodGet, path: "/v1/admin/org", roles: organiserRoles, handler: org.orgSettings, enabled: admin},
		{method: http.MethodPost, path: "/v1/admin/series", roles: organiserRoles, deadline: importDeadline, handler: org.createSeries, enabled: admin},
		{method: http.MethodPatch, path: "/v1/admin/org", roles: organiserRoles, handler: org.patchOrgSettings, enabled: admin},

		// Hoteliers and admins (properties.go, hotels.go): properties, their
		// nightly inventory, arrivals, overbooking limits and walks.
		{method: http.MethodPost, path: "/v1/admin/properties", roles: hotelierRoles, handler: props.createProperty, enabled: properties},
		{method: http.MethodGet, path: "/v1/admin/properties", roles: hotelierRoles, handler: props.listProperties, enabled: properties},
		{method: http.MethodGet, path: "/v1/admin/properties/:property_id", roles: hotelierRoles, after: ownProperty, handler: props.getProperty, enabled: properties},
		{method: http.MethodPatch, path: "/v1/admin/properties/:property_id", roles: hotelierRoles, after: ownProperty, handler: props.patchProperty, enabled: properties},
		{method: http.MethodPut, path: "/v1/admin/properties/:property_id/inventory", roles: hotelierRoles, after: ownProperty, handler: props.setInventory, enabled: properties},
		{method: http.MethodGet, path: "/v1/admin/properties/:property_id/inventory", roles: hotelierRoles, after: ownProperty, handler: props.inventory, enabled: properties},
		{method: http.MethodGet, path: "/v1/admin/properties/:property_id/arrivals", roles: hotelierRoles, after: ownProperty, handler: props.arrivals, enabled: properties},
		{method: http.MethodGet, path: "/v1/admin/properties/:property_id/walks/preview", roles: hotelierRoles, after: ownProperty, handler: props.previewWalk, enabled: properties},
		{method: http.MethodPut, path: "/v1/admin/properties/:property_id/overbooking", roles: hotelierRoles, after: ownProperty, handler: hotel.setOverbooking, enabled: properties},
		{method: http.MethodPost, path: "/v1/admin/properties/:property_id/walks", roles: hotelierRoles, after: ownProperty, deadline: staffDeadline, handler: hotel.walkRooms, enabled: properties && s.Admin.Walks != nil},

		// Operators (operator.go): an event's dials and revocations.
		{method: http.MethodGet, path: "/v1/admin/events/:event_id/controls", roles: operatorRoles, handler: ops.getControls, enabled: operator},
		{method: http.MethodPatch, path: "/v1/admin/events/:event_id/controls", roles: operatorRoles, handler: ops.patchControls, enabled: operator},
		{method: http.MethodPost, path: "/v1/admin/events/:event_id/admissions/revoke", roles: operatorRoles, handler: ops.revokeAdmission, enabled: operator && room},
	}
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
