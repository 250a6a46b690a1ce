package system_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/vocab"
)

// TestTheFourthAccountPayingWithOneCardIsSteppedUpWhateverTheToken: the card
// rule counts the card's fingerprint, so three accounts paying with the same
// card number behind three different payment methods are seen as one card,
// and the fourth account is asked for 3-D Secure; an account with a card of
// its own is not.
func TestTheFourthAccountPayingWithOneCardIsSteppedUpWhateverTheToken(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	// A number of this test's own: the shared pm_card_visa is paid with by
	// other tests' fans too, which would trip the rule before this test does.
	num := freshVisaNumber()
	sameCard := []string{e.pay.cardToken(num, 0), e.pay.cardToken(num, 1), e.pay.cardToken(num, 2)}
	for i, pm := range sameCard {
		fan := e.fan("sharer" + string(rune('a'+i)))
		id, co := e.checkedOut(fan, pm, e.seat(12, 1+i))
		require.Equal(t, "requires_capture", co["payment"].(map[string]any)["status"], "account %d of the card is allowed; decided: %s",
			i+1, fraudReasons(t, e, id))
		e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	}

	fourth := e.fan("sharerd")
	id, co := e.checkedOut(fourth, e.pay.cardToken(num, 3), e.seat(12, 4))
	require.Equal(t, "requires_action", co["payment"].(map[string]any)["status"], "stepped up to 3-D Secure")
	decision, reasons := fraudDecision(t, e, id)
	require.Equal(t, vocab.FraudReview, decision)
	require.Contains(t, reasons, "card: used by 3 or more other accounts")

	own := e.fan("loner")
	_, co = e.checkedOut(own, e.pay.card(), e.seat(12, 5))
	require.Equal(t, "requires_capture", co["payment"].(map[string]any)["status"], "a card of one's own is not stepped up")
}

// fraudDecision is the booking's one fraud decision and its reasons.
func fraudDecision(t *testing.T, e *e2e, id string) (vocab.FraudDecision, string) {
	t.Helper()
	var decision vocab.FraudDecision
	var reasons string
	require.NoError(t, e.store.Pool().QueryRow(context.Background(), `SELECT decision, reasons::text FROM fraud_decisions
		WHERE reservation_id = $1`, id).Scan(&decision, &reasons))
	return decision, reasons
}

// fraudReasons is every fraud decision of a booking with its score and
// reasons, for a failure message.
func fraudReasons(t *testing.T, e *e2e, id string) string {
	t.Helper()
	rows, err := e.store.Pool().Query(context.Background(), `SELECT decision || ' ' || score || ' ' || reasons::text
		FROM fraud_decisions WHERE reservation_id = $1 ORDER BY attempt`, id)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}
