package waitingroom

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/session"
)

// The fan API of the admit plane (DESIGN.md's contract):
//
//	POST /v1/events/{event_id}/queue    join (or keep your place) -> state
//	GET  /v1/events/{event_id}/queue    heartbeat and state (the polling fallback)
//	GET  /v1/events/{event_id}/queue/ws WebSocket: the same states, pushed; send
//	                                    {"type":"heartbeat"} every heartbeat_seconds
//
// States are {"status":"waiting","position","estimated_wait_seconds"},
// {"status":"admitted","pass","pass_expires_at"} or {"status":"sold_out"}.
// Browsers cannot set headers on a WebSocket, so the socket also takes the
// bearer token as ?access_token= and a proof of work as ?pow_challenge= and
// ?pow_solution= (elsewhere the headers X-Queue-Challenge and X-Queue-Solution).

var eventIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$`)

// Routes adds the room's routes to the API's engine (api.Server.Extra).
func (r *Room) Routes(e *gin.Engine, auth gin.HandlerFunc) {
	e.POST("/v1/events/:event_id/queue", auth, r.handleJoin)
	e.GET("/v1/events/:event_id/queue", auth, r.handleStatus)
	e.GET("/v1/events/:event_id/queue/ws", tokenFromQuery, auth, r.handleSocket)
}

func tokenFromQuery(c *gin.Context) {
	if c.GetHeader("Authorization") == "" {
		if t := c.Query("access_token"); t != "" {
			c.Request.Header.Set("Authorization", "Bearer "+t)
		}
	}
	c.Next()
}

func problem(c *gin.Context, p *api.Problem) {
	p.Instance = c.Request.URL.Path
	p.Write(c.Writer)
	c.Abort()
}

// problemFor maps the room's errors to the contract's problems.
func (r *Room) problemFor(c *gin.Context, err error) {
	var rl *rateLimited
	var ch *challengeRequired
	switch {
	case errors.As(err, &rl):
		r.m.limit(rl.limit)
		problem(c, api.NewProblem(http.StatusTooManyRequests, api.ProbRateLimited, "too many requests; slow down").RetryAfter(rl.wait))
	case errors.As(err, &ch):
		p := api.NewProblem(http.StatusPreconditionRequired, api.ProbChallengeRequired, ch.detail)
		p.Instance = c.Request.URL.Path
		body, _ := json.Marshal(struct {
			*api.Problem
			Challenge Challenge `json:"challenge"`
		}{p, ch.challenge})
		c.Header("Content-Type", "application/problem+json")
		c.Data(http.StatusPreconditionRequired, "application/problem+json", append(body, '\n'))
		c.Abort()
	case errors.Is(err, ErrNoRoom):
		problem(c, api.NewProblem(http.StatusNotFound, api.ProbNotFound, "no waiting room for this event (unknown or not metered)"))
	case errors.Is(err, ErrNotInLine):
		problem(c, api.NewProblem(http.StatusNotFound, api.ProbNotFound, "not in line; POST to this URL to join"))
	case errors.Is(err, ErrAdmittedElsewhere):
		problem(c, api.NewProblem(http.StatusConflict, api.ProbAdmittedElsewhere, "this account was admitted on another device; continue there"))
	default:
		if !errors.Is(err, ErrUnavailable) {
			r.opts.Log.Error("waiting room request failed", "err", err)
		}
		problem(c, api.NewProblem(http.StatusServiceUnavailable, api.ProbUnavailable, "the waiting room cannot answer now; retry").RetryAfter(2*time.Second))
	}
}

type rateLimited struct {
	limit string
	wait  time.Duration
}

func (e *rateLimited) Error() string { return "waitingroom: rate limited (" + e.limit + ")" }

type challengeRequired struct {
	detail    string
	challenge Challenge
}

func (e *challengeRequired) Error() string { return "waitingroom: " + e.detail }

func allow(ctx context.Context, l *ratelimit.Limiter, name, key string) error {
	if ok, wait := l.Allow(ctx, key); !ok {
		return &rateLimited{limit: name, wait: wait}
	}
	return nil
}

// admit runs the edge's checks of a join (rate limits per account and IP,
// the risk score and, when it is high, the proof of work) and then joins.
func (r *Room) admit(ctx context.Context, req *http.Request, id session.Identity, eventID string) (State, error) {
	if _, err := r.gate(ctx, eventID); err != nil {
		return State{}, err
	}
	ip := api.ClientIP(req)
	if err := allow(ctx, r.joinIP, "join-ip", eventID+"|"+ip); err != nil {
		return State{}, err
	}
	if err := allow(ctx, r.joinAccount, "join-account", eventID+"|"+id.UserID); err != nil {
		return State{}, err
	}
	risk, err := r.riskScore(ctx, id, eventID, ip)
	if err != nil {
		return State{}, err
	}
	if risk >= r.opts.Risk.Threshold {
		proof := Proof{Challenge: firstNonEmpty(req.Header.Get("X-Queue-Challenge"), req.URL.Query().Get("pow_challenge")),
			Solution: firstNonEmpty(req.Header.Get("X-Queue-Solution"), req.URL.Query().Get("pow_solution"))}
		if proof.Challenge == "" {
			r.m.challenge("issued")
			return State{}, &challengeRequired{detail: "solve the proof-of-work challenge and join again",
				challenge: r.newChallenge(id.UserID, eventID)}
		}
		if err := r.verifyProof(ctx, proof, id.UserID, eventID); err != nil {
			if errors.Is(err, ErrUnavailable) {
				return State{}, err
			}
			r.m.challenge("failed")
			return State{}, &challengeRequired{detail: "the proof of work was not valid; solve this challenge",
				challenge: r.newChallenge(id.UserID, eventID)}
		}
		r.m.challenge("solved")
	}
	return r.Join(ctx, id, eventID, 0)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (r *Room) eventParam(c *gin.Context) (string, bool) {
	id := c.Param("event_id")
	if !eventIDPattern.MatchString(id) {
		problem(c, api.Invalid(api.FieldError{Field: "event_id", Message: "not an event ID"}))
		return "", false
	}
	return id, true
}

func (r *Room) handleJoin(c *gin.Context) {
	id, ok := api.FanIdentity(c)
	if !ok {
		problem(c, api.NewProblem(http.StatusUnauthorized, api.ProbUnauthorized, "send Authorization: Bearer <token>"))
		return
	}
	eventID, ok := r.eventParam(c)
	if !ok {
		return
	}
	st, err := r.admit(c.Request.Context(), c.Request, id, eventID)
	if err != nil {
		r.problemFor(c, err)
		return
	}
	c.JSON(http.StatusOK, st)
}

func (r *Room) handleStatus(c *gin.Context) {
	id, ok := api.FanIdentity(c)
	if !ok {
		problem(c, api.NewProblem(http.StatusUnauthorized, api.ProbUnauthorized, "send Authorization: Bearer <token>"))
		return
	}
	eventID, ok := r.eventParam(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	if err := allow(ctx, r.statusAccount, "status-account", eventID+"|"+id.UserID); err != nil {
		r.problemFor(c, err)
		return
	}
	if r.regular.beat(eventID+"|"+id.UserID, time.Now(), r.opts.Risk.Regular) {
		r.flag(ctx, eventID, id.UserID, flagRegular)
	}
	st, err := r.Status(ctx, id, eventID)
	if err != nil {
		r.problemFor(c, err)
		return
	}
	c.JSON(http.StatusOK, st)
}

// handleSocket joins (or keeps the place of) the fan, with the same checks
// as POST, then upgrades. Refusals are plain HTTP problems before the
// upgrade.
func (r *Room) handleSocket(c *gin.Context) {
	id, ok := api.FanIdentity(c)
	if !ok {
		problem(c, api.NewProblem(http.StatusUnauthorized, api.ProbUnauthorized, "send the session token"))
		return
	}
	eventID, ok := r.eventParam(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	st, err := r.admit(ctx, c.Request, id, eventID)
	if err != nil {
		r.problemFor(c, err)
		return
	}
	g, err := r.gate(ctx, eventID)
	if err != nil {
		r.problemFor(c, err)
		return
	}
	conn, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{
		OriginPatterns: r.opts.OriginPatterns, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // Accept wrote the response
	}
	c.Abort()
	r.serveSocket(conn, id, g, st)
}

// Guard limits the buy plane's hot paths per IP address (POST /v1/holds)
// and per IP address and account (POST /v1/holds/{id}/checkout) before they
// reach the handlers; the hold service limits holds per account itself.
// sessions reads the account from the bearer token (nil: IP limits only).
func (r *Room) Guard(next http.Handler, sessions *session.Issuer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && strings.HasPrefix(req.URL.Path, "/v1/holds") {
			ctx := req.Context()
			ip := api.ClientIP(req)
			var err error
			switch {
			case req.URL.Path == "/v1/holds":
				err = allow(ctx, r.holdIP, "hold-ip", ip)
			case strings.HasSuffix(req.URL.Path, "/checkout"):
				err = allow(ctx, r.checkoutIP, "checkout-ip", ip)
				if err == nil && sessions != nil {
					if tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok {
						if id, verr := sessions.Verify(tok, time.Now()); verr == nil {
							err = allow(ctx, r.checkoutAccount, "checkout-account", id.UserID)
						}
					}
				}
			}
			var rl *rateLimited
			if errors.As(err, &rl) {
				r.m.limit(rl.limit)
				p := api.NewProblem(http.StatusTooManyRequests, api.ProbRateLimited, "too many requests; slow down").RetryAfter(rl.wait)
				p.Instance = req.URL.Path
				p.Write(w)
				return
			}
		}
		next.ServeHTTP(w, req)
	})
}
