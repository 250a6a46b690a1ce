package waitingroom

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/internal/defaults"
	"github.com/encore-tickets/encore/session"
)

// Risk sets the bot friction. Each signal scores 0..1 and the scores combine
// as a noisy OR (1 - product of (1 - s)); at Threshold or above, joining
// needs a solved proof-of-work challenge. No third party is involved.
//
// Signals, all per event:
//   - accounts seen from the client's IP address (a HyperLogLog in Redis):
//     IPAccounts or more score 0.5, IPAccountsHigh or more 0.75;
//   - accounts seen on the device: DeviceAccounts or more score 0.75;
//   - the account's polls or socket heartbeats arrive with machine regularity
//     (standard deviation of the intervals under Regular after at least 8
//     intervals): 0.8. Browsers' timers and networks always add jitter.
type Risk struct {
	IPAccounts     int           // 50
	IPAccountsHigh int           // 200
	DeviceAccounts int           // 4
	Regular        time.Duration // 2ms
	Threshold      float64       // 0.7; above 1 disables challenges
	Difficulty     int           // leading zero bits of the proof of work (20: about a million hashes)
	ChallengeTTL   time.Duration // 2m
}

func (r *Risk) defaults() {
	defaults.Fill(&r.IPAccounts, 50)
	defaults.Fill(&r.IPAccountsHigh, 200)
	defaults.Fill(&r.DeviceAccounts, 4)
	defaults.Fill(&r.Regular, 2*time.Millisecond)
	defaults.Fill(&r.Threshold, 0.7)
	defaults.Fill(&r.Difficulty, 20)
	defaults.Fill(&r.ChallengeTTL, 2*time.Minute)
}

const flagRegular = 1 // account flag bit: machine-regular timing

// friction is the room's defence against bots, no third party involved: it
// scores joins by the Risk signals (per event, in Redis), watches the
// timing of polls and heartbeats in this process's memory, and issues and
// verifies the proof-of-work challenges a risky join must solve. It holds
// the thresholds, the key challenges are signed with and the timing record.
type friction struct {
	rdb     redis.UniversalClient
	keys    keyspace
	risk    Risk
	powKey  []byte
	regular *regularity
	log     *slog.Logger
}

func newFriction(rdb redis.UniversalClient, keys keyspace, risk Risk, secret []byte, log *slog.Logger) *friction {
	return &friction{rdb: rdb, keys: keys, risk: risk, powKey: powKeyFrom(secret), regular: newRegularity(200_000), log: log}
}

// score records the join against the IP address and device and scores it.
func (f *friction) score(ctx context.Context, who session.Identity, eventID, ip string) (float64, error) {
	k := f.keys.event(eventID)
	res, err := riskScript.Run(ctx, f.rdb, []string{k.ip(ip), k.device(who.DeviceID), k.flags}, who.UserID, 3600).Int64Slice()
	if err != nil {
		return 0, unavailable(err)
	}
	ipAccounts, devAccounts, flags := res[0], res[1], res[2]
	risk := f.risk
	var scores []float64
	switch {
	case ipAccounts >= int64(risk.IPAccountsHigh):
		scores = append(scores, 0.75)
	case ipAccounts >= int64(risk.IPAccounts):
		scores = append(scores, 0.5)
	}
	if devAccounts >= int64(risk.DeviceAccounts) {
		scores = append(scores, 0.75)
	}
	if flags&flagRegular != 0 {
		scores = append(scores, 0.8)
	}
	return combine(scores...), nil
}

func combine(scores ...float64) float64 {
	p := 1.0
	for _, s := range scores {
		p *= 1 - s
	}
	return 1 - p
}

// flag marks an account (machine-regular timing) so its next join is
// challenged.
func (f *friction) flag(ctx context.Context, eventID, userID string, bit int) {
	k := f.keys.event(eventID)
	if err := flagScript.Run(ctx, f.rdb, []string{k.flags}, userID, bit, 24*3600).Err(); err != nil {
		f.log.Debug("waiting room: flag account", "err", err)
	}
}

// mark flags an account as machine-regular timing does, and says whether
// it could (Room.MarkSuspicious).
func (f *friction) mark(ctx context.Context, eventID, userID string) error {
	k := f.keys.event(eventID)
	return unavailable(flagScript.Run(ctx, f.rdb, []string{k.flags}, userID, flagRegular, 24*3600).Err())
}

// beat records a poll or heartbeat of the account at t and flags the
// account once its timing has become machine-regular.
func (f *friction) beat(ctx context.Context, eventID, userID string, t time.Time) {
	if f.regular.beat(eventID+"|"+userID, t, f.risk.Regular) {
		f.flag(ctx, eventID, userID, flagRegular)
	}
}

// regularity watches the intervals between an account's polls or
// heartbeats, in this process's memory (bounded; forgetting is harmless).
type regularity struct {
	mu    sync.Mutex
	limit int
	seen  map[string]*beatStats
}

// beatStats is Welford's running mean and variance of intervals.
type beatStats struct {
	last    time.Time
	n       int
	mean    float64
	m2      float64
	flagged bool
}

func newRegularity(limit int) *regularity {
	return &regularity{limit: limit, seen: map[string]*beatStats{}}
}

// beat records a beat at t and reports whether the timing just became
// machine-regular.
func (g *regularity) beat(key string, t time.Time, regular time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.seen[key]
	if s == nil {
		if len(g.seen) >= g.limit {
			for k := range g.seen { // drop an arbitrary tenth
				delete(g.seen, k)
				if len(g.seen) < g.limit*9/10 {
					break
				}
			}
		}
		s = &beatStats{}
		g.seen[key] = s
	}
	return s.add(t, regular)
}

func (s *beatStats) add(t time.Time, regular time.Duration) bool {
	if !s.last.IsZero() {
		x := float64(t.Sub(s.last))
		s.n++
		d := x - s.mean
		s.mean += d / float64(s.n)
		s.m2 += d * (x - s.mean)
	}
	s.last = t
	if s.flagged || s.n < 8 {
		return false
	}
	std := math.Sqrt(s.m2 / float64(s.n-1))
	if std < float64(regular) {
		s.flagged = true
		return true
	}
	return false
}

// Proof is a solved challenge: the challenge token as issued and a
// solution such that SHA-256(token ":" solution) starts with Difficulty zero
// bits.
type Proof struct {
	Challenge string
	Solution  string
}

// Challenge is what a risky client must solve before joining.
type Challenge struct {
	Token      string `json:"token"`
	Difficulty int    `json:"difficulty"`
	Algorithm  string `json:"algorithm"`
	ExpiresAt  string `json:"expires_at"`
}

type challengeBody struct {
	Event string `json:"e"`
	User  string `json:"u"`
	Exp   int64  `json:"x"`
	Bits  int    `json:"d"`
	Nonce string `json:"n"`
}

func powKeyFrom(secret []byte) []byte {
	h := sha256.Sum256(append([]byte("encore waiting room challenge v1\x00"), secret...))
	return h[:]
}

// newChallenge issues a stateless challenge bound to the user and event.
func (f *friction) newChallenge(userID, eventID string) Challenge {
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	exp := time.Now().Add(f.risk.ChallengeTTL)
	body, _ := json.Marshal(challengeBody{Event: eventID, User: userID, Exp: exp.Unix(), Bits: f.risk.Difficulty,
		Nonce: hex.EncodeToString(nonce)})
	payload := base64.RawURLEncoding.EncodeToString(body)
	return Challenge{Token: payload + "." + f.powSign(payload), Difficulty: f.risk.Difficulty,
		Algorithm: "sha256-leading-zero-bits", ExpiresAt: exp.UTC().Format(time.RFC3339)}
}

func (f *friction) powSign(payload string) string {
	m := hmac.New(sha256.New, f.powKey)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var errBadProof = errors.New("waitingroom: the proof of work does not solve a valid challenge")

// verifyProof checks a solution and spends the challenge (one use).
func (f *friction) verifyProof(ctx context.Context, p Proof, userID, eventID string) error {
	payload, sig, ok := strings.Cut(p.Challenge, ".")
	if !ok || len(p.Challenge) > 512 || len(p.Solution) > 64 || !hmac.Equal([]byte(sig), []byte(f.powSign(payload))) {
		return errBadProof
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return errBadProof
	}
	var b challengeBody
	if json.Unmarshal(raw, &b) != nil || b.User != userID || b.Event != eventID || time.Now().Unix() > b.Exp {
		return errBadProof
	}
	if LeadingZeroBits(p.Challenge, p.Solution) < b.Bits {
		return errBadProof
	}
	ok, err = f.rdb.SetNX(ctx, f.keys.event(eventID).proof(b.Nonce), 1, time.Until(time.Unix(b.Exp, 0))+time.Second).Result()
	if err != nil {
		return unavailable(err)
	}
	if !ok {
		return errBadProof // already spent
	}
	return nil
}

// LeadingZeroBits counts the leading zero bits of SHA-256(challenge ":" solution).
func LeadingZeroBits(challenge, solution string) int {
	h := sha256.Sum256([]byte(challenge + ":" + solution))
	n := 0
	for i := 0; i < len(h); i += 8 {
		w := binary.BigEndian.Uint64(h[i : i+8])
		if w != 0 {
			return n + bits.LeadingZeros64(w)
		}
		n += 64
	}
	return n
}

// Solve finds a solution to a challenge (what a client does; tests and the
// load generator use it).
func Solve(ctx context.Context, c Challenge) (string, error) {
	for i := uint64(0); ; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
		s := strconv.FormatUint(i, 36)
		if LeadingZeroBits(c.Token, s) >= c.Difficulty {
			return s, nil
		}
	}
}
