package seatmap

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"time"

	"github.com/coder/websocket"
)

// MaxSectionsPerViewer bounds the sections one stream may follow.
const MaxSectionsPerViewer = 16

var sectionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$`)

// LiveOptions tune the WebSocket endpoint.
type LiveOptions struct {
	// OriginPatterns are extra origins allowed to open the stream (the
	// request's own host is always allowed).
	OriginPatterns []string
	// WriteTimeout bounds one message's write; a stuck connection is closed.
	WriteTimeout time.Duration
	// KnownSection reports whether the event has the section; a subscription
	// to any other is refused with an error message and subscribes nothing
	// (nil: every well-formed section ID is accepted).
	KnownSection func(sectionID string) bool
	// Pushing reports whether the operator lets the event's maps be pushed
	// (its live_push dial); checked at connect and every second. When it
	// is off the stream sends {"type":"push_off","poll_ms"} and closes with
	// StatusPushOff: the client refreshes by polling every poll_ms and
	// tries the stream again later. Nil: always on.
	Pushing func() bool
	// PollInterval is the poll_ms a client is told while push is off (2s).
	PollInterval time.Duration
}

// StatusPushOff closes a live stream while the operator has turned push off.
const StatusPushOff websocket.StatusCode = 4002

// ServeLive runs one viewer's WebSocket stream for eventID: the client sends
// {"subscribe":"<section_id>"}; the server answers {"type":"reset"} for the
// section once its subscription is live, then {"type":"invalidate"} whenever
// the section changes. A malformed request, a section the event does not
// have (opts.KnownSection) or one section too many is answered
// {"type":"error","section_id","detail"} and the stream stays open with its
// other subscriptions. A viewer that cannot keep up is closed with status
// 1008 and must reconnect (and so reset).
func (h *Hub) ServeLive(w http.ResponseWriter, r *http.Request, eventID string, opts LiveOptions) {
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 5 * time.Second
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		OriginPatterns:  opts.OriginPatterns,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return // Accept has answered the request
	}
	c.SetReadLimit(1024)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if opts.PollInterval <= 0 {
		opts.PollInterval = 2 * time.Second
	}
	pushOff := func() {
		msg, _ := json.Marshal(Message{Type: "push_off", PollMS: opts.PollInterval.Milliseconds()})
		wctx, wcancel := context.WithTimeout(ctx, opts.WriteTimeout)
		_ = c.Write(wctx, websocket.MessageText, msg)
		wcancel()
		_ = c.Close(StatusPushOff, "live push is off: poll")
	}
	if opts.Pushing != nil && !opts.Pushing() {
		pushOff()
		return
	}
	v := h.NewViewer()
	defer h.Leave(v)

	// Reader: subscriptions from the client. Its end (the client closed or
	// sent garbage) ends the stream.
	errs := make(chan []byte, 1)
	go func() {
		defer cancel()
		n := 0
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			var req struct {
				Subscribe string `json:"subscribe"`
			}
			var problem string
			switch {
			case json.Unmarshal(data, &req) != nil || !sectionPattern.MatchString(req.Subscribe):
				problem = `send {"subscribe":"<section_id>"}`
			case opts.KnownSection != nil && !opts.KnownSection(req.Subscribe):
				problem = "no such section in this event"
			case n >= MaxSectionsPerViewer:
				problem = "too many sections on one stream"
			default:
				if err := h.Subscribe(ctx, v, eventID, req.Subscribe); err != nil {
					problem = "subscription failed, reconnect"
				} else {
					n++
				}
			}
			if problem != "" {
				msg, _ := json.Marshal(Message{Type: "error", SectionID: req.Subscribe, Detail: problem})
				select {
				case errs <- msg:
				default:
				}
			}
		}
	}()

	write := func(msg []byte) bool {
		wctx, wcancel := context.WithTimeout(ctx, opts.WriteTimeout)
		defer wcancel()
		return c.Write(wctx, websocket.MessageText, msg) == nil
	}
	var dial <-chan time.Time
	if opts.Pushing != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		dial = t.C
	}
	for {
		select {
		case <-dial:
			if !opts.Pushing() {
				pushOff()
				return
			}
		case msg := <-v.C:
			if !write(msg) {
				return
			}
		case msg := <-errs:
			if !write(msg) {
				return
			}
		case <-v.Done:
			_ = c.Close(websocket.StatusPolicyViolation, "too slow: reconnect and reset")
			return
		case <-ctx.Done():
			_ = c.Close(websocket.StatusNormalClosure, "")
			return
		}
	}
}
