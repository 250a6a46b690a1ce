package system_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/fraud"
	"github.com/encore-tickets/encore/payloadcodec"
	"github.com/encore-tickets/encore/temporalclient"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

// TestAPaidBookingsHistoryHoldsNoClientSecretAndNoIPInClear books and pays
// through a fan API behind a (loopback) load balancer that forwards the
// fan's public address, then reads the booking's history from Temporal as
// stored: no event holds the client secret or the address. Decoded through
// the codec the same history yields the client secret and the address's
// reference (never the address), so the check looks where the values would
// be. The history then replays with the keys rotated (a new key first, the
// one that wrote it second), and does not with the old key dropped.
func TestAPaidBookingsHistoryHoldsNoClientSecretAndNoIPInClear(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ctx := context.Background()
	const fanIP = "198.51.100.23"
	ipSecret := []byte(e.cfg.FraudIPSecret.Reveal())

	trusted, err := api.ParseTrustedProxies("127.0.0.1/32")
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bookings := &booking.Service{Holds: e.holds, Store: e.store, Temporal: e.temporal, Log: log,
		WebhookSecret: e.cfg.StripeWebhookSecret.Reveal(), LateEventGrace: 2 * time.Second, IPSecret: ipSecret}
	bookings.Register(prometheus.NewRegistry())
	edge := &api.Server{Holds: e.holds, Bookings: bookings, Sessions: e.issuer, Log: log, TrustedProxies: trusted}
	base := e.serveHandler(edge.Handler())

	fan := e.fan("private")
	status, _, h := e.callAt(base, http.MethodPost, "/v1/holds", fan,
		map[string]any{"event_id": e.eventID, "seat_ids": []string{e.seat(20, 1)}}, "X-Forwarded-For", fanIP)
	require.Equal(t, http.StatusCreated, status, "%v", h)
	id := h["hold_id"].(string)
	status, _, co := e.callAt(base, http.MethodPost, "/v1/holds/"+id+"/checkout", fan,
		map[string]any{"payment_method": e.pay.card()}, "X-Forwarded-For", fanIP)
	require.Equal(t, http.StatusOK, status, "%v", co)
	clientSecret := co["payment"].(map[string]any)["client_secret"].(string)
	require.NotEmpty(t, clientSecret)
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)

	ref := fraud.IPRef(ipSecret, fanIP)
	var recorded string
	require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT ip FROM fraud_decisions WHERE reservation_id = $1`, id).Scan(&recorded))
	require.Equal(t, ref, recorded, "the fraud record counts the reference, not the address")

	history := bookingHistory(t, e, id)
	stored := marshalEvents(t, history)
	require.NotContains(t, string(stored), clientSecret, "the client secret in clear")
	require.NotContains(t, string(stored), fanIP, "the fan's address in clear")
	require.Contains(t, string(stored), payloadcodec.Encoding)

	codec, err := temporalclient.Codec(e.cfg)
	require.NoError(t, err)
	decoded := proto.Clone(history).(*historypb.History)
	require.NoError(t, proxy.VisitPayloads(ctx, decoded, proxy.VisitPayloadsOptions{
		SkipSearchAttributes: true,
		Visitor: func(_ *proxy.VisitPayloadsContext, p []*commonpb.Payload) ([]*commonpb.Payload, error) {
			return codec.Decode(p)
		},
	}))
	clear := marshalEvents(t, decoded)
	require.Contains(t, string(clear), clientSecret, "decoded, the checkout's answer holds the client secret")
	require.Contains(t, string(clear), ref, "decoded, the checkout holds the address's reference")
	require.NotContains(t, string(clear), fanIP, "and never the address itself")

	replay := func(keys string) error {
		c, err := payloadcodec.Parse(keys)
		require.NoError(t, err)
		r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: c.DataConverter()})
		require.NoError(t, err)
		r.RegisterWorkflowWithOptions(workflows.Booking, workflow.RegisterOptions{Name: workflows.BookingWorkflowName})
		return r.ReplayWorkflowHistory(sdklog.NewStructuredLogger(log), history)
	}
	const newKey = "next:5f0e1d2c3b4a59687766554433221100ffeeddccbbaa99887766554433221100"
	require.NoError(t, replay(newKey+","+e.cfg.TemporalCodecKeys.Reveal()), "rotated: the new key first, the old one still decrypts")
	require.Error(t, replay(newKey), "with the key that wrote it dropped, the history no longer decodes")
}

func bookingHistory(t *testing.T, e *e2e, id string) *historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := e.temporal.GetWorkflowHistory(ctx, workflows.BookingWorkflowID(id), "", false, 0)
	h := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	require.NotEmpty(t, h.Events)
	return h
}

// marshalEvents is every event as Temporal stores and sends it.
func marshalEvents(t *testing.T, h *historypb.History) []byte {
	t.Helper()
	var all bytes.Buffer
	for _, ev := range h.Events {
		b, err := proto.Marshal(ev)
		require.NoError(t, err)
		all.Write(b)
	}
	return all.Bytes()
}
