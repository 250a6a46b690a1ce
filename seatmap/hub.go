package seatmap

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// QueueSize is how many messages wait for one viewer before it counts as
// slow and is disconnected.
const QueueSize = 8

// HubOptions tune a hub; zero values take the defaults.
type HubOptions struct {
	// MinInterval coalesces a section's invalidations: at most one is
	// forwarded per interval, the last one always (trailing edge). An
	// invalidation carries no data, so nothing is lost; a flash sale's
	// hundreds of holds a second then cost each viewer a few messages a
	// second. Negative disables coalescing. Default 100ms.
	MinInterval time.Duration
	// ReadyTimeout bounds the wait for Redis to confirm a new subscription.
	ReadyTimeout time.Duration
	// MaxWatched bounds the sections a hub subscribes to for the local
	// snapshot cache alone (Watch), whose section IDs come from request
	// paths: past it Watch refuses and the snapshot is simply not kept in
	// memory. Every subscribed section counts; a viewer's subscription is
	// never refused (viewers are bounded by the socket cap). Default 10,000.
	MaxWatched int
	Log        *slog.Logger
}

// Hub fans invalidations out to viewers. Per process it holds one Pub/Sub
// connection and on it one subscription per section that has viewers,
// however many they are; the last viewer to leave a section unsubscribes it.
// Each viewer has a queue of QueueSize messages; a viewer whose queue is full
// is disconnected and counted, never waited for.
type Hub struct {
	rdb    redis.UniversalClient
	prefix string
	opts   HubOptions

	mu     sync.Mutex
	ps     *redis.PubSub
	topics map[string]*topic // by channel
	closed bool
	slowN  atomic.Int64

	running   atomic.Bool
	onChanged func(channel string) // OnChange; called with mu held

	viewers  prometheus.Gauge
	sections prometheus.Gauge
	slow     prometheus.Counter
	received prometheus.Counter
	sent     prometheus.Counter
}

type topic struct {
	channel   string
	reset     []byte
	invalid   []byte
	viewers   map[*Viewer]struct{}
	ready     chan struct{} // closed when Redis confirms the subscription
	confirmed bool
	last      time.Time // last forwarded invalidation
	pending   bool      // a trailing invalidation is scheduled
	watched   time.Time // kept subscribed without viewers until then (Watch)
}

// NewHub builds a hub. Run must be running for messages to flow.
func NewHub(rdb redis.UniversalClient, prefix string, opts HubOptions) *Hub {
	if opts.MinInterval == 0 {
		opts.MinInterval = 100 * time.Millisecond
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 2 * time.Second
	}
	if opts.MaxWatched <= 0 {
		opts.MaxWatched = 10_000
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	h := &Hub{rdb: rdb, prefix: prefix, opts: opts, topics: map[string]*topic{}}
	h.viewers = prometheus.NewGauge(prometheus.GaugeOpts{Name: "encore_seatmap_viewers",
		Help: "Live seat-map viewers connected to this process."})
	h.sections = prometheus.NewGauge(prometheus.GaugeOpts{Name: "encore_seatmap_upstream_subscriptions",
		Help: "Sections this process subscribes to upstream (one per section with viewers)."})
	h.slow = prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_seatmap_slow_viewers_total",
		Help: "Viewers disconnected because their queue was full."})
	h.received = prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_seatmap_invalidations_received_total",
		Help: "Invalidations received from upstream."})
	h.sent = prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_seatmap_messages_queued_total",
		Help: "Messages queued to viewers."})
	return h
}

// Register adds the hub's metrics to reg.
func (h *Hub) Register(reg prometheus.Registerer) {
	reg.MustRegister(h.viewers, h.sections, h.slow, h.received, h.sent)
}

// Viewer is one live stream: a bounded queue the hub fills and the
// connection drains.
type Viewer struct {
	C    chan []byte   // messages to send, in order
	Done chan struct{} // closed when the hub drops the viewer (too slow)

	once   sync.Once
	topics map[string]*topic // guarded by the hub's mu
}

func (v *Viewer) drop() { v.once.Do(func() { close(v.Done) }) }

// Dropped reports whether the hub disconnected the viewer.
func (v *Viewer) Dropped() bool {
	select {
	case <-v.Done:
		return true
	default:
		return false
	}
}

// NewViewer registers a viewer with no sections yet.
func (h *Hub) NewViewer() *Viewer {
	h.viewers.Inc()
	return &Viewer{C: make(chan []byte, QueueSize), Done: make(chan struct{}), topics: map[string]*topic{}}
}

// ErrClosed is returned once the hub has stopped.
var ErrClosed = errors.New("seatmap: hub closed")

// Subscribe adds v to a section's viewers and, once the upstream
// subscription is confirmed, queues a reset for it: the viewer fetches a
// fresh snapshot and from then on hears every invalidation.
func (h *Hub) Subscribe(ctx context.Context, v *Viewer, eventID, sectionID string) error {
	t, err := h.subscribed(ctx, eventID, sectionID, false, func(t *topic) {
		t.viewers[v] = struct{}{}
		v.topics[t.channel] = t
	})
	if err != nil {
		return err
	}
	if err := h.awaitReady(ctx, t); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, still := t.viewers[v]; still {
		h.deliver(v, t.reset)
	}
	return nil
}

// subscribed finds or subscribes a section's topic and calls with on it,
// both under h.mu, so that what with records is in place before the first
// message is delivered. It refuses once the hub is closed, and when bounded,
// a new topic past HubOptions.MaxWatched.
func (h *Hub) subscribed(ctx context.Context, eventID, sectionID string, bounded bool, with func(*topic)) (*topic, error) {
	ch := channelName(h.prefix, eventID, sectionID)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if bounded && h.topics[ch] == nil && len(h.topics) >= h.opts.MaxWatched {
		return nil, ErrTooManyWatched
	}
	t, err := h.topic(ctx, ch, eventID, sectionID)
	if err != nil {
		return nil, err
	}
	with(t)
	return t, nil
}

// awaitReady waits, without h.mu, until Redis confirms t's subscription.
func (h *Hub) awaitReady(ctx context.Context, t *topic) error {
	select {
	case <-t.ready:
		return nil
	case <-time.After(h.opts.ReadyTimeout):
		return errors.New("seatmap: upstream subscription not confirmed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// topic finds or subscribes a section; h.mu is held.
func (h *Hub) topic(ctx context.Context, ch, eventID, sectionID string) (*topic, error) {
	if t := h.topics[ch]; t != nil {
		return t, nil
	}
	reset, _ := json.Marshal(Message{Type: "reset", EventID: eventID, SectionID: sectionID})
	inv, _ := json.Marshal(Message{Type: "invalidate", EventID: eventID, SectionID: sectionID})
	t := &topic{channel: ch, reset: reset, invalid: inv, viewers: map[*Viewer]struct{}{}, ready: make(chan struct{})}
	if err := h.pubsub().Subscribe(ctx, ch); err != nil {
		return nil, err
	}
	h.topics[ch] = t
	h.sections.Inc()
	return t, nil
}

// ErrTooManyWatched: Watch would pass HubOptions.MaxWatched.
var ErrTooManyWatched = errors.New("seatmap: too many watched sections")

// ErrNotRunning: the hub's Run loop is not running, so nothing would be
// heard.
var ErrNotRunning = errors.New("seatmap: hub not running")

// Watch keeps a section subscribed until the given time even without
// viewers, and returns once the subscription is confirmed: from then on
// OnChange hears every change of the section. The process-local snapshot
// cache uses it (Cache.UseLocal).
func (h *Hub) Watch(ctx context.Context, eventID, sectionID string, until time.Time) error {
	if !h.running.Load() {
		return ErrNotRunning
	}
	t, err := h.subscribed(ctx, eventID, sectionID, true, func(t *topic) {
		if until.After(t.watched) {
			t.watched = until
		}
	})
	if err != nil {
		return err
	}
	return h.awaitReady(ctx, t)
}

// OnChange sets a function the hub calls with a section's channel the
// moment it hears an invalidation (before coalescing and before viewers
// hear), when a lost connection was re-established, and when it stops
// watching the section. Set it before Run.
func (h *Hub) OnChange(f func(channel string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onChanged = f
}

func (h *Hub) changed(ch string) {
	if h.onChanged != nil {
		h.onChanged(ch)
	}
}

// unsubscribe drops a topic; h.mu is held.
func (h *Hub) unsubscribe(ch string) {
	delete(h.topics, ch)
	h.sections.Dec()
	h.changed(ch)
	if h.ps != nil && !h.closed {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := h.ps.Unsubscribe(ctx, ch); err != nil {
			h.opts.Log.Warn("seatmap: unsubscribe", "channel", ch, "err", err)
		}
		cancel()
	}
}

// expireWatches unsubscribes sections with neither viewers nor a watch.
func (h *Hub) expireWatches(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch, t := range h.topics {
		if len(t.viewers) == 0 && now.After(t.watched) {
			h.unsubscribe(ch)
		}
	}
}

// pubsub returns the hub's one Pub/Sub connection; h.mu is held.
func (h *Hub) pubsub() *redis.PubSub {
	if h.ps == nil {
		h.ps = h.rdb.Subscribe(context.Background())
	}
	return h.ps
}

// Leave removes v from every section; a section left without viewers is
// unsubscribed upstream.
func (h *Hub) Leave(v *Viewer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch, t := range v.topics {
		delete(t.viewers, v)
		delete(v.topics, ch)
		if len(t.viewers) == 0 && h.topics[ch] == t && time.Now().After(t.watched) {
			h.unsubscribe(ch)
		}
	}
	h.viewers.Dec()
	v.drop()
}

// SlowViewers is how many viewers were disconnected for a full queue.
func (h *Hub) SlowViewers() int64 { return h.slowN.Load() }

// Sections is how many sections the hub subscribes to upstream.
func (h *Hub) Sections() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.topics)
}

// deliver queues msg for v without ever blocking; h.mu is held.
func (h *Hub) deliver(v *Viewer, msg []byte) {
	if v.Dropped() {
		return
	}
	select {
	case v.C <- msg:
		h.sent.Inc()
	default:
		v.drop()
		h.slow.Inc()
		h.slowN.Add(1)
	}
}

func (h *Hub) broadcast(t *topic, msg []byte) {
	for v := range t.viewers {
		h.deliver(v, msg)
	}
}

// Run reads the upstream subscription and dispatches until ctx ends.
func (h *Hub) Run(ctx context.Context) {
	h.mu.Lock()
	ps := h.pubsub()
	h.mu.Unlock()
	in := ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
	h.running.Store(true)
	defer func() {
		h.running.Store(false)
		h.mu.Lock()
		h.closed = true
		for ch := range h.topics {
			h.changed(ch) // nothing is heard any more
		}
		h.mu.Unlock()
		_ = ps.Close()
	}()
	janitor := time.NewTicker(time.Second)
	defer janitor.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-janitor.C:
			h.expireWatches(now)
		case m, ok := <-in:
			if !ok {
				return
			}
			switch m := m.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" {
					h.confirmed(m.Channel)
				}
			case *redis.Message:
				h.received.Inc()
				h.invalidate(m.Channel)
			}
		}
	}
}

// confirmed handles Redis's confirmation of a subscription: the first one
// releases the waiting subscribers; a later one means the connection was
// re-established and invalidations may have been lost, so every viewer of
// the section is told to reset.
func (h *Hub) confirmed(ch string) {
	h.onTopic(ch, func(t *topic) {
		if !t.confirmed {
			t.confirmed = true
			close(t.ready)
			return
		}
		h.changed(ch)
		h.broadcast(t, t.reset)
	})
}

// onTopic runs fn on the channel's topic under h.mu. A message for a channel
// the hub no longer subscribes is late and ignored.
func (h *Hub) onTopic(ch string, fn func(t *topic)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[ch]; t != nil {
		fn(t)
	}
}

func (h *Hub) invalidate(ch string) {
	h.onTopic(ch, func(t *topic) {
		h.changed(ch) // never coalesced: the local cache drops its copy at once
		if t.pending {
			return
		}
		now := time.Now()
		if h.opts.MinInterval > 0 {
			if wait := t.last.Add(h.opts.MinInterval).Sub(now); wait > 0 {
				t.pending = true
				time.AfterFunc(wait, func() {
					h.mu.Lock()
					defer h.mu.Unlock()
					t.pending = false
					t.last = time.Now()
					if h.topics[ch] == t {
						h.broadcast(t, t.invalid)
					}
				})
				return
			}
		}
		t.last = now
		h.broadcast(t, t.invalid)
	})
}
