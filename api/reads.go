package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/ratelimit"
)

// readClass is a kind of anonymous browse read, each with its own
// per-address budget: a fan typing in the search box does not spend the
// budget their seat map needs.
type readClass string

const (
	readSearch  readClass = "search"  // event and hotel search
	readSuggest readClass = "suggest" // autocomplete
	readEvent   readClass = "event"   // event pages
	readSeats   readClass = "seats"   // seat-map snapshots
)

var readClasses = []readClass{readSearch, readSuggest, readEvent, readSeats}

// ReadLimits are the per-address limits of the browse routes, which need
// no login. They count every request of those routes, signed in or not:
// the routes verify no token, so a bearer header (real or made up) must
// not buy a bigger budget. Limits live in Redis (package ratelimit) so
// every API process shares one budget per address, and hold per process
// when Redis does not answer.
type ReadLimits struct {
	limiters map[readClass]*ratelimit.Limiter
	refused  *prometheus.CounterVec
}

// NewReadLimits allows perMinute requests of each read class per client
// address (IPv6: per /64, LimitKey) per minute, in bursts of a sixth (at
// least 1), keyed under prefix in rdb.
func NewReadLimits(rdb redis.UniversalClient, prefix string, perMinute int) *ReadLimits {
	lim := ratelimit.Limit{Count: perMinute, Per: time.Minute, Burst: max(perMinute/6, 1)}
	r := &ReadLimits{limiters: map[readClass]*ratelimit.Limiter{},
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_read_limited_total",
			Help: "Browse reads refused 429 by the per-address limit, by read class."}, []string{"class"})}
	for _, c := range readClasses {
		r.limiters[c] = ratelimit.New(rdb, prefix+"rl:read:"+string(c)+":", lim)
	}
	return r
}

// Register adds the limits' metrics to reg.
func (r *ReadLimits) Register(reg prometheus.Registerer) { reg.MustRegister(r.refused) }

// limitRead runs ahead of a browse route: a client address past its budget
// of class is answered 429 rate-limited with Retry-After before the route
// reads anything. No limits configured: nothing is limited.
func (s *Server) limitRead(class readClass) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.Reads == nil {
			c.Next()
			return
		}
		if ok, wait := s.Reads.limiters[class].Allow(c.Request.Context(), clientKey(c.Request)); !ok {
			s.Reads.refused.WithLabelValues(string(class)).Inc()
			writeProblem(c, NewProblem(http.StatusTooManyRequests, ProbRateLimited,
				"too many "+string(class)+" requests from this address; slow down").RetryAfter(max(wait, time.Millisecond)))
			return
		}
		c.Next()
	}
}
