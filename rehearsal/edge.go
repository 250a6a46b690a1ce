package rehearsal

import (
	"context"
	"encoding/json"
	"github.com/encore-tickets/encore/money"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/encore-tickets/encore/dev/httpjson"
)

// edge sends the fans' requests: JSON in and out, every answer that is not
// a success (or a 304 to a conditional read) counted by call and problem
// type. Requests go in three lanes: the queue's (sign-in, joins and the
// polls of fans without a socket) and the sale's (everything after
// admission), each with at most Concurrency in flight, and the booking
// pages' waiting reads, one a fan at most. Thousands of fans polling in
// line must not hold back the admitted fans' holds and payments behind them
// in the rehearsal's own queue, nor must pages held open until their
// booking changes: the stack has no such queue, each fan being a browser of
// its own.
type edge struct {
	base              string
	sem, queue, waits chan struct{}
	rec               *recorder
}

// lane is the bound a call waits on.
func (e *edge) lane(call string) chan struct{} {
	switch call {
	case "session", "join", "queue-poll":
		return e.queue
	case "booking-wait":
		return e.waits
	}
	return e.sem
}

// answer is one HTTP exchange as a fan saw it.
type answer struct {
	status  int           // 0: no answer (connection refused, timeout)
	problem problem       // the problem document of a 4xx/5xx answer
	raw     []byte        // the body
	took    time.Duration // from the request sent to the answer read, without waiting for a slot
	header  http.Header
}

// problem is the RFC 9457 document of an error answer, with the members
// the fans act on.
type problem struct {
	Type         string     `json:"type"`
	Detail       string     `json:"detail"`
	Alternatives []string   `json:"alternatives"`
	Unavailable  []string   `json:"unavailable_seat_ids"`
	Challenge    *challenge `json:"challenge"`
	// Cap is the highest price a resale listing may ask (price-above-cap).
	Cap *money.Money `json:"cap"`
}

// passing is an answer a fan tries again after a moment, as a browser's
// user reloads: no answer, a gateway with no backend, the stack
// unavailable or asking to slow down, or the same request still running.
func (a answer) passing() bool {
	return a.status == 0 || a.status == http.StatusBadGateway || a.status == http.StatusServiceUnavailable ||
		a.name() == "rate-limited" || a.name() == "request-in-progress"
}

// name is the problem's type without its /problems/ prefix, or what stands
// for it: no-answer, or http-<status> for an answer that is not a problem.
func (a answer) name() string {
	switch {
	case a.status == 0:
		return "no-answer"
	case a.problem.Type != "":
		return strings.TrimPrefix(a.problem.Type, "/problems/")
	}
	return "http-" + strconv.Itoa(a.status)
}

func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// retryAfter is the answer's Retry-After, bounded to [floor, 30s].
func (a answer) retryAfter(floor time.Duration) time.Duration {
	if s, err := strconv.Atoi(a.header.Get("Retry-After")); err == nil && s > 0 {
		return max(floor, time.Duration(min(s, 30))*time.Second)
	}
	return floor
}

func (a answer) decode(v any) error { return json.Unmarshal(a.raw, v) }

// call sends one request for a fan. call names the step for the error
// counts ("hold", "checkout", ...). A body of nil sends none; headers come
// in pairs.
func (e *edge) call(ctx context.Context, c *http.Client, call, method, url, token string, body any, headers ...string) answer {
	req, err := httpjson.NewRequest(ctx, method, url, token, body, headers...)
	if err != nil {
		e.rec.failure(call, "bad-request")
		return answer{}
	}
	return e.do(ctx, c, call, req)
}

// do sends a prepared request within the bound on requests in flight.
func (e *edge) do(ctx context.Context, c *http.Client, call string, req *http.Request) answer {
	lane := e.lane(call)
	select {
	case lane <- struct{}{}:
	case <-ctx.Done():
		return answer{}
	}
	t0 := time.Now()
	resp, err := c.Do(req)
	var a answer
	if err == nil {
		a.raw, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		resp.Body.Close()
		a.status, a.header = resp.StatusCode, resp.Header
	}
	a.took = time.Since(t0)
	<-lane
	if err != nil {
		a.status = 0
		if ctx.Err() == nil { // not the rehearsal's own deadline
			e.rec.failureSaying(call, a.name(), err.Error())
		}
		return a
	}
	if !a.ok() && a.status != http.StatusNotModified {
		_ = json.Unmarshal(a.raw, &a.problem)
		e.rec.failureSaying(call, a.name(), a.problem.Detail)
	}
	return a
}

// api is call on a path of the fan API.
func (e *edge) api(ctx context.Context, c *http.Client, call, method, path, token string, body any, headers ...string) answer {
	return e.call(ctx, c, call, method, e.base+path, token, body, headers...)
}
