package psp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Sign returns the Stripe-Signature header value for payload signed with
// secret at time t: "t=<unix>,v1=<hex HMAC-SHA256(secret, "<unix>.<payload>")>",
// exactly what stripe-go's webhook.ConstructEvent verifies.
func Sign(payload []byte, secret string, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(payload)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// dispatchMinGap is the least time between two scans of the delivery queues.
const dispatchMinGap = 2 * time.Millisecond

// maxRetainedEvents bounds the events kept for GET /v1/events; pending
// deliveries carry their own payload, so nothing undelivered is lost.
const maxRetainedEvents = 10000

// event is a stored event; Payload is the exact JSON delivered.
type event struct {
	ID      string `json:"id"`
	Seq     int64  `json:"seq"`
	Type    string `json:"type"`
	Key     string `json:"key"` // the PaymentIntent the event belongs to
	Created int64  `json:"created"`
	Payload string `json:"payload"`
}

// delivery is one pending webhook delivery of an event.
type delivery struct {
	ID          string    `json:"id"`
	Seq         int64     `json:"seq"`
	EventID     string    `json:"event_id"`
	EventType   string    `json:"event_type"`
	Key         string    `json:"key"`
	Payload     string    `json:"payload"`
	NextAttempt time.Time `json:"next_attempt"`
	Attempts    int       `json:"attempts"`
	Held        bool      `json:"held,omitempty"` // out-of-order fault: waits for a later event of the same key
	HeldUntil   time.Time `json:"held_until,omitempty"`
	Duplicate   bool      `json:"duplicate,omitempty"`
}

type jsonEventData struct {
	Object any `json:"object"`
}

type jsonEventRequest struct {
	ID             *string `json:"id"`
	IdempotencyKey *string `json:"idempotency_key"`
}

type jsonEvent struct {
	ID              string           `json:"id"`
	Object          string           `json:"object"`
	APIVersion      string           `json:"api_version"`
	Created         int64            `json:"created"`
	Data            jsonEventData    `json:"data"`
	Livemode        bool             `json:"livemode"`
	PendingWebhooks int              `json:"pending_webhooks"`
	Request         jsonEventRequest `json:"request"`
	Type            string           `json:"type"`
}

func (s *Server) eventEnabled(typ string) bool {
	if len(s.cfg.EnabledEvents) == 0 {
		return true
	}
	for _, t := range s.cfg.EnabledEvents {
		if t == "*" || t == typ {
			return true
		}
	}
	return false
}

// emitLocked records an event about object obj of intent key and queues its
// delivery with the faults that apply.
func (s *Server) emitLocked(ec *emitCtx, typ, key string, obj any) {
	deliver := s.cfg.WebhookURL != "" && s.eventEnabled(typ)
	pending := 0
	if deliver {
		pending = 1
	}
	ev := &event{ID: newID("evt"), Seq: s.nextSeq(), Type: typ, Key: key, Created: s.now().Unix()}
	je := jsonEvent{
		ID:              ev.ID,
		Object:          "event",
		APIVersion:      APIVersion,
		Created:         ev.Created,
		Data:            jsonEventData{Object: obj},
		PendingWebhooks: pending,
		Request:         jsonEventRequest{ID: strPtr(ec.reqID), IdempotencyKey: strPtr(ec.idemKey)},
		Type:            typ,
	}
	ev.Payload = string(prettyJSON(je))
	s.addEventLocked(ev)
	s.logRec(record{Op: opPutEvent, Event: ev})
	first := ec.n == 0
	ec.n++
	if !deliver {
		return
	}
	f, now := s.cfg.Faults, s.switches.load()
	delay := max(f.WebhookDelay, now.webhookDelay())
	if ec.faults.hasDelay {
		delay = ec.faults.delay
	}
	at := time.Now()
	d := &delivery{
		ID:          newID("whd"),
		Seq:         s.nextSeq(),
		EventID:     ev.ID,
		EventType:   typ,
		Key:         key,
		Payload:     ev.Payload,
		NextAttempt: at.Add(delay),
	}
	// Hold this event back so that the next one overtakes it, unless the
	// previous event of the intent is already held (then this one is the
	// overtaker: with a rate of 1, events arrive in swapped pairs).
	q := s.queues[key]
	prevHeld := len(q) > 0 && q[len(q)-1].Held
	if !prevHeld && ((ec.faults.outOfOrder && first) || s.chance(f.OutOfOrderWebhookRate) || s.chance(now.OutOfOrderWebhookRate)) {
		d.Held = true
		d.HeldUntil = at.Add(delay + f.OutOfOrderHold)
	}
	s.enqueueLocked(d)
	if ec.faults.duplicate || s.chance(f.DuplicateWebhookRate) || s.chance(now.DuplicateWebhookRate) {
		dup := *d
		dup.ID = newID("whd")
		dup.Seq = s.nextSeq()
		dup.Held = false
		dup.HeldUntil = time.Time{}
		dup.Duplicate = true
		s.enqueueLocked(&dup)
	}
	s.log.Debug("event", "id", ev.ID, "type", typ, "intent", key, "held", d.Held, "delay", delay)
}

func (s *Server) addEventLocked(ev *event) {
	if old := s.eventByID[ev.ID]; old != nil {
		*old = *ev
		return
	}
	s.events = append(s.events, ev)
	s.eventByID[ev.ID] = ev
	if over := len(s.events) - maxRetainedEvents; over > 0 {
		for _, old := range s.events[:over] {
			delete(s.eventByID, old.ID)
		}
		s.events = append([]*event(nil), s.events[over:]...)
	}
}

func (s *Server) enqueueLocked(d *delivery) {
	s.insertDeliveryLocked(d)
	s.logRec(record{Op: opPutDelivery, Delivery: d})
	s.kick()
}

// insertDeliveryLocked adds or replaces d in its key's queue, by Seq.
func (s *Server) insertDeliveryLocked(d *delivery) {
	q := s.queues[d.Key]
	for i, x := range q {
		if x.ID == d.ID {
			q[i] = d
			return
		}
	}
	i := len(q)
	for i > 0 && q[i-1].Seq > d.Seq {
		i--
	}
	q = append(q, nil)
	copy(q[i+1:], q[i:])
	q[i] = d
	s.queues[d.Key] = q
	s.deliveryN++
}

func (s *Server) removeDeliveryLocked(d *delivery) {
	q := s.queues[d.Key]
	for i, x := range q {
		if x.ID == d.ID {
			q = append(q[:i], q[i+1:]...)
			s.deliveryN--
			break
		}
	}
	if len(q) == 0 {
		delete(s.queues, d.Key)
	} else {
		s.queues[d.Key] = q
	}
}

// kick wakes the dispatcher.
func (s *Server) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// PendingDeliveries reports how many webhook deliveries are queued.
func (s *Server) PendingDeliveries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deliveryN
}

func (s *Server) startDispatcher() {
	if s.cfg.WebhookURL == "" {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-s.closing
		cancel()
	}()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.dispatch(ctx)
	}()
}

// pickLocked chooses the next delivery of queue q that may be attempted at
// now, or reports when to look again. Deliveries of a key go one at a time
// in order; a held (out-of-order) delivery lets later ones overtake it.
func pickLocked(q []*delivery, now time.Time) (*delivery, time.Time) {
	var wait time.Time
	soonest := func(t time.Time) {
		if wait.IsZero() || t.Before(wait) {
			wait = t
		}
	}
	for _, d := range q {
		if d.Held && now.Before(d.HeldUntil) {
			soonest(d.HeldUntil)
			continue
		}
		if now.Before(d.NextAttempt) {
			soonest(d.NextAttempt)
			return nil, wait
		}
		return d, time.Time{}
	}
	return nil, wait
}

func (s *Server) dispatch(ctx context.Context) {
	sem := make(chan struct{}, s.cfg.Delivery.Concurrency)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var lastScan time.Time
	for {
		// Each pass scans every queue: coalesce bursts of wake-ups so a
		// large backlog does not turn into a busy loop.
		if gap := dispatchMinGap - time.Since(lastScan); gap > 0 {
			timer.Reset(gap)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		lastScan = time.Now()
		s.mu.Lock()
		now := time.Now()
		var next time.Time
		for key, q := range s.queues {
			if s.inflight[key] {
				continue
			}
			d, wait := pickLocked(q, now)
			if d == nil {
				if !wait.IsZero() && (next.IsZero() || wait.Before(next)) {
					next = wait
				}
				continue
			}
			select {
			case sem <- struct{}{}:
			default:
				continue // at capacity: an attempt finishing wakes us
			}
			s.inflight[key] = true
			s.wg.Add(1)
			go func(d *delivery) {
				defer s.wg.Done()
				defer func() { <-sem }()
				s.attempt(ctx, d)
			}(d)
		}
		s.mu.Unlock()
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// attempt POSTs one delivery and records the outcome.
func (s *Server) attempt(ctx context.Context, d *delivery) {
	status, err := s.post(ctx, []byte(d.Payload))
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.kick()
	delete(s.inflight, d.Key)
	if ctx.Err() != nil {
		return // shutting down: the delivery stays pending for the next start
	}
	if err == nil && status >= 200 && status < 300 {
		// Held deliveries that this one overtook may go now.
		for _, x := range s.queues[d.Key] {
			if x.Seq < d.Seq && x.Held {
				x.Held = false
				s.logRec(record{Op: opPutDelivery, Delivery: x})
			}
		}
		s.removeDeliveryLocked(d)
		s.logRec(record{Op: opDelDelivery, ID: d.ID})
		s.log.Debug("webhook delivered", "event", d.EventID, "type", d.EventType, "attempt", d.Attempts+1)
		s.commitLocked()
		return
	}
	d.Attempts++
	if d.Attempts >= s.cfg.Delivery.MaxAttempts {
		s.removeDeliveryLocked(d)
		s.logRec(record{Op: opDelDelivery, ID: d.ID})
		s.log.Warn("webhook delivery abandoned", "event", d.EventID, "type", d.EventType, "attempts", d.Attempts, "status", status, "err", err)
		s.commitLocked()
		return
	}
	backoff := s.cfg.Delivery.InitialBackoff
	for i := 1; i < d.Attempts && backoff < s.cfg.Delivery.MaxBackoff; i++ {
		backoff *= 2
	}
	backoff = min(backoff, s.cfg.Delivery.MaxBackoff)
	d.NextAttempt = time.Now().Add(backoff)
	s.logRec(record{Op: opPutDelivery, Delivery: d})
	s.log.Info("webhook delivery failed; will retry", "event", d.EventID, "type", d.EventType, "attempt", d.Attempts, "status", status, "err", err, "retry_in", backoff)
	s.commitLocked()
}

func (s *Server) post(ctx context.Context, payload []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Delivery.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.WebhookURL, bytes.NewReader(payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "EncorePaymentSandbox/1.0 (Stripe-compatible webhooks)")
	req.Header.Set("Stripe-Signature", Sign(payload, s.cfg.WebhookSecret, s.now()))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}
