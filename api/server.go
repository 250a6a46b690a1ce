// Package api is Encore's HTTP edge: the fan API of DESIGN.md's contract,
// health and readiness, and metrics. Handlers decode and validate, call a use
// case, and map its domain errors to RFC 9457 problems in one place
// (problemFor); no handler answers a 500 for bad input.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

// Check is one readiness dependency.
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Server wires the edge's dependencies.
type Server struct {
	Holds    *holds.Service
	Sessions *session.Issuer
	Checks   []Check
	Gatherer prometheus.Gatherer
	Log      *slog.Logger
	// Extra lets later planes add their routes to the same engine.
	Extra []func(r *gin.Engine, auth gin.HandlerFunc)
	// Temporal reaches the booking workflows; WebhookSecret verifies the
	// provider's signatures.
	Temporal      client.Client
	WebhookSecret string

	webhookConflicts prometheus.Counter
}

func init() { gin.SetMode(gin.ReleaseMode) }

// Register creates the edge's own metrics on reg.
func (s *Server) Register(reg prometheus.Registerer) {
	s.webhookConflicts = prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_webhook_conflicts_total",
		Help: "Provider events whose ID arrived again with other content (alert on any)."})
	reg.MustRegister(s.webhookConflicts)
}

// Handler builds the router.
func (s *Server) Handler() http.Handler {
	r := gin.New()
	// gin's own ClientIP must agree with ClientIP: no forwarded headers.
	_ = r.SetTrustedProxies(nil)
	r.HandleMethodNotAllowed = true
	r.Use(s.recoverer)
	r.NoRoute(func(c *gin.Context) { s.problem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such path")) })
	r.NoMethod(func(c *gin.Context) {
		s.problem(c, NewProblem(http.StatusMethodNotAllowed, ProbMethodNotAllowed, c.Request.Method+" is not allowed here"))
	})
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", s.ready)
	if s.Gatherer != nil {
		r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{})))
	}
	r.POST("/v1/sessions", s.createSession)
	auth := s.authenticate
	r.POST("/v1/holds", auth, s.createHold)
	r.GET("/v1/holds/:id", auth, s.getHold)
	r.DELETE("/v1/holds/:id", auth, s.deleteHold)
	if s.Temporal != nil {
		r.POST("/v1/holds/:id/checkout", auth, s.checkout)
		r.GET("/v1/bookings/:id", auth, s.getBooking)
		r.POST("/v1/bookings/:id/cancel", auth, s.cancelBooking)
		r.POST("/v1/webhooks/stripe", s.stripeWebhook)
		r.GET("/v1/payments/return", s.paymentReturn)
		r.POST("/v1/payments/return", s.paymentReturn)
	}
	for _, add := range s.Extra {
		add(r, auth)
	}
	return r
}

func (s *Server) recoverer(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			s.Log.Error("panic in handler", "path", c.FullPath(), "panic", v)
			s.problem(c, NewProblem(http.StatusInternalServerError, ProbInternal, "unexpected error"))
		}
	}()
	c.Next()
}

func (s *Server) problem(c *gin.Context, p *Problem) {
	p.Instance = c.Request.URL.Path
	p.Write(c.Writer)
	c.Abort()
}

// problemFor maps domain errors to problems; unknown errors are logged and
// answered as a retryable 503, since they come from infrastructure.
func (s *Server) problemFor(err error) *Problem {
	var (
		su  *store.SeatUnavailableError
		pc  *store.PendingCheckoutError
		pl  *store.PurchaseLimitError
		inv *store.InvalidError
		pr  *store.PromotionError
		rl  *holds.RateLimitedError
		ce  *seathint.ContendedError
	)
	switch {
	case errors.As(err, &su):
		p := NewProblem(http.StatusConflict, ProbSeatUnavailable, su.Detail)
		p.UnavailableSeatIDs = &[]string{}
		if su.SeatIDs != nil {
			p.UnavailableSeatIDs = &su.SeatIDs
		}
		p.Alternatives = &[]string{}
		if su.Alternatives != nil {
			p.Alternatives = &su.Alternatives
		}
		return p
	case errors.As(err, &ce):
		p := NewProblem(http.StatusConflict, ProbSeatUnavailable, "seats are being held by another fan")
		p.UnavailableSeatIDs, p.Alternatives = &ce.SeatIDs, &[]string{}
		return p
	case errors.As(err, &pc):
		p := NewProblem(http.StatusConflict, ProbPendingCheckout, "finish or release your current hold first")
		p.HoldID = pc.HoldID
		return p
	case errors.As(err, &pl):
		p := NewProblem(http.StatusForbidden, ProbPurchaseLimit, pl.Error()[len("store: "):])
		p.Limit = pl.Limit
		return p
	case errors.As(err, &inv):
		return Invalid(FieldError{Field: inv.Field, Message: inv.Message})
	case errors.As(err, &pr):
		return NewProblem(http.StatusConflict, ProbPromotionUnavailable, pr.Code+": "+pr.Reason)
	case errors.As(err, &rl):
		return NewProblem(http.StatusTooManyRequests, ProbRateLimited, "slow down").RetryAfter(rl.RetryAfter)
	case errors.Is(err, holds.ErrQueueRequired):
		return NewProblem(http.StatusTooManyRequests, ProbQueueRequired, err.Error()).RetryAfter(5 * time.Second)
	case errors.Is(err, store.ErrNotFound):
		return NewProblem(http.StatusNotFound, ProbNotFound, "no such hold")
	case errors.Is(err, store.ErrHoldExpired):
		return NewProblem(http.StatusGone, ProbHoldExpired, "the hold expired; its seats were released")
	case errors.Is(err, store.ErrNotPending):
		return NewProblem(http.StatusConflict, ProbHoldNotPending, "the hold is paid or already ended")
	case errors.Is(err, store.ErrKeyReused):
		return NewProblem(http.StatusUnprocessableEntity, ProbIdempotencyKeyReused, "send a new Idempotency-Key for a different request")
	case errors.Is(err, store.ErrRequestInProgress):
		return NewProblem(http.StatusConflict, ProbRequestInProgress, "retry after the first request finishes").RetryAfter(time.Second)
	case errors.Is(err, store.ErrNotOnSale):
		return NewProblem(http.StatusForbidden, ProbNotOnSale, "the sale has not opened yet")
	case errors.Is(err, store.ErrBusy), errors.Is(err, context.DeadlineExceeded):
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "busy, retry").RetryAfter(time.Second)
	default:
		s.Log.Error("request failed", "err", err)
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "a dependency failed, retry").RetryAfter(2 * time.Second)
	}
}

const identityKey = "encore.identity"

func (s *Server) authenticate(c *gin.Context) {
	h := c.GetHeader("Authorization")
	token, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		s.problem(c, NewProblem(http.StatusUnauthorized, ProbUnauthorized, "send Authorization: Bearer <token> from POST /v1/sessions"))
		return
	}
	id, err := s.Sessions.Verify(token, time.Now())
	if err != nil {
		s.problem(c, NewProblem(http.StatusUnauthorized, ProbUnauthorized, "the token is invalid or expired"))
		return
	}
	c.Set(identityKey, id)
	c.Next()
}

func identity(c *gin.Context) session.Identity {
	id, _ := FanIdentity(c)
	return id
}

// FanIdentity is the caller the auth middleware verified, for routes other
// planes add through Extra; ok is false on an unauthenticated route.
func FanIdentity(c *gin.Context) (session.Identity, bool) {
	v, ok := c.Get(identityKey)
	id, _ := v.(session.Identity)
	return id, ok && id.UserID != ""
}

// ClientIP is the TCP peer's address: the one client address every rate
// limit and fraud rule counts. Forwarded headers are not trusted; behind a
// proxy, the proxy's address counts.
func ClientIP(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}

func (s *Server) createSession(c *gin.Context) {
	var req struct {
		UserID   string `json:"user_id"`
		DeviceID string `json:"device_id"`
	}
	if err := decodeJSON(c, &req); err != nil {
		s.problem(c, Invalid(*err))
		return
	}
	var errs []FieldError
	if !idPattern.MatchString(req.UserID) {
		errs = append(errs, FieldError{"user_id", "required: letters, digits, '_', '-', '.', ':' (at most 100)"})
	}
	if !idPattern.MatchString(req.DeviceID) {
		errs = append(errs, FieldError{"device_id", "required: letters, digits, '_', '-', '.', ':' (at most 100)"})
	}
	if len(errs) > 0 {
		s.problem(c, Invalid(errs...))
		return
	}
	c.JSON(http.StatusCreated, gin.H{"token": s.Sessions.Issue(req.UserID, req.DeviceID, time.Now())})
}

func decodeJSON(c *gin.Context, v any) *FieldError {
	body, err := readBody(c)
	if err != nil {
		return &FieldError{"body", "larger than 16 KiB or unreadable"}
	}
	if err := jsonUnmarshal(body, v); err != nil {
		fe := jsonFieldError(err)
		return &fe
	}
	return nil
}

func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	status := map[string]string{}
	ok := true
	for _, chk := range s.Checks {
		if err := chk.Ping(ctx); err != nil {
			status[chk.Name] = "down: " + err.Error()
			ok = false
		} else {
			status[chk.Name] = "ok"
		}
	}
	if !ok {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "checks": status})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": status})
}
