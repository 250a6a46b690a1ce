package waitingroom

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

// The hub keeps this process's queued sockets. A socket costs one goroutine
// (its reader, which also takes the fan's heartbeats) and no database
// connection. Positions are pushed in batches: the sockets are split in as
// many buckets as there are refreshes per heartbeat interval, and each
// refresh reads one bucket's states in one script call per 500 fans, which
// also renews the heartbeats of the fans whose client is alive. Admissions
// and sell-outs are pushed at once through a Redis notification.

// Close codes the room uses besides normal closure (admitted).
const (
	CloseNotInLine         websocket.StatusCode = 4000 // dropped from the line or admission ended: join again
	CloseAdmittedElsewhere websocket.StatusCode = 4001
	CloseSilent            websocket.StatusCode = 4002 // no heartbeat for too long
)

const buckets = 5

type client struct {
	who      session.Identity
	event    string
	conn     *websocket.Conn
	bucket   int
	lastBeat atomic.Int64 // unix nanoseconds
	closed   atomic.Bool
}

type writeJob struct {
	c       *client
	payload []byte
	close   websocket.StatusCode // non-zero: close after writing
	reason  string
}

// hub holds this process's queue sockets and the goroutines that push to
// them; it reads the fans' states from the line and tells friction their
// heartbeats.
type hub struct {
	line      *Line
	gates     *gateCache
	friction  *friction
	notices   *notices
	m         *metrics
	log       *slog.Logger
	heartbeat time.Duration // the clients' heartbeat interval

	ctx       context.Context // ends with close: every socket and goroutine of the hub
	cancel    context.CancelFunc
	closeOnce sync.Once

	mu      sync.Mutex
	events  map[string]map[string][]*client // event -> user -> sockets
	next    int
	count   atomic.Int64
	writes  chan writeJob
	startMu sync.Once
}

func newHub(line *Line, gates *gateCache, f *friction, n *notices, m *metrics, opts Options) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{line: line, gates: gates, friction: f, notices: n, m: m, log: opts.Log, heartbeat: opts.Heartbeat,
		ctx: ctx, cancel: cancel, events: map[string]map[string][]*client{}, writes: make(chan writeJob, 8192)}
}

func (h *hub) start() {
	h.startMu.Do(func() {
		ctx := h.ctx
		for i := 0; i < 16; i++ {
			go h.writer(ctx)
		}
		go h.refresher(ctx)
		go h.subscriber(ctx)
	})
}

func (h *hub) add(c *client) {
	h.start()
	h.mu.Lock()
	defer h.mu.Unlock()
	c.bucket = h.next % buckets
	h.next++
	users := h.events[c.event]
	if users == nil {
		users = map[string][]*client{}
		h.events[c.event] = users
	}
	users[c.who.UserID] = append(users[c.who.UserID], c)
	h.count.Add(1)
	h.m.socket(1)
}

func (h *hub) remove(c *client) {
	if !c.closed.CompareAndSwap(false, true) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	users := h.events[c.event]
	list := users[c.who.UserID]
	for i, o := range list {
		if o == c {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(users, c.who.UserID)
	} else {
		users[c.who.UserID] = list
	}
	if len(users) == 0 {
		delete(h.events, c.event)
	}
	h.count.Add(-1)
	h.m.socket(-1)
}

// close ends the hub's goroutines and closes every socket it holds.
func (h *hub) close() {
	h.closeOnce.Do(func() {
		h.cancel()
		h.closeAll()
	})
}

func (h *hub) closeAll() {
	h.mu.Lock()
	var all []*client
	for _, users := range h.events {
		for _, list := range users {
			all = append(all, list...)
		}
	}
	h.mu.Unlock()
	for _, c := range all {
		_ = c.conn.CloseNow()
	}
}

// select returns the event's sockets in bucket b (all when b < 0), or those
// of the given users.
func (h *hub) selectClients(event string, b int, users []string) []*client {
	h.mu.Lock()
	defer h.mu.Unlock()
	evs := h.events[event]
	var out []*client
	if users != nil {
		for _, u := range users {
			out = append(out, evs[u]...)
		}
		return out
	}
	for _, list := range evs {
		for _, c := range list {
			if b < 0 || c.bucket == b {
				out = append(out, c)
			}
		}
	}
	return out
}

func (h *hub) eventIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Collect(maps.Keys(h.events))
}

// refresher pushes every socket its state once per heartbeat interval, one
// bucket per step, and closes sockets whose client went silent.
func (h *hub) refresher(ctx context.Context) {
	step := max(h.heartbeat/buckets, 10*time.Millisecond)
	t := time.NewTicker(step)
	defer t.Stop()
	for b := 0; ; b = (b + 1) % buckets {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, ev := range h.eventIDs() {
			h.refresh(ctx, ev, h.selectClients(ev, b, nil))
		}
	}
}

// refresh reads the clients' states and pushes them.
func (h *hub) refresh(ctx context.Context, event string, clients []*client) {
	if len(clients) == 0 {
		return
	}
	g, err := h.gates.get(ctx, event)
	if err != nil {
		return // unknown or the database is down: push nothing, sockets stay
	}
	now := time.Now()
	aliveWithin := 3 * h.heartbeat
	silentAfter := 12 * h.heartbeat
	reqs := make([]statusReq, 0, len(clients))
	live := clients[:0:0]
	for _, c := range clients {
		last := time.Unix(0, c.lastBeat.Load())
		if now.Sub(last) > silentAfter {
			h.enqueue(writeJob{c: c, close: CloseSilent, reason: "no heartbeat"})
			continue
		}
		reqs = append(reqs, statusReq{who: c.who, alive: now.Sub(last) <= aliveWithin})
		live = append(live, c)
	}
	if len(reqs) == 0 {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	res, err := h.line.statuses(sctx, g, reqs)
	cancel()
	if err != nil {
		h.log.Debug("waiting room: refresh sockets", "event", event, "err", err)
		return // fail closed: nobody is told they are admitted
	}
	for i, c := range live {
		h.push(c, res[i].state, res[i].err)
	}
}

func (h *hub) push(c *client, s State, err error) {
	switch {
	case errors.Is(err, ErrNotInLine):
		h.enqueue(writeJob{c: c, close: CloseNotInLine, reason: "not in line; join again"})
	case errors.Is(err, ErrAdmittedElsewhere):
		h.enqueue(writeJob{c: c, close: CloseAdmittedElsewhere, reason: "admitted on another device"})
	case err != nil:
	default:
		payload, _ := json.Marshal(s)
		j := writeJob{c: c, payload: payload}
		if s.Status == StatusAdmitted {
			j.close, j.reason = websocket.StatusNormalClosure, "admitted"
		}
		h.enqueue(j)
	}
}

func (h *hub) enqueue(j writeJob) {
	select {
	case h.writes <- j:
	case <-time.After(time.Second):
		// Writers are saturated; the next refresh pushes again.
	}
}

func (h *hub) writer(ctx context.Context) {
	for {
		var j writeJob
		select {
		case <-ctx.Done():
			return
		case j = <-h.writes:
		}
		if j.c.closed.Load() {
			continue
		}
		if j.payload != nil {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := j.c.conn.Write(wctx, websocket.MessageText, j.payload)
			cancel()
			if err != nil {
				_ = j.c.conn.CloseNow()
				continue
			}
		}
		if j.close != 0 {
			h.remove(j.c)
			go j.c.conn.Close(j.close, j.reason)
		}
	}
}

// subscriber listens for admissions and sell-outs and pushes them at once.
func (h *hub) subscriber(ctx context.Context) {
	ps := h.notices.subscribe(ctx)
	defer ps.Close()
	ch := ps.Channel(redis.WithChannelSize(4096))
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			parts := strings.Split(msg.Payload, "\n")
			if len(parts) < 2 {
				continue
			}
			event, kind := parts[0], parts[1]
			switch kind {
			case "admitted":
				if cs := h.selectClients(event, 0, parts[2:]); len(cs) > 0 {
					h.refresh(ctx, event, cs)
				}
			case "soldout":
				h.refresh(ctx, event, h.selectClients(event, -1, nil))
			}
		}
	}
}

// serve adds an accepted socket, sends its first state, and reads its
// heartbeats until it closes. It returns when the socket is done.
func (h *hub) serve(conn *websocket.Conn, who session.Identity, g store.Gate, first State) {
	c := &client{who: who, event: g.EventID, conn: conn}
	c.lastBeat.Store(time.Now().UnixNano())
	conn.SetReadLimit(1024)
	payload, _ := json.Marshal(first)
	wctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	err := conn.Write(wctx, websocket.MessageText, payload)
	cancel()
	if err != nil {
		_ = conn.CloseNow()
		return
	}
	if first.Status == StatusAdmitted {
		_ = conn.Close(websocket.StatusNormalClosure, "admitted")
		return
	}
	h.add(c)
	defer h.remove(c)
	for {
		_, _, err := conn.Read(h.ctx)
		if err != nil {
			_ = conn.CloseNow()
			return
		}
		// Any message is a heartbeat ({"type":"heartbeat"} by convention).
		now := time.Now()
		c.lastBeat.Store(now.UnixNano())
		h.friction.beat(h.ctx, g.EventID, who.UserID, now)
	}
}
