// Package fraud scores a checkout before any money moves. The rules are
// plain, weighted and explainable: velocity per account, IP, device and card,
// account age, and the purchase limit. A score gives allow, review (step-up:
// 3-D Secure) or deny, and every decision is recorded with its reasons.
package fraud

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"time"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// Thresholds on the score.
const (
	ReviewAt = 40
	DenyAt   = 80
)

// Result is a decision with its score and the rules that fired.
type Result struct {
	Decision vocab.FraudDecision `json:"decision"`
	Score    int                 `json:"score"`
	Reasons  []string            `json:"reasons"`
}

// tier is one step of a velocity rule: a count of at least atLeast adds
// points, with reason.
type tier struct {
	atLeast, points int
	reason          string
}

// velocity is how often one thing (an account, an IP, a device, a card)
// checked out in the last hour; only the highest tier it reaches counts, so
// its tiers are listed highest first.
type velocity struct {
	count func(store.FraudSignals) int
	tiers []tier
}

// velocities are the velocity rules in the order their reasons are listed.
var velocities = []velocity{
	{func(s store.FraudSignals) int { return s.AccountAttempts }, []tier{
		{10, 50, "account: 10 or more checkouts in an hour"},
		{5, 25, "account: 5 or more checkouts in an hour"},
	}},
	{func(s store.FraudSignals) int { return s.IPAttempts }, []tier{
		{30, 40, "ip: 30 or more checkouts in an hour"},
		{10, 15, "ip: 10 or more checkouts in an hour"},
	}},
	{func(s store.FraudSignals) int { return s.DeviceAttempts }, []tier{
		{10, 30, "device: 10 or more checkouts in an hour"},
	}},
	{func(s store.FraudSignals) int { return s.CardAccounts }, []tier{
		{3, 60, "card: used by 3 or more other accounts in an hour"},
		{1, 20, "card: used by another account in an hour"},
	}},
}

// Score applies the rules to the signals of one checkout attempt.
func Score(s store.FraudSignals) Result {
	r := Result{Reasons: []string{}}
	add := func(points int, reason string) {
		r.Score += points
		r.Reasons = append(r.Reasons, reason)
	}
	for _, v := range velocities {
		n := v.count(s)
		for _, t := range v.tiers {
			if n >= t.atLeast {
				add(t.points, t.reason)
				break
			}
		}
	}
	if s.AccountAge < 10*time.Minute {
		add(15, "account younger than 10 minutes")
	}
	if s.Limit > 0 && s.OwnedUnits >= s.Limit {
		add(100, "purchase limit already reached")
	}
	switch {
	case r.Score >= DenyAt:
		r.Decision = vocab.FraudDeny
	case r.Score >= ReviewAt:
		r.Decision = vocab.FraudReview
	default:
		r.Decision = vocab.FraudAllow
	}
	return r
}

// IPKey is the address the IP velocity rule counts, or "" when the address
// says nothing about the fan: loopback and private addresses are our own
// proxies and test clients, shared by everyone behind them.
func IPKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() {
		return ""
	}
	return a.String()
}

// IPRef is what stands for a fan's IP address in the fraud records and the
// booking saga's history: a keyed hash (HMAC-SHA256 under secret, truncated
// to 128 bits) of IPKey's address, so the IP velocity rule still counts one
// address as one, while neither the database nor Temporal holds the address
// itself, and without the secret a known address cannot be looked up. ""
// when IPKey excludes the address: shared proxies are not hashed into one
// fan.
func IPRef(secret []byte, ip string) string {
	key := IPKey(ip)
	if key == "" {
		return ""
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(key))
	return "iph:" + hex.EncodeToString(m.Sum(nil)[:16])
}

// CardKey is the card identity the card velocity rule counts for a card
// fingerprint, or "" without one. The fingerprint, not the payment method
// ID, is the card: every token of one card number carries the same
// fingerprint, so a card passed around between accounts is seen as one,
// test cards included.
func CardKey(fingerprint string) string {
	if fingerprint == "" {
		return ""
	}
	return "fp:" + fingerprint
}
