package waitingroom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/waitingroom/pass"
)

// Passes are the admissions of every metered event as the buy plane sees
// them: an Ed25519 pass (package pass) in the fan's hands and the lease in
// Redis it names. They are apart from the line because a hold checks them on
// every request and needs nothing else of the room: the pass proves who was
// admitted, the lease that the admission still stands (so it can be revoked
// or end early). Offers from the waitlist are admissions of their own.
type Passes struct {
	rdb      redis.UniversalClient
	keys     keyspace
	signer   *pass.Signer
	verifier *pass.Verifier
	notices  *notices
}

var _ holds.Admission = (*Passes)(nil)

func newPasses(rdb redis.UniversalClient, keys keyspace, key []byte, ttl time.Duration, n *notices) *Passes {
	signer := pass.NewSigner(pass.KeyFromSeed(string(key)), ttl)
	return &Passes{rdb: rdb, keys: keys, signer: signer, verifier: signer.Verifier(), notices: n}
}

// PublicKey verifies passes; hand it to anything that checks them.
func (p *Passes) PublicKey() []byte { return p.signer.PublicKey() }

// Verifier checks passes with the public key.
func (p *Passes) Verifier() *pass.Verifier { return p.verifier }

// leaseInfo is the li hash value: "<id>|<device>|<window end ms>|<join ms>",
// with "|offer" after it for an admission from the waitlist.
type leaseInfo struct {
	id, device     string
	window, joined int64
	offer          bool
}

func parseLeaseInfo(s string) (leaseInfo, bool) {
	parts := strings.Split(s, "|")
	if len(parts) < 4 || len(parts) > 5 || parts[0] == "" {
		return leaseInfo{}, false
	}
	w, _ := strconv.ParseInt(parts[2], 10, 64)
	j, _ := strconv.ParseInt(parts[3], 10, 64)
	return leaseInfo{id: parts[0], device: parts[1], window: w, joined: j, offer: len(parts) == 5 && parts[4] == "offer"}, true
}

// mint signs a pass for an admitted fan: bound to the device that was in
// line, naming the lease, expiring with the lease or after the pass TTL,
// whichever is first.
func (p *Passes) mint(who session.Identity, eventID, info string, leaseExp time.Time) (State, error) {
	li, ok := parseLeaseInfo(info)
	if !ok {
		return State{}, unavailable(errors.New("lease without details"))
	}
	if li.device != who.DeviceID {
		return State{}, ErrAdmittedElsewhere
	}
	tok, exp, err := p.signer.Sign(pass.Claims{UserID: who.UserID, DeviceID: who.DeviceID, EventID: eventID,
		LeaseID: li.id, IssuedAt: time.Now(), ExpiresAt: leaseExp})
	if err != nil {
		return State{}, unavailable(err)
	}
	status := StatusAdmitted
	if li.offer {
		status = StatusOffered
	}
	return State{Status: status, Pass: tok, PassExpiresAt: exp}, nil
}

// Offer admits a fan from the event's waitlist until until (at most the
// pass lifetime from now): a lease of its own, bound to the device the fan
// joined the waitlist from, which their pass names like any admission. It
// is idempotent for the same offer (a retried round re-uses the lease) and
// tells the fan's open queue sockets at once. It returns the offer as the
// fan sees it.
func (p *Passes) Offer(ctx context.Context, who session.Identity, eventID string, offerID int64, until time.Time) (State, error) {
	k := p.keys.event(eventID)
	until = time.UnixMilli(min(until.UnixMilli(), time.Now().Add(pass.MaxTTL).UnixMilli()))
	info := fmt.Sprintf("w%d|%s|%d|%d|offer", offerID, who.DeviceID, until.UnixMilli(), time.Now().UnixMilli())
	if err := offerScript.Run(ctx, p.rdb, []string{k.lease, k.li}, who.UserID, until.UnixMilli(), info).Err(); err != nil {
		return State{}, unavailable(err)
	}
	p.notices.publish(ctx, eventID, "admitted", []string{who.UserID})
	return p.mint(who, eventID, info, until)
}

// Check implements holds.Admission: the pass must verify with the public
// key, be bound to this user, device and event, and name the fan's active
// lease. Refusals wrap holds.ErrQueueRequired; Redis failures wrap
// ErrUnavailable (the API answers 503, nobody gets in).
func (p *Passes) Check(ctx context.Context, who session.Identity, eventID, token string) error {
	if token == "" {
		return fmt.Errorf("%w (send X-Admission-Pass)", holds.ErrQueueRequired)
	}
	c, err := p.verifier.Verify(token, time.Now())
	if err != nil {
		return fmt.Errorf("%w: %v", holds.ErrQueueRequired, err)
	}
	if err := c.Bound(who.UserID, who.DeviceID, eventID); err != nil {
		return fmt.Errorf("%w: %v", holds.ErrQueueRequired, err)
	}
	k := p.keys.event(eventID)
	n, err := checkScript.Run(ctx, p.rdb, []string{k.lease, k.li}, who.UserID, c.LeaseID).Int64()
	if err != nil {
		return unavailable(err)
	}
	switch n {
	case 1:
		return nil
	case -1:
		return fmt.Errorf("%w: the pass names an older admission", holds.ErrQueueRequired)
	default:
		return fmt.Errorf("%w: the admission has ended or was revoked", holds.ErrQueueRequired)
	}
}

// Extend implements holds.Admission: after a hold commits, the fan's lease
// lives until the hold expires, so they keep their checkout slot while they
// pay. When the hold ends the admitter shortens it again (settle).
func (p *Passes) Extend(ctx context.Context, who session.Identity, eventID string, until time.Time) error {
	k := p.keys.event(eventID)
	_, err := extendScript.Run(ctx, p.rdb, []string{k.lease, k.li, k.held}, who.UserID, until.UnixMilli()).Int64()
	return unavailable(err)
}

// Revoke ends a fan's admission at once: every pass minted for it is refused
// from now on. It reports whether the fan had an admission to end.
func (p *Passes) Revoke(ctx context.Context, eventID, userID string) (bool, error) {
	k := p.keys.event(eventID)
	n, err := revokeScript.Run(ctx, p.rdb, []string{k.lease, k.li, k.held}, userID).Int64()
	return n > 0, unavailable(err)
}

// LeaseCount is the number of active leases of an event (tests, operators).
func (p *Passes) LeaseCount(ctx context.Context, eventID string) (int64, error) {
	n, err := p.rdb.ZCount(ctx, p.keys.event(eventID).lease, "("+strconv.FormatInt(time.Now().UnixMilli(), 10), "+inf").Result()
	return n, unavailable(err)
}
