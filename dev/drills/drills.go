// Package drills plays failures against a running development stack
// (encore dev) and judges how it copes: each drill breaks one part through
// the stack's own switches (its admin listener's /drill/ routes and the
// payment sandbox's), drives fans through the real edge meanwhile, puts
// the part back, and measures the time to recover. A verdict passes only
// when the system kept its promises throughout: admission failed closed,
// no seat sold twice, no fan charged twice, every booking finished.
//
// Drills send traffic to loopback addresses only.
package drills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/encore-tickets/encore/dev/httpjson"
	"github.com/encore-tickets/encore/internal/ctxsleep"
)

// Target is the running stack a drill plays against.
type Target struct {
	API   string // the fan API (http://127.0.0.1:8080)
	Admin string // its admin listener (http://127.0.0.1:9090)
	PSP   string // the payment sandbox (http://127.0.0.1:12111)
	// DrillToken opens the stack's /drill/ switches (encore dev writes it
	// to ENCORE_DATA_DIR/drill.token).
	DrillToken string
	// Metered and Unmetered are events on sale: the flash sale behind the
	// waiting room and one without it (the demo data's by default).
	Metered, Unmetered string
	// OutboxAlertAfter is the outbox-age alert's threshold (its rule:
	// max(encore_outbox_oldest_unpublished_age_seconds) > 30).
	OutboxAlertAfter time.Duration
	// Limit bounds each drill's recovery (2 minutes).
	Limit time.Duration
	// Audit counts seats with two live owners and captured payments
	// without one PAID booking or full refund, after the drill (nil: not
	// checked).
	Audit func(ctx context.Context) (doubleSales, unmatchedCaptures int, err error)

	client *http.Client
	seq    atomic.Int64
	run    string
}

// Result is a drill's verdict.
type Result struct {
	Drill           string   `json:"drill"`
	Passed          bool     `json:"passed"`
	RecoverySeconds float64  `json:"recovery_seconds"`
	Observed        []string `json:"observed"`
	Failure         string   `json:"failure,omitempty"`
}

// Drill is one failure to play.
type Drill struct {
	Name  string
	About string
	run   func(ctx context.Context, t *Target, r *Result) error
}

// All are the drills, in the order `encore drill all` plays them.
var All = []Drill{
	{"redis-down", "Redis is killed: admission fails closed, holds stay correct, the room recovers when Redis returns", redisDown},
	{"relay-stopped", "The outbox relay stops: the outbox-age alert's expression turns true, live maps catch up once it runs again", relayStopped},
	{"worker-killed", "The worker stops mid-sale: a booking waiting on it finishes once it is back", workerKilled},
	{"psp-timeout", "The payment provider loses its answers after acting: lookups and retries resolve, nobody is charged twice", pspTimeout},
	{"postgres-restart", "PostgreSQL restarts: the API is ready again, paid bookings are intact, holds work", postgresRestart},
}

// Find returns the named drill.
func Find(name string) (Drill, bool) {
	for _, d := range All {
		if d.Name == name {
			return d, true
		}
	}
	return Drill{}, false
}

// Loopback refuses any target that is not on a loopback address: drills
// break things and must never reach another machine.
func (t *Target) Loopback() error {
	for _, raw := range []string{t.API, t.Admin, t.PSP} {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return fmt.Errorf("drills: %q is not a URL", raw)
		}
		host := u.Hostname()
		if host == "localhost" {
			continue
		}
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("drills: %s is not a loopback address; drills only run against a local stack", host)
		}
	}
	return nil
}

// Run plays d against t and returns its verdict; an error is a drill that
// could not be played (the stack is not there), not a failed verdict.
func (t *Target) Run(ctx context.Context, d Drill) (Result, error) {
	if err := t.Loopback(); err != nil {
		return Result{}, err
	}
	if t.client == nil {
		t.client = &http.Client{Timeout: 90 * time.Second}
		t.run = fmt.Sprintf("%x", time.Now().UnixNano())
	}
	if t.Limit <= 0 {
		t.Limit = 2 * time.Minute
	}
	if t.OutboxAlertAfter <= 0 {
		t.OutboxAlertAfter = 30 * time.Second
	}
	if err := t.ready(ctx); err != nil {
		return Result{}, err
	}
	r := Result{Drill: d.Name}
	err := d.run(ctx, t, &r)
	if err == nil && t.Audit != nil {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		doubles, unmatched, aerr := t.Audit(actx)
		// The audit only reads, so it may run again: after a drill that
		// restarts PostgreSQL its pool can still hand out a connection the
		// restart killed (57P01), which says nothing of the books.
		for try := 1; aerr != nil && try < 3 && actx.Err() == nil; try++ {
			time.Sleep(200 * time.Millisecond)
			doubles, unmatched, aerr = t.Audit(actx)
		}
		cancel()
		switch {
		case aerr != nil:
			err = fmt.Errorf("audit: %w", aerr)
		case doubles > 0 || unmatched > 0:
			err = fmt.Errorf("audit: %d seats sold twice, %d captures without one booking", doubles, unmatched)
		default:
			r.note("audit: no seat sold twice, every capture matched")
		}
	}
	if err != nil {
		var broken stackError
		if errors.As(err, &broken) {
			return r, err
		}
		r.Failure = err.Error()
		return r, nil
	}
	r.Passed = true
	return r, nil
}

// readyWait is how long a drill waits for the stack to say it is ready
// before it breaks anything: the drill before it may have just restarted a
// part, and a busy machine answers a readiness probe late.
const readyWait = 30 * time.Second

// ready waits until the stack's /readyz answers 200, or says which of its
// checks still fail when readyWait is up.
func (t *Target) ready(ctx context.Context) error {
	deadline := time.Now().Add(readyWait)
	for {
		var body struct {
			Failing []string `json:"failing"`
		}
		st, _, err := t.call(ctx, "GET", t.API+"/readyz", "", nil, &body)
		if err == nil && st == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) || !ctxsleep.Sleep(ctx, 250*time.Millisecond) {
			return fmt.Errorf("drills: the stack at %s is not ready after %s (status %d, failing %v, %v)", t.API, readyWait, st, body.Failing, err)
		}
	}
}

func (r *Result) note(format string, args ...any) {
	r.Observed = append(r.Observed, fmt.Sprintf(format, args...))
}

// recovered records the recovery as the time since start and notes it;
// format has one verb, for the seconds.
func (r *Result) recovered(start time.Time, format string) {
	r.RecoverySeconds = time.Since(start).Seconds()
	r.note(format, r.RecoverySeconds)
}

// stackError is a drill that could not be played at all.
type stackError struct{ error }

// call sends one JSON request and decodes a JSON answer into out.
func (t *Target) call(ctx context.Context, method, url, token string, body, out any, headers ...string) (int, http.Header, error) {
	req, err := httpjson.NewRequest(ctx, method, url, token, body, headers...)
	if err != nil {
		return 0, nil, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if out != nil && len(raw) > 0 {
		_ = json.Unmarshal(raw, out)
	}
	return resp.StatusCode, resp.Header, nil
}

// flip turns one of the stack's drill switches.
func (t *Target) flip(ctx context.Context, path string, body any) error {
	if body == nil {
		body = struct{}{} // the switches take JSON only
	}
	st, _, err := t.call(ctx, "POST", t.Admin+path, "", body, nil, "X-Encore-Drill-Token", t.DrillToken)
	if err != nil || st != http.StatusOK {
		return stackError{fmt.Errorf("the stack refused %s (status %d, %v): is it encore dev?", path, st, err)}
	}
	return nil
}

// fan signs a new fan in through the demo login.
func (t *Target) fan(ctx context.Context) (string, error) {
	n := t.seq.Add(1)
	var out struct {
		Token string `json:"token"`
	}
	st, _, err := t.call(ctx, "POST", t.API+"/v1/sessions", "", map[string]any{
		"user_id": fmt.Sprintf("drill-%s-%d", t.run, n), "device_id": fmt.Sprintf("drill-device-%s-%d", t.run, n),
		"email": fmt.Sprintf("drill-%d@drills.example", n)}, &out)
	if err != nil || st != http.StatusCreated {
		return "", stackError{fmt.Errorf("demo login: status %d, %v (is ENCORE_DEMO_LOGIN on?)", st, err)}
	}
	return out.Token, nil
}

// section is an event's first seated section with seats available.
func (t *Target) section(ctx context.Context, eventID string) (string, error) {
	var ev struct {
		Sections []struct {
			ID        string `json:"id"`
			Kind      string `json:"kind"`
			Available int    `json:"available"`
		} `json:"sections"`
	}
	st, _, err := t.call(ctx, "GET", t.API+"/v1/events/"+eventID, "", nil, &ev)
	if err != nil || st != http.StatusOK {
		return "", stackError{fmt.Errorf("event %s: status %d, %v", eventID, st, err)}
	}
	for _, s := range ev.Sections {
		if s.Kind == "seated" && s.Available > 0 {
			return s.ID, nil
		}
	}
	return "", stackError{fmt.Errorf("event %s has no seats left for drills", eventID)}
}

// hold places a best-available hold of one seat on the unmetered event.
func (t *Target) hold(ctx context.Context, token string) (int, map[string]any, error) {
	sec, err := t.section(ctx, t.Unmetered)
	if err != nil {
		return 0, nil, err
	}
	var out map[string]any
	st, _, err := t.call(ctx, "POST", t.API+"/v1/holds", token, map[string]any{"event_id": t.Unmetered,
		"section_id": sec, "quantity": 1, "adjacent": true}, &out, "Idempotency-Key", fmt.Sprintf("drill-%s-%d", t.run, t.seq.Add(1)))
	if err == nil && st != http.StatusCreated && st != http.StatusServiceUnavailable {
		err = fmt.Errorf("hold answered %d: %v", st, out)
	}
	return st, out, err
}

// checkout pays a hold with a test card. A 503 is the API's "retry": the
// checkout is asked again under the same Idempotency-Key, as a fan's app
// does, for up to the drill's Limit (a loaded machine's first saga start
// can take that answer).
func (t *Target) checkout(ctx context.Context, token, holdID, pm string) (map[string]any, error) {
	var out map[string]any
	var st int
	_, err := until(ctx, t.Limit, "a checkout answered", func() (bool, error) {
		out = nil
		var err error
		st, _, err = t.call(ctx, "POST", t.API+"/v1/holds/"+holdID+"/checkout", token, map[string]any{"payment_method": pm},
			&out, "Idempotency-Key", "drill-checkout-"+holdID)
		return err == nil && st != http.StatusServiceUnavailable, err
	})
	if err != nil {
		return out, err
	}
	if st != http.StatusOK {
		return out, fmt.Errorf("checkout: status %d: %v", st, out)
	}
	return out, nil
}

// bookingStatus is a booking's status as its fan sees it.
func (t *Target) bookingStatus(ctx context.Context, token, id string) (string, error) {
	var out struct {
		Status string `json:"status"`
	}
	st, _, err := t.call(ctx, "GET", t.API+"/v1/bookings/"+id, token, nil, &out)
	if err != nil {
		return "", err
	}
	if st != http.StatusOK {
		return "", fmt.Errorf("booking %s: status %d", id, st)
	}
	return out.Status, nil
}

// until polls check every 100ms until it is true, for at most limit, and
// returns how long it took.
func until(ctx context.Context, limit time.Duration, what string, check func() (bool, error)) (time.Duration, error) {
	start := time.Now()
	for {
		ok, err := check()
		if ok {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			if err != nil {
				return 0, fmt.Errorf("%s: not within %v (last: %v)", what, limit, err)
			}
			return 0, fmt.Errorf("%s: not within %v", what, limit)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// metric reads one unlabelled sample from the admin listener's /metrics.
func (t *Target) metric(ctx context.Context, name string) (float64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", t.Admin+"/metrics", nil)
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			_, err := fmt.Sscan(v, &f)
			return f, err
		}
	}
	return 0, fmt.Errorf("%s is not on %s/metrics", name, t.Admin)
}
