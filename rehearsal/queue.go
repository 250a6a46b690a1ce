package rehearsal

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/encore-tickets/encore/internal/ctxsleep"
)

// queueState is what the waiting room answers and pushes: waiting with a
// position, admitted with a pass, or sold out.
type queueState struct {
	Status           string     `json:"status"`
	Position         int64      `json:"position"`
	Pass             string     `json:"pass"`
	OpensAt          *time.Time `json:"opens_at"`
	HeartbeatSeconds int        `json:"heartbeat_seconds"`
}

// challenge is the proof of work a risky join is asked for: a solution
// whose SHA-256 of token ":" solution starts with difficulty zero bits.
type challenge struct {
	Token      string `json:"token"`
	Difficulty int    `json:"difficulty"`
}

// solve counts in base 36, as the room's own solver and the web app do,
// until a solution is found, ctx ends, or 2^(difficulty+6) tries (a
// difficulty no fan could pay) have failed.
func solve(ctx context.Context, c challenge) (string, bool) {
	limit := uint64(1) << min(c.Difficulty+6, 40)
	for i := uint64(0); i < limit; i++ {
		if i%65536 == 0 && ctx.Err() != nil {
			return "", false
		}
		s := strconv.FormatUint(i, 36)
		h := sha256.Sum256([]byte(c.Token + ":" + s))
		if leadingZeroBits(h[:]) >= c.Difficulty {
			return s, true
		}
	}
	return "", false
}

func leadingZeroBits(h []byte) int {
	n := 0
	for _, b := range h {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// queue takes the fan through the waiting room until admitted (the pass),
// sold out, or the sale's end: join (solving a proof of work when asked),
// then follow the queue socket with jittered heartbeats; when the socket is
// refused or drops, poll and reconnect with backoff, as the web app does.
func (f *fan) queue(ctx context.Context) (pass string, soldOut bool) {
	f.run.rec.n.waiting.Add(1)
	defer f.run.rec.n.waiting.Add(-1)
	st, ok := f.join(ctx)
	backoff, overBudget := time.Second, false
	for ok && ctx.Err() == nil {
		if done, pass, soldOut := f.apply(st); done {
			return pass, soldOut
		}
		if f.run.takeSocket() {
			next, live, why := f.followQueue(ctx)
			f.run.giveSocket()
			if next.Status != "" {
				st = next
				if live {
					backoff = time.Second
				}
				continue
			}
			if ctx.Err() != nil {
				return "", false
			}
			if why == websocket.StatusCode(4000) || why == websocket.StatusCode(4002) {
				st, ok = f.join(ctx) // dropped from the line: join again (the place is kept while alive)
				continue
			}
			f.run.rec.n.socketFallbacks.Add(1)
		} else if !overBudget {
			overBudget = true // counted once a fan
			f.run.rec.n.socketsOverBudget.Add(1)
		}
		// Refused, dropped, or no file left for a socket here: poll until
		// the backoff has passed, then try the socket again.
		until := time.Now().Add(jitter(f.r, backoff, 0.5, 1))
		backoff = min(2*backoff, 30*time.Second)
		for time.Now().Before(until) && ctx.Err() == nil {
			if !ctxsleep.Sleep(ctx, jitter(f.r, time.Duration(f.heartbeat)*time.Second, 0.7, 1)) {
				return "", false
			}
			a := f.run.edge.api(ctx, f.client, "queue-poll", http.MethodGet, f.queuePath(), f.token, nil)
			if !a.ok() || a.decode(&st) != nil {
				continue
			}
			if done, pass, soldOut := f.apply(st); done {
				return pass, soldOut
			}
		}
	}
	return "", false
}

// join is POST /queue, with the proof of work when the room asks for one,
// retried after rate limits and unavailability.
func (f *fan) join(ctx context.Context) (queueState, bool) {
	var headers []string
	for attempt := 0; attempt < 6 && ctx.Err() == nil; attempt++ {
		a := f.run.edge.api(ctx, f.client, "join", http.MethodPost, f.queuePath(), f.token, struct{}{},
			append([]string{"Idempotency-Key", f.key("join", attempt)}, headers...)...)
		switch {
		case a.ok():
			var st queueState
			if a.decode(&st) == nil {
				return st, true
			}
			return queueState{}, false
		case a.name() == "challenge-required" && a.problem.Challenge != nil:
			sol, ok := solve(ctx, *a.problem.Challenge)
			if !ok {
				return queueState{}, false
			}
			f.run.rec.n.proofsOfWork.Add(1)
			headers = []string{"X-Queue-Challenge", a.problem.Challenge.Token, "X-Queue-Solution", sol}
		case a.status == 0, a.status == http.StatusTooManyRequests, a.status == http.StatusServiceUnavailable:
			if !ctxsleep.Sleep(ctx, a.retryAfter(jitter(f.r, time.Second, 1, 2))) {
				return queueState{}, false
			}
		default:
			return queueState{}, false
		}
	}
	return queueState{}, false
}

// apply takes a state in: the fan's place once the sale is open, and
// whether the queue is over for this fan.
func (f *fan) apply(st queueState) (done bool, pass string, soldOut bool) {
	if st.HeartbeatSeconds > 0 {
		f.heartbeat = st.HeartbeatSeconds
	}
	switch st.Status {
	case "admitted", "offered":
		if f.place != f.place { // NaN: admitted before any open-sale position was seen
			f.place = float64(f.run.rec.n.admitted.Load() + 1)
		}
		return true, st.Pass, false
	case "sold_out":
		f.run.rec.sawSoldOut(f.run.rec.since(time.Now()))
		return true, "", true
	case "waiting":
		// Before opening, places are drawn at opening: only a position seen
		// in the open sale is the fan's place. The absolute place is those
		// admitted so far plus the position.
		if f.place != f.place && st.OpensAt == nil {
			f.place = float64(f.run.rec.n.admitted.Load() + st.Position)
		}
		return false, "", false
	}
	return true, "", false // an answer this fan does not understand: leave
}

// followQueue opens the queue socket and reads states until one ends the
// queue for the fan or the socket closes. live says the socket opened;
// why is the close code when it closed without an ending state.
func (f *fan) followQueue(ctx context.Context) (st queueState, live bool, why websocket.StatusCode) {
	wsURL := "ws" + strings.TrimPrefix(f.run.edge.base, "http") + f.queuePath() + "/ws"
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, resp, err := websocket.Dial(dctx, wsURL, &websocket.DialOptions{HTTPClient: f.client,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + f.token}}})
	cancel()
	if err != nil {
		name := "no-answer"
		if resp != nil {
			name = "http-" + strconv.Itoa(resp.StatusCode)
			if resp.StatusCode == http.StatusTooManyRequests {
				name = "rate-limited"
			}
		}
		if ctx.Err() == nil {
			f.run.rec.failure("queue-socket", name)
		}
		return queueState{}, false, -1
	}
	defer conn.CloseNow()

	// The socket's own context, ended when the sale's ends. Not a child of
	// the sale's context: the socket library registers a callback on the
	// context of every read, and fifteen thousand callbacks on one context
	// contend for its lock for minutes when it ends. A goroutine waiting on
	// the sale's Done channel costs nothing of the kind.
	sctx, endSocket := context.WithCancel(context.Background())
	defer endSocket()
	go func() {
		select {
		case <-ctx.Done():
			endSocket()
		case <-sctx.Done():
		}
	}()

	// Heartbeats at 70-100% of the interval the room asks for: machine-
	// regular beats are a bot's, and the room flags them. The beating
	// goroutine has its own random source and interval.
	hctx, stop := context.WithCancel(sctx)
	defer stop()
	hr, every := rand.New(rand.NewPCG(f.r.Uint64(), f.r.Uint64())), time.Duration(f.heartbeat)*time.Second
	go func() {
		for {
			if !ctxsleep.Sleep(hctx, jitter(hr, every, 0.7, 1)) {
				return
			}
			wctx, cancel := context.WithTimeout(hctx, 5*time.Second)
			err := conn.Write(wctx, websocket.MessageText, []byte(`{"type":"heartbeat"}`))
			cancel()
			if err != nil {
				return
			}
		}
	}()
	for {
		_, msg, err := conn.Read(sctx)
		if err != nil {
			return queueState{}, true, websocket.CloseStatus(err)
		}
		var next queueState
		if json.Unmarshal(msg, &next) != nil {
			continue
		}
		if done, _, _ := f.peek(next); done {
			stop()
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return next, true, 0
		}
		f.apply(next) // a new position
	}
}

// peek says whether a state ends the queue, without taking it in.
func (f *fan) peek(st queueState) (bool, string, bool) {
	return st.Status != "waiting", st.Pass, st.Status == "sold_out"
}

func (f *fan) queuePath() string { return "/v1/events/" + f.run.event.ID + "/queue" }
