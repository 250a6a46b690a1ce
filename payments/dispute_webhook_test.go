package payments_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/vocab"
)

const disputeCreated = `{"id":"evt_d1","object":"event","type":"charge.dispute.created","api_version":"2026-03-25.dahlia","created":1700000000,
"request":{"id":null,"idempotency_key":null},
"data":{"object":{"id":"dp_1","object":"dispute","amount":15000,"charge":"ch_1","currency":"eur","payment_intent":"pi_1",
"reason":"fraudulent","status":"needs_response","evidence":{"uncategorized_text":""},"metadata":{}}}}`

const chargeRefunded = `{"id":"evt_r1","object":"event","type":"charge.refunded","api_version":"2026-03-25.dahlia","created":1700000000,
"request":{"id":"req_1","idempotency_key":"dashboard-7"},
"data":{"object":{"id":"ch_1","object":"charge","amount":15000,"amount_captured":15000,"amount_refunded":15000,"refunded":true,
"currency":"eur","payment_intent":"pi_1","metadata":{"booking_id":"b"}}}}`

func TestADisputeEventNamesItsDisputeChargeAndIntent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
	}{
		{"as IDs", disputeCreated},
		{"expanded", `{"id":"evt_d2","object":"event","type":"charge.dispute.closed","data":{"object":{"id":"dp_1","object":"dispute",
"amount":15000,"charge":{"id":"ch_1","object":"charge"},"currency":"eur","payment_intent":{"id":"pi_1","object":"payment_intent"},
"reason":"fraudulent","status":"needs_response"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := payments.DecodeStoredWebhook([]byte(tc.body))
			require.NoError(t, err)
			require.NotNil(t, ev.Dispute)
			require.Equal(t, "dispute", ev.Object)
			require.Equal(t, "pi_1", ev.IntentID)
			require.Equal(t, payments.Dispute{ID: "dp_1", ChargeID: "ch_1", Status: vocab.DisputeNeedsResponse, Reason: "fraudulent",
				Amount: money.Money{Amount: 15000, Currency: "EUR"}}, *ev.Dispute)
			require.Empty(t, ev.IdempotencyKey)
		})
	}
}

func TestARefundEventCarriesTheChargesTotalsAndTheRequestsKey(t *testing.T) {
	t.Parallel()
	const secret = "whsec_test"
	body := []byte(chargeRefunded)
	ev, err := payments.ParseWebhook(body, psp.Sign(body, secret, time.Now()), secret)
	require.NoError(t, err)
	require.Equal(t, vocab.EventRefunded, ev.Type)
	require.Equal(t, "pi_1", ev.IntentID)
	require.Equal(t, "dashboard-7", ev.IdempotencyKey)
	require.Equal(t, payments.Charge{ID: "ch_1", AmountCaptured: 15000, AmountRefunded: 15000, Currency: "EUR", Refunded: true}, *ev.Charge)
}

func TestADisputeWithoutIDOrStatusIsRefused(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"id":"evt","type":"charge.dispute.created","data":{"object":{"object":"dispute","status":"lost"}}}`,
		`{"id":"evt","type":"charge.dispute.created","data":{"object":{"id":"dp_1","object":"dispute"}}}`,
		`{"id":"evt","type":"charge.dispute.created","data":{"object":{"id":"dp_1","object":"dispute","amount":"lots","status":"lost"}}}`,
	} {
		_, err := payments.DecodeStoredWebhook([]byte(body))
		require.Error(t, err, body)
	}
}

// FuzzDecodeDisputeAndRefundEvents: any dispute or charge payload decodes
// into a dispute with its ID and a known-shape status, or a charge, or is
// refused; nothing panics.
func FuzzDecodeDisputeAndRefundEvents(f *testing.F) {
	f.Add([]byte(disputeCreated))
	f.Add([]byte(chargeRefunded))
	f.Add([]byte(`{"id":"e","type":"charge.dispute.closed","data":{"object":{"id":"dp","object":"dispute","status":"won","charge":null,"payment_intent":7}}}`))
	f.Add([]byte(`{"id":"e","type":"charge.refunded","data":{"object":{"id":"ch","object":"charge","amount_refunded":-1,"refunded":"yes"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := payments.DecodeStoredWebhook(body)
		if err != nil {
			return
		}
		if ev.ID == "" || ev.Type == "" {
			t.Fatalf("accepted an event without id or type: %+v", ev)
		}
		if ev.Object == "dispute" && (ev.Dispute == nil || ev.Dispute.ID == "" || ev.Dispute.Status == "") {
			t.Fatalf("a dispute event without its dispute: %+v", ev)
		}
		if ev.Object == "charge" && ev.Charge == nil {
			t.Fatalf("a charge event without its charge: %+v", ev)
		}
	})
}
