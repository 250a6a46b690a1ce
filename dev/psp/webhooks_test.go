package psp

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
)

func webhookEnv(t *testing.T, cfg Config) (*env, *receiver) {
	t.Helper()
	if cfg.WebhookSecret == "" {
		cfg.WebhookSecret = "whsec_test_" + t.Name()
	}
	rc := newReceiver(t, cfg.WebhookSecret)
	cfg.WebhookURL = rc.URL()
	return newEnv(t, cfg, 0), rc
}

func confirmedManual(t *testing.T, e *env, amount int64, hdr string) *stripe.PaymentIntent {
	t.Helper()
	ctx := ctxT(t)
	pi := e.create(t, ctx, manualIntent(amount, map[string]string{"booking_id": "b-" + t.Name()}))
	cp := &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")}
	if hdr != "" {
		cp.Headers = faultHeader(hdr)
	}
	pi, err := e.sc.V1PaymentIntents.Confirm(ctx, pi.ID, cp)
	require.NoError(t, err)
	return pi
}

func TestWebhookDeliveryVerifiesWithStripeGo(t *testing.T) {
	t.Parallel()
	e, rc := webhookEnv(t, Config{})
	ctx := ctxT(t)

	p := manualIntent(4500, map[string]string{"booking_id": "b-wh"})
	pi := e.create(t, ctx, p)
	cp := &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")}
	cp.IdempotencyKey = stripe.String("b-wh:authorise")
	_, err := e.sc.V1PaymentIntents.Confirm(ctx, pi.ID, cp)
	require.NoError(t, err)
	_, err = e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
	require.NoError(t, err)
	_, err = e.sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID), Amount: stripe.Int64(500)})
	require.NoError(t, err)

	eventually(t, func() bool { return len(rc.forIntent(pi.ID)) == 4 }, "four events")
	got := rc.forIntent(pi.ID)
	require.Equal(t, []string{
		"payment_intent.amount_capturable_updated",
		"payment_intent.succeeded",
		"refund.created",
		"charge.refunded",
	}, types(got))
	rc.requireClean()

	auth := got[0].Event
	require.Equal(t, stripe.APIVersion, auth.APIVersion)
	require.Equal(t, "event", auth.Object)
	require.True(t, len(auth.ID) > 4 && auth.ID[:4] == "evt_")
	require.NotZero(t, auth.Created)
	require.False(t, auth.Livemode)
	require.Equal(t, "b-wh:authorise", auth.Request.IdempotencyKey)
	var authPI stripe.PaymentIntent
	require.NoError(t, json.Unmarshal(auth.Data.Raw, &authPI))
	require.Equal(t, pi.ID, authPI.ID)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, authPI.Status)
	require.EqualValues(t, 4500, authPI.AmountCapturable)
	require.Equal(t, stripe.Currency("eur"), authPI.Currency)
	require.Equal(t, "b-wh", authPI.Metadata["booking_id"])

	var captured stripe.PaymentIntent
	require.NoError(t, json.Unmarshal(got[1].Event.Data.Raw, &captured))
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, captured.Status)
	require.EqualValues(t, 4500, captured.AmountReceived)

	var rf stripe.Refund
	require.NoError(t, json.Unmarshal(got[2].Event.Data.Raw, &rf))
	require.EqualValues(t, 500, rf.Amount)
	var ch stripe.Charge
	require.NoError(t, json.Unmarshal(got[3].Event.Data.Raw, &ch))
	require.EqualValues(t, 500, ch.AmountRefunded)
	require.False(t, ch.Refunded)

	// Decline and cancel events.
	d := e.create(t, ctx, manualIntent(100, nil))
	_, err = e.sc.V1PaymentIntents.Confirm(ctx, d.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_chargeDeclinedInsufficientFunds")})
	require.Error(t, err)
	_, err = e.sc.V1PaymentIntents.Cancel(ctx, d.ID, nil)
	require.NoError(t, err)
	eventually(t, func() bool { return len(rc.forIntent(d.ID)) == 2 }, "decline and cancel events")
	got = rc.forIntent(d.ID)
	require.Equal(t, []string{"payment_intent.payment_failed", "payment_intent.canceled"}, types(got))
	var failed stripe.PaymentIntent
	require.NoError(t, json.Unmarshal(got[0].Event.Data.Raw, &failed))
	require.Equal(t, stripe.DeclineCodeInsufficientFunds, failed.LastPaymentError.DeclineCode)

	// The events are also retrievable through the API.
	ev, err := e.sc.V1Events.Retrieve(ctx, auth.ID, nil)
	require.NoError(t, err)
	require.Equal(t, auth.Type, ev.Type)
	n := 0
	for x, err := range e.sc.V1Events.List(ctx, &stripe.EventListParams{Type: stripe.String("payment_intent.canceled")}).All(ctx) {
		require.NoError(t, err)
		require.Equal(t, stripe.EventTypePaymentIntentCanceled, x.Type)
		n++
	}
	require.Equal(t, 1, n)
	eventually(t, func() bool { return e.srv.PendingDeliveries() == 0 }, "queue drained")
}

func TestAFailedWebhookIsRedeliveredUntilAccepted(t *testing.T) {
	t.Parallel()
	e, rc := webhookEnv(t, Config{})
	rc.fail = 2 // 500 twice, then 200
	pi := confirmedManual(t, e, 1000, "")
	eventually(t, func() bool { return len(rc.forIntent(pi.ID)) == 1 }, "delivered after retries")
	got := rc.forIntent(pi.ID)
	require.Equal(t, "payment_intent.amount_capturable_updated", string(got[0].Event.Type))
	rc.mu.Lock()
	require.Equal(t, 3, rc.attempts[got[0].Event.ID])
	rc.mu.Unlock()
	rc.requireClean()
	eventually(t, func() bool { return e.srv.PendingDeliveries() == 0 }, "queue drained")
	require.Len(t, rc.forIntent(pi.ID), 1, "no further deliveries after a 2xx")
}

func TestAWebhookIsAbandonedAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	e, rc := webhookEnv(t, Config{EnabledEvents: []string{"payment_intent.amount_capturable_updated"},
		Delivery: DeliveryConfig{InitialBackoff: 5 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, MaxAttempts: 3}})
	rc.setDown(true)
	pi := confirmedManual(t, e, 1000, "")
	eventually(t, func() bool { return e.srv.PendingDeliveries() == 0 }, "abandoned")
	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Len(t, rc.attempts, 1, "only the enabled event type is delivered")
	for _, n := range rc.attempts {
		require.Equal(t, 3, n)
	}
	_ = pi
}

func TestTheDuplicateFaultDeliversAWebhookTwice(t *testing.T) {
	t.Parallel()
	e, rc := webhookEnv(t, Config{})
	pi := confirmedManual(t, e, 1000, "duplicate_webhook")
	eventually(t, func() bool { return len(rc.forIntent(pi.ID)) == 2 }, "two deliveries")
	got := rc.forIntent(pi.ID)
	require.Equal(t, got[0].Event.ID, got[1].Event.ID)
	require.Equal(t, got[0].Raw, got[1].Raw, "same id, same content")
	eventually(t, func() bool { return e.srv.PendingDeliveries() == 0 }, "queue drained")
	require.Len(t, rc.forIntent(pi.ID), 2, "exactly one duplicate")

	// Set in metadata at creation: applies to the create+confirm's events.
	p := confirmedIntent(900, map[string]string{FaultMetadataKey: "duplicate_webhook"}, "pm_card_visa")
	pm, err := e.sc.V1PaymentIntents.Create(ctxT(t), p)
	require.NoError(t, err)
	eventually(t, func() bool { return len(rc.forIntent(pm.ID)) == 2 }, "metadata duplicates")
	require.Equal(t, []string{"payment_intent.amount_capturable_updated", "payment_intent.amount_capturable_updated"}, types(rc.forIntent(pm.ID)))

	// Configured rate.
	e2, rc2 := webhookEnv(t, Config{Faults: FaultConfig{DuplicateWebhookRate: 1}})
	pi2 := confirmedManual(t, e2, 1000, "")
	eventually(t, func() bool { return len(rc2.forIntent(pi2.ID)) == 2 }, "rate duplicates")
	rc.requireClean()
	rc2.requireClean()
}

// The chaos rehearsal throws the webhook faults at a running sandbox: its
// switches duplicate, reorder and delay the events of calls made after
// them, and switched off, the next intent's events go out once, in order.
func TestTheWebhookFaultSwitchesDuplicateReorderAndDelayEventsUntilSwitchedOff(t *testing.T) {
	t.Parallel()
	e, rc := webhookEnv(t, Config{Faults: FaultConfig{OutOfOrderHold: 5 * time.Second},
		EnabledEvents: []string{"payment_intent.amount_capturable_updated", "payment_intent.canceled"}})
	ctx := ctxT(t)
	e.setFaults(t, ctx, Faults{DuplicateWebhookRate: 1})
	dup := confirmedManual(t, e, 1000, "")
	eventually(t, func() bool { return len(rc.forIntent(dup.ID)) == 2 }, "duplicated by the switch")
	require.Equal(t, rc.forIntent(dup.ID)[0].Raw, rc.forIntent(dup.ID)[1].Raw)

	e.setFaults(t, ctx, Faults{OutOfOrderWebhookRate: 1})
	late := confirmedManual(t, e, 1000, "")
	_, err := e.sc.V1PaymentIntents.Cancel(ctx, late.ID, nil)
	require.NoError(t, err)
	eventually(t, func() bool { return len(rc.forIntent(late.ID)) == 2 }, "both events")
	require.Equal(t, []string{"payment_intent.canceled", "payment_intent.amount_capturable_updated"}, types(rc.forIntent(late.ID)),
		"the authorisation is overtaken by the cancellation")

	e.setFaults(t, ctx, Faults{WebhookDelayMS: 300})
	start := time.Now()
	slow := confirmedManual(t, e, 1000, "")
	eventually(t, func() bool { return len(rc.forIntent(slow.ID)) == 1 }, "delayed delivery")
	require.GreaterOrEqual(t, rc.forIntent(slow.ID)[0].At.Sub(start), 300*time.Millisecond)

	e.setFaults(t, ctx, Faults{})
	calm := confirmedManual(t, e, 1000, "")
	_, err = e.sc.V1PaymentIntents.Cancel(ctx, calm.ID, nil)
	require.NoError(t, err)
	eventually(t, func() bool { return len(rc.forIntent(calm.ID)) == 2 }, "both events")
	eventually(t, func() bool { return e.srv.PendingDeliveries() == 0 }, "queue drained")
	require.Equal(t, []string{"payment_intent.amount_capturable_updated", "payment_intent.canceled"}, types(rc.forIntent(calm.ID)),
		"switched off: once each, in order")
	rc.requireClean()
}

func TestTheOutOfOrderFaultLetsTheNextEventOvertake(t *testing.T) {
	t.Parallel()
	e, rc := webhookEnv(t, Config{Faults: FaultConfig{OutOfOrderHold: 5 * time.Second}})
	ctx := ctxT(t)
	pi := confirmedManual(t, e, 1000, "out_of_order_webhook")
	// The event is queued synchronously with the confirm; it is held, and
	// the order below shows the dispatcher honoured the hold.
	require.Equal(t, []string{"payment_intent.amount_capturable_updated"}, e.heldTypes(pi.ID))
	require.Empty(t, rc.forIntent(pi.ID), "the authorisation event is held back")
	_, err := e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
	require.NoError(t, err)
	eventually(t, func() bool { return len(rc.forIntent(pi.ID)) == 2 }, "both events")
	require.Equal(t, []string{"payment_intent.succeeded", "payment_intent.amount_capturable_updated"}, types(rc.forIntent(pi.ID)))

	// With nothing after it, a held event goes out when OutOfOrderHold ends.
	e2, rc2 := webhookEnv(t, Config{Faults: FaultConfig{OutOfOrderHold: 200 * time.Millisecond}})
	start := time.Now()
	pi2 := confirmedManual(t, e2, 1000, "out_of_order_webhook")
	eventually(t, func() bool { return len(rc2.forIntent(pi2.ID)) == 1 }, "released")
	require.GreaterOrEqual(t, rc2.forIntent(pi2.ID)[0].At.Sub(start), 200*time.Millisecond)

	// Configured rate: the earlier event of the intent is overtaken.
	e3, rc3 := webhookEnv(t, Config{Faults: FaultConfig{OutOfOrderWebhookRate: 1, OutOfOrderHold: 5 * time.Second}, EnabledEvents: []string{"payment_intent.amount_capturable_updated", "payment_intent.canceled"}})
	pi3 := confirmedManual(t, e3, 1000, "")
	_, err = e3.sc.V1PaymentIntents.Cancel(ctx, pi3.ID, nil)
	require.NoError(t, err)
	eventually(t, func() bool { return len(rc3.forIntent(pi3.ID)) == 2 }, "rate out of order")
	require.Equal(t, []string{"payment_intent.canceled", "payment_intent.amount_capturable_updated"}, types(rc3.forIntent(pi3.ID)))
	rc.requireClean()
	rc2.requireClean()
	rc3.requireClean()
}

func TestTheDelayFaultHoldsAWebhookBack(t *testing.T) {
	t.Parallel()
	e, rc := webhookEnv(t, Config{})
	start := time.Now()
	pi := confirmedManual(t, e, 1000, "delay_webhook=300ms")
	eventually(t, func() bool { return len(rc.forIntent(pi.ID)) == 1 }, "delayed delivery")
	require.GreaterOrEqual(t, rc.forIntent(pi.ID)[0].At.Sub(start), 300*time.Millisecond)

	e2, rc2 := webhookEnv(t, Config{Faults: FaultConfig{WebhookDelay: 200 * time.Millisecond}})
	start = time.Now()
	pi2 := confirmedManual(t, e2, 1000, "")
	eventually(t, func() bool { return len(rc2.forIntent(pi2.ID)) == 1 }, "configured delay")
	require.GreaterOrEqual(t, rc2.forIntent(pi2.ID)[0].At.Sub(start), 200*time.Millisecond)
}

func TestStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "psp.json")
	rc := newReceiver(t, DefaultWebhookSecret)
	rc.setDown(true)
	cfg := Config{
		StatePath:  path,
		WebhookURL: rc.URL(),
		Logger:     testLogger(),
		Delivery:   DeliveryConfig{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxAttempts: 100000},
	}

	// First life, served on a real loopback listener.
	srv1, err := New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx1, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv1.Serve(ctx1, ln) }()
	sc1 := newClient("http://"+ln.Addr().String(), DefaultAPIKey, 0)
	ctx := ctxT(t)

	p := confirmedIntent(7700, map[string]string{"booking_id": "b-restart"}, "pm_card_visa")
	p.IdempotencyKey = stripe.String("b-restart:authorise")
	pi, err := sc1.V1PaymentIntents.Create(ctx, p)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, pi.Status)
	eventually(t, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return len(rc.attempts) > 0
	}, "a delivery attempt failed")

	// A crash copy: snapshot plus journal as they are now, with a torn line.
	crash := filepath.Join(dir, "crash", "psp.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(crash), 0o755))
	for _, suffix := range []string{"", ".journal"} {
		b, err := os.ReadFile(path + suffix)
		require.NoError(t, err)
		if suffix == ".journal" {
			require.NotEmpty(t, b, "mutations are journaled before the API answers")
			b = append(b, []byte(`{"op":"intent","intent":{"id":"pi_torn`)...)
		}
		require.NoError(t, os.WriteFile(crash+suffix, b, 0o600))
	}

	stop()
	require.NoError(t, <-served)
	require.Greater(t, srv1.PendingDeliveries(), 0)

	// The state file is a complete JSON snapshot after shutdown.
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var snap snapshot
	require.NoError(t, json.Unmarshal(raw, &snap))
	require.Len(t, snap.Intents, 1)
	require.NotEmpty(t, snap.Deliveries)
	require.True(t, bytes.Contains(raw, []byte(pi.ID)))

	// Second life: the intent, the idempotency key and the pending
	// webhooks are back.
	rc.setDown(false)
	e := newEnv(t, cfg, 0)
	got, err := e.sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresCapture, got.Status)
	require.EqualValues(t, 7700, got.AmountCapturable)
	p2 := confirmedIntent(7700, map[string]string{"booking_id": "b-restart"}, "pm_card_visa")
	p2.IdempotencyKey = stripe.String("b-restart:authorise")
	again := e.create(t, ctx, p2)
	require.Equal(t, pi.ID, again.ID)
	require.Equal(t, "true", again.LastResponse.Header.Get("Idempotent-Replayed"))

	eventually(t, func() bool { return len(rc.forIntent(pi.ID)) == 1 }, "pending webhook delivered after restart")
	require.Equal(t, "payment_intent.amount_capturable_updated", string(rc.forIntent(pi.ID)[0].Event.Type))
	rc.requireClean()

	// Work continues: capture, and new intents list after the old one.
	_, err = e.sc.V1PaymentIntents.Capture(ctx, pi.ID, nil)
	require.NoError(t, err)
	newer := e.create(t, ctx, manualIntent(100, nil))
	list := e.sc.V1PaymentIntents.List(ctx, nil)
	require.NoError(t, list.Err())
	require.Equal(t, newer.ID, list.Data()[0].ID)
	require.Equal(t, pi.ID, list.Data()[1].ID)

	// The crash copy recovers from its journal, ignoring the torn line.
	crashed, err := New(Config{StatePath: crash, Logger: testLogger()})
	require.NoError(t, err)
	defer crashed.Close()
	crashed.mu.Lock()
	require.Contains(t, crashed.intents, pi.ID)
	require.Len(t, crashed.intents, 1)
	require.Equal(t, StatusRequiresCapture, crashed.intents[pi.ID].Status)
	crashed.mu.Unlock()
}

func TestSign(t *testing.T) {
	t.Parallel()
	payload := []byte(`{"id":"evt_1","object":"event"}`)
	at := time.Unix(1700000000, 0)
	h := Sign(payload, "whsec_x", at)
	gen := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_x", Timestamp: at})
	require.Equal(t, gen.Header, h)
	require.NoError(t, webhook.ValidatePayloadIgnoringTolerance(payload, h, "whsec_x"))
	require.Error(t, webhook.ValidatePayloadIgnoringTolerance(payload, h, "whsec_y"))
	require.ErrorIs(t, webhook.ValidatePayload(payload, h, "whsec_x"), webhook.ErrTooOld)
	require.NoError(t, webhook.ValidatePayload(payload, Sign(payload, "whsec_x", time.Now()), "whsec_x"))
}

func FuzzSignatureHeader(f *testing.F) {
	f.Add([]byte(`{"object":"event"}`), "whsec_encore_sandbox", int64(1700000000))
	f.Add([]byte{}, "", int64(0))
	f.Add([]byte("t=1,v1=00"), "s,=", int64(-5))
	f.Fuzz(func(t *testing.T, payload []byte, secret string, unix int64) {
		at := time.Unix(unix, 0)
		h := Sign(payload, secret, at)
		require.NoError(t, webhook.ValidatePayloadIgnoringTolerance(payload, h, secret))
		gen := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at})
		require.Equal(t, gen.Header, h)
		tampered := append(append([]byte(nil), payload...), 'x')
		require.Error(t, webhook.ValidatePayloadIgnoringTolerance(tampered, h, secret))
	})
}
