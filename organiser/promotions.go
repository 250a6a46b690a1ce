package organiser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// PromotionRequest is the body of POST /v1/admin/events/{id}/promotions:
// percent_off (1 to 100, may have two decimals) or amount_off (in the
// event's currency, per ticket), max_uses, per_user (live uses per account,
// 1 unless given; a released hold gives its use back) and an optional
// window.
type PromotionRequest struct {
	Code       string       `json:"code"`
	PercentOff *float64     `json:"percent_off,omitempty"`
	AmountOff  *money.Money `json:"amount_off,omitempty"`
	MaxUses    int          `json:"max_uses"`
	PerUser    *int         `json:"per_user,omitempty"`
	StartsAt   *time.Time   `json:"starts_at,omitempty"`
	EndsAt     *time.Time   `json:"ends_at,omitempty"`
}

var promoCodePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{3,40}$`)

// MaxPromotionUses bounds a code's uses.
const MaxPromotionUses = 1_000_000

// MaxPerUser bounds a code's live uses per account.
const MaxPerUser = 100

// CreatePromotion adds a code to an event of the scope's organisation and
// records it in the admin audit log in the same transaction. Codes are
// unique per event: a code the event already runs is venues.ErrConflict,
// while another event's code of the same name, another organisation's
// above all, is no obstacle (and so reveals nothing).
func (s *Service) CreatePromotion(ctx context.Context, scope venues.Scope, eventID string, r PromotionRequest) (store.Promotion, error) {
	ev, err := s.Get(ctx, scope, eventID)
	if err != nil {
		return store.Promotion{}, err
	}
	p, err := checkPromotion(ev, r)
	if err != nil {
		return store.Promotion{}, err
	}
	out, err := s.store.Promotions.AddPromotion(ctx, p, store.AdminAction{Actor: actorOf(scope), OrgID: ev.OrgID,
		Action: "promotion.create", Target: eventID + "/" + p.Code})
	if errors.Is(err, store.ErrPromotionExists) {
		return store.Promotion{}, fmt.Errorf("%w: this event already has the code %s", venues.ErrConflict, p.Code)
	}
	return out, err
}

// PromotionPatch is the body of PATCH .../promotions/{code}: only the
// fields to change. A discount given replaces the other kind.
type PromotionPatch struct {
	PercentOff *float64     `json:"percent_off,omitempty"`
	AmountOff  *money.Money `json:"amount_off,omitempty"`
	MaxUses    *int         `json:"max_uses,omitempty"`
	PerUser    *int         `json:"per_user,omitempty"`
	StartsAt   *time.Time   `json:"starts_at,omitempty"`
	EndsAt     *time.Time   `json:"ends_at,omitempty"`
}

// UpdatePromotion changes a code's terms for the holds taken from now on
// (a hold keeps the price it was taken at), checked as a new code is; a
// limit below the uses already made is refused naming max_uses. Recorded
// in the audit log in the same transaction.
func (s *Service) UpdatePromotion(ctx context.Context, scope venues.Scope, eventID, code string, f PromotionPatch) (store.Promotion, error) {
	ev, err := s.Get(ctx, scope, eventID)
	if err != nil {
		return store.Promotion{}, err
	}
	return s.store.Promotions.UpdatePromotion(ctx, ev.EventID, code, store.AdminAction{Actor: actorOf(scope), OrgID: ev.OrgID,
		Action: "promotion.update", Target: eventID + "/" + code}, func(p *store.Promotion) error {
		r := PromotionRequest{Code: p.Code, MaxUses: p.MaxUses, PerUser: &p.PerUser, StartsAt: p.StartsAt, EndsAt: p.EndsAt}
		if p.DiscountBps > 0 {
			pct := float64(p.DiscountBps) / 100
			r.PercentOff = &pct
		} else {
			r.AmountOff = &money.Money{Amount: p.AmountOff, Currency: ev.Currency}
		}
		switch {
		case f.PercentOff != nil:
			r.PercentOff, r.AmountOff = f.PercentOff, nil
		case f.AmountOff != nil:
			r.PercentOff, r.AmountOff = nil, f.AmountOff
		}
		if f.MaxUses != nil {
			r.MaxUses = *f.MaxUses
		}
		if f.PerUser != nil {
			r.PerUser = f.PerUser
		}
		if f.StartsAt != nil {
			r.StartsAt = f.StartsAt
		}
		if f.EndsAt != nil {
			r.EndsAt = f.EndsAt
		}
		next, err := checkPromotion(ev, r)
		if err != nil {
			return err
		}
		if next.MaxUses < p.Used {
			return venues.Invalid("max_uses", "at least %d: the uses already made", p.Used)
		}
		next.Used, next.DisabledAt = p.Used, p.DisabledAt
		*p = next
		return nil
	})
}

// checkPromotion is r as a promotion of ev, or every problem with it.
func checkPromotion(ev Event, r PromotionRequest) (store.Promotion, error) {
	var e venues.FieldErrors
	p := store.Promotion{Code: strings.TrimSpace(r.Code), EventID: ev.EventID, MaxUses: r.MaxUses, PerUser: 1,
		StartsAt: r.StartsAt, EndsAt: r.EndsAt}
	if !promoCodePattern.MatchString(p.Code) {
		e.Add("code", "3 to 40 letters, digits, '_' or '-'")
	}
	switch {
	case (r.PercentOff == nil) == (r.AmountOff == nil):
		e.Add("percent_off", "exactly one of percent_off and amount_off")
	case r.PercentOff != nil:
		bps := *r.PercentOff * 100
		if bps < 1 || bps > 10000 || bps != float64(int(bps)) {
			e.Add("percent_off", "from 0.01 to 100, at most two decimals")
		}
		p.DiscountBps = int(bps)
	default:
		switch {
		case r.AmountOff.Currency != ev.Currency:
			e.Add("amount_off.currency", "must be the event's currency %q", ev.Currency)
		case r.AmountOff.Amount < 1 || r.AmountOff.Amount > maxPrice:
			e.Add("amount_off.amount", "from 1 to %d minor units", maxPrice)
		}
		p.AmountOff = r.AmountOff.Amount
	}
	if r.MaxUses < 1 || r.MaxUses > MaxPromotionUses {
		e.Add("max_uses", "from 1 to %d", MaxPromotionUses)
	}
	if r.PerUser != nil {
		if *r.PerUser < 1 || *r.PerUser > MaxPerUser {
			e.Add("per_user", "from 1 to %d live uses per account", MaxPerUser)
		}
		p.PerUser = *r.PerUser
	}
	if r.StartsAt != nil && r.EndsAt != nil && !r.EndsAt.After(*r.StartsAt) {
		e.Add("ends_at", "must be after starts_at")
	}
	return p, e.Err()
}

// DisablePromotion withdraws a code from new holds; holds already taken
// keep their frozen price. Recorded in the audit log with the same
// transaction.
func (s *Service) DisablePromotion(ctx context.Context, scope venues.Scope, eventID, code string) (store.Promotion, error) {
	ev, err := s.Get(ctx, scope, eventID)
	if err != nil {
		return store.Promotion{}, err
	}
	return s.store.Promotions.DisablePromotion(ctx, ev.EventID, code, store.AdminAction{Actor: actorOf(scope), OrgID: ev.OrgID,
		Action: "promotion.disable", Target: eventID + "/" + code})
}

func actorOf(scope venues.Scope) string {
	if scope.Actor == "" {
		return "unknown"
	}
	return scope.Actor
}

// Audit records a change the service made outside a transaction of its
// own (the edge calls it after a create, patch, publish or seat change),
// with the object before and after.
func (s *Service) Audit(ctx context.Context, scope venues.Scope, org, action, target, reason string, before, after any) error {
	a := store.AdminAction{Actor: actorOf(scope), OrgID: org, Action: action, Target: target, Reason: reason}
	if before != nil {
		a.Before, _ = json.Marshal(before)
	}
	if after != nil {
		a.After, _ = json.Marshal(after)
	}
	return s.store.Orgs.RecordAdminAction(ctx, a)
}
