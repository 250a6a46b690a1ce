package payments_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/payments"
)

// FuzzParseWebhook: any body under any signature header either verifies and
// decodes or is refused; a forged signature never verifies; nothing panics.
func FuzzParseWebhook(f *testing.F) {
	const secret = "whsec_fuzz"
	f.Add([]byte(`{"id":"evt_1","object":"event","type":"payment_intent.amount_capturable_updated","api_version":"2026-03-25.dahlia","data":{"object":{"id":"pi_1","object":"payment_intent","amount":100,"amount_capturable":100,"currency":"eur","metadata":{"booking_id":"b"}}}}`), true)
	f.Add([]byte(`{"id":"evt_2","type":"refund.created","data":{"object":{"id":"re_1","object":"refund","payment_intent":"pi_1"}}}`), true)
	f.Add([]byte(`{"id":"evt_3","type":"x","data":{"object":[]}}`), false)
	f.Add([]byte(`not json`), true)
	f.Fuzz(func(t *testing.T, body []byte, signed bool) {
		header := "t=1,v1=00"
		if signed {
			header = psp.Sign(body, secret, time.Now())
		}
		ev, err := payments.ParseWebhook(body, header, secret)
		if !signed && err == nil {
			t.Fatal("an unsigned payload verified")
		}
		if err == nil && (ev.ID == "" || ev.Type == "" || len(ev.Fingerprint) != 32) {
			t.Fatalf("accepted an event without id, type or fingerprint: %+v", ev)
		}
	})
}

func TestASuccessCarryingTheSagasCaptureMetadataIsKnownAsItsOwn(t *testing.T) {
	t.Parallel()
	const secret = "whsec_test"
	for _, tc := range []struct {
		name     string
		metadata string
		own      bool
	}{
		{"captured by the saga", `{"booking_id":"b","captured_by":"encore-saga"}`, true},
		{"captured elsewhere", `{"booking_id":"b"}`, false},
		{"another value", `{"booking_id":"b","captured_by":"dashboard"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := []byte(`{"id":"evt_s","object":"event","type":"payment_intent.succeeded","api_version":"2026-03-25.dahlia","data":{"object":{"id":"pi_1","object":"payment_intent","amount":100,"amount_received":100,"currency":"eur","metadata":` + tc.metadata + `}}}`)
			ev, err := payments.ParseWebhook(body, psp.Sign(body, secret, time.Now()), secret)
			require.NoError(t, err)
			require.Equal(t, tc.own, ev.CapturedBySaga)
		})
	}
}
