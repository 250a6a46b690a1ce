package fraud_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/fraud"
	"github.com/encore-tickets/encore/store"

	"github.com/encore-tickets/encore/vocab"
)

// Each velocity rule adds only the highest of its tiers the signal reaches;
// the reasons come in the rules' order: velocity (account, IP, device,
// card), then account age, then the purchase limit.
func TestScoreGivesAllowReviewOrDenyFromTheSignals(t *testing.T) {
	t.Parallel()
	old := 30 * 24 * time.Hour
	cases := []struct {
		name    string
		in      store.FraudSignals
		want    vocab.FraudDecision
		score   int
		reasons []string
	}{
		{"a regular fan", store.FraudSignals{AccountAge: old, Limit: 6}, vocab.FraudAllow, 0, []string{}},
		{"a new account alone", store.FraudSignals{AccountAge: time.Minute, Limit: 6}, vocab.FraudAllow, 15, []string{
			"account younger than 10 minutes",
		}},
		{"below every velocity tier", store.FraudSignals{AccountAge: old, AccountAttempts: 4, IPAttempts: 9, DeviceAttempts: 9}, vocab.FraudAllow, 0, []string{}},
		{"a busy account on a busy IP", store.FraudSignals{AccountAge: old, AccountAttempts: 5, IPAttempts: 10, Limit: 6}, vocab.FraudReview, 40, []string{
			"account: 5 or more checkouts in an hour",
			"ip: 10 or more checkouts in an hour",
		}},
		{"a shared card and a new account", store.FraudSignals{AccountAge: time.Minute, CardAccounts: 1, AccountAttempts: 5, Limit: 6}, vocab.FraudReview, 60, []string{
			"account: 5 or more checkouts in an hour",
			"card: used by another account in an hour",
			"account younger than 10 minutes",
		}},
		{"a card across many accounts", store.FraudSignals{AccountAge: old, CardAccounts: 3, IPAttempts: 30, Limit: 6}, vocab.FraudDeny, 100, []string{
			"ip: 30 or more checkouts in an hour",
			"card: used by 3 or more other accounts in an hour",
		}},
		{"every upper velocity tier", store.FraudSignals{AccountAge: old, AccountAttempts: 10, IPAttempts: 30, DeviceAttempts: 10, CardAccounts: 3}, vocab.FraudDeny, 180, []string{
			"account: 10 or more checkouts in an hour",
			"ip: 30 or more checkouts in an hour",
			"device: 10 or more checkouts in an hour",
			"card: used by 3 or more other accounts in an hour",
		}},
		{"over the purchase limit", store.FraudSignals{AccountAge: old, OwnedUnits: 6, Limit: 6}, vocab.FraudDeny, 100, []string{
			"purchase limit already reached",
		}},
		{"a busy device on a new account at its limit", store.FraudSignals{AccountAge: time.Minute, DeviceAttempts: 10, OwnedUnits: 2, Limit: 2}, vocab.FraudDeny, 145, []string{
			"device: 10 or more checkouts in an hour",
			"account younger than 10 minutes",
			"purchase limit already reached",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := fraud.Score(c.in)
			require.Equal(t, c.want, r.Decision, "score %d: %v", r.Score, r.Reasons)
			require.Equal(t, c.score, r.Score)
			require.Equal(t, c.reasons, r.Reasons)
		})
	}
}

func TestSharedAddressesAreNotCountedAsOneFanButACardIsItsFingerprint(t *testing.T) {
	t.Parallel()
	require.Equal(t, "", fraud.IPKey("127.0.0.1"))
	require.Equal(t, "", fraud.IPKey("10.1.2.3"))
	require.Equal(t, "", fraud.IPKey("not an ip"))
	require.Equal(t, "203.0.113.9", fraud.IPKey("203.0.113.9"))
	require.Equal(t, "", fraud.CardKey(""), "no card, nothing to count")
	require.Equal(t, "fp:Xt5EWLLDS7FJjR1c", fraud.CardKey("Xt5EWLLDS7FJjR1c"))
}

func TestAnIPRefCountsOneAddressAsOneWithoutHoldingIt(t *testing.T) {
	t.Parallel()
	secret := []byte("s")
	ref := fraud.IPRef(secret, "203.0.113.9")
	require.Regexp(t, `^iph:[0-9a-f]{32}$`, ref)
	require.NotContains(t, ref, "203.0.113.9")
	require.Equal(t, ref, fraud.IPRef(secret, "203.0.113.9"), "the same address, the same reference")
	require.Equal(t, fraud.IPRef(secret, "2001:db8::1"), fraud.IPRef(secret, "2001:0db8:0::1"), "one address however written")
	require.NotEqual(t, ref, fraud.IPRef(secret, "203.0.113.10"))
	require.NotEqual(t, ref, fraud.IPRef([]byte("t"), "203.0.113.9"), "keyed: another secret, another reference")
	for _, shared := range []string{"127.0.0.1", "10.1.2.3", "::1", "", "not an ip"} {
		require.Equal(t, "", fraud.IPRef(secret, shared), "%q is not counted", shared)
	}
}
