package psp

import (
	"fmt"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"
)

// Disputes, following Stripe's test conventions.
//
// The test payment method pm_card_createDispute (Stripe's test card
// 4000000000000259, also when created from that number with POST
// /v1/payment_methods) pays like pm_card_visa; Config.DisputeDelay (default
// DefaultDisputeDelay) after its charge is captured, the sandbox opens a
// dispute on it (reason fraudulent, status needs_response, the charge's
// captured amount) and emits charge.dispute.created. Then:
//
//	GET  /v1/disputes               charge, payment_intent, limit, starting_after, ending_before, created[...]
//	GET  /v1/disputes/{id}
//	POST /v1/disputes/{id}          evidence[uncategorized_text], submit (default true), metadata[...]
//	POST /v1/disputes/{id}/close    accept the dispute: it is lost
//
// Submitting evidence[uncategorized_text]=winning_evidence closes the
// dispute won, losing_evidence lost, at once, with charge.dispute.closed;
// other evidence, submitted, puts it under_review (charge.dispute.updated)
// where it stays. A closed dispute takes no more evidence (400). Every
// dispute event is ordered with its intent's other events. As at Stripe, a
// dispute moves no refund: the charge keeps amount_refunded, and a lost
// dispute's money leaves through the bank, not through /v1/refunds.
//
// A refund of any charge made through POST /v1/refunds (by Encore or by
// anyone else holding the key, as a dashboard would) emits refund.created
// and charge.refunded, with request.idempotency_key naming the refund
// request's Idempotency-Key: that is how a receiver tells its own refunds
// from the others.
//
// Disputes live in memory only: a restart forgets them and any dispute
// still waiting to open.

// Dispute event types.
const (
	EventChargeDisputeCreated = "charge.dispute.created"
	EventChargeDisputeUpdated = "charge.dispute.updated"
	EventChargeDisputeClosed  = "charge.dispute.closed"
)

// DisputeCard is Stripe's test payment method whose payment succeeds and is
// then disputed as fraudulent.
const DisputeCard = "pm_card_createDispute"

// DisputeCardNumber is the card number behind DisputeCard.
const DisputeCardNumber = "4000000000000259"

// The evidence texts that close a dispute in Stripe's test mode.
const (
	WinningEvidence = "winning_evidence"
	LosingEvidence  = "losing_evidence"
)

// DefaultDisputeDelay is how long after the capture a DisputeCard payment
// is disputed, when Config.DisputeDelay is zero.
const DefaultDisputeDelay = 3 * time.Second

// disputeCard is the card of DisputeCard: a Visa credit card that pays.
var disputeCard = testCard{Number: DisputeCardNumber, Brand: "visa", Last4: "0259", Funding: "credit", Outcome: "succeed"}

// disputeFingerprint tells a charge of the dispute card, whether paid with
// DisputeCard or a method created from its number.
var disputeFingerprint = fingerprintOf(DisputeCardNumber)

// dispute is the stored form of a Dispute.
type dispute struct {
	ID            string
	Seq           int64
	Charge        string
	PaymentIntent string
	Amount        int64
	Currency      string
	Reason        stripe.DisputeReason
	Status        stripe.DisputeStatus
	Created       int64
	Evidence      string
	Submissions   int64
	Metadata      map[string]string
}

// jsonDispute renders a Dispute as Stripe does (charge and payment_intent
// as IDs), with stripe-go's own types for its enumerations and nested
// objects, so stripe.Dispute decodes it.
type jsonDispute struct {
	ID                  string                                  `json:"id"`
	Object              string                                  `json:"object"`
	Amount              int64                                   `json:"amount"`
	BalanceTransactions []any                                   `json:"balance_transactions"`
	Charge              string                                  `json:"charge"`
	Created             int64                                   `json:"created"`
	Currency            stripe.Currency                         `json:"currency"`
	Evidence            *stripe.DisputeEvidence                 `json:"evidence"`
	EvidenceDetails     *stripe.DisputeEvidenceDetails          `json:"evidence_details"`
	IsChargeRefundable  bool                                    `json:"is_charge_refundable"`
	Livemode            bool                                    `json:"livemode"`
	Metadata            map[string]string                       `json:"metadata"`
	PaymentIntent       *string                                 `json:"payment_intent"`
	Reason              stripe.DisputeReason                    `json:"reason"`
	Status              stripe.DisputeStatus                    `json:"status"`
	EnhancedEligibility []stripe.DisputeEnhancedEligibilityType `json:"enhanced_eligibility_types"`
}

func (s *Server) renderDispute(d *dispute) jsonDispute {
	return jsonDispute{
		ID: d.ID, Object: "dispute", Amount: d.Amount, BalanceTransactions: []any{}, Charge: d.Charge, Created: d.Created,
		Currency: stripe.Currency(d.Currency),
		Evidence: &stripe.DisputeEvidence{UncategorizedText: d.Evidence},
		EvidenceDetails: &stripe.DisputeEvidenceDetails{DueBy: d.Created + 7*24*3600, HasEvidence: d.Evidence != "",
			PastDue: false, SubmissionCount: d.Submissions},
		IsChargeRefundable:  false,
		Metadata:            copyMeta(d.Metadata),
		PaymentIntent:       strPtr(d.PaymentIntent),
		Reason:              d.Reason,
		Status:              d.Status,
		EnhancedEligibility: []stripe.DisputeEnhancedEligibilityType{},
	}
}

func (s *Server) disputeDelay() time.Duration {
	if s.cfg.DisputeDelay > 0 {
		return s.cfg.DisputeDelay
	}
	return DefaultDisputeDelay
}

// disputeLaterLocked opens a dispute on a just-captured charge of the
// dispute card after the configured delay, as Stripe's test mode does.
func (s *Server) disputeLaterLocked(ch *charge) {
	if ch == nil || !ch.Captured {
		return
	}
	c, ok := s.card(ch.PaymentMethod)
	if !ok || c.fingerprint() != disputeFingerprint {
		return
	}
	id := ch.ID
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(s.disputeDelay())
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.closing:
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		defer s.commitLocked()
		s.openDisputeLocked(id)
	}()
}

// openDisputeLocked opens the dispute of charge id (once).
func (s *Server) openDisputeLocked(id string) {
	ch := s.charges[id]
	if ch == nil {
		return
	}
	for _, d := range s.disputeOrder {
		if d.Charge == id {
			return
		}
	}
	if s.disputes == nil {
		s.disputes = map[string]*dispute{}
	}
	d := &dispute{ID: newID("dp"), Seq: s.nextSeq(), Charge: ch.ID, PaymentIntent: ch.PaymentIntent, Amount: ch.AmountCaptured,
		Currency: ch.Currency, Reason: stripe.DisputeReasonFraudulent, Status: stripe.DisputeStatusNeedsResponse,
		Created: s.now().Unix(), Metadata: map[string]string{}}
	s.disputes[d.ID] = d
	s.disputeOrder = append(s.disputeOrder, d)
	s.emitLocked(&emitCtx{}, EventChargeDisputeCreated, ch.PaymentIntent, s.renderDispute(d))
	s.log.Info("dispute opened", "dispute", d.ID, "charge", ch.ID, "intent", ch.PaymentIntent)
}

func (s *Server) getDispute(c *apiCall) apiResult {
	return answerInPath(c, s.disputes, "dispute", "dispute", func(d *dispute) apiResult {
		return okResult(s.renderDispute(d))
	})
}

func (s *Server) listDisputes(c *apiCall) apiResult {
	wanted := ofPayment(c)
	page, more, e := paginate(c, s.disputeOrder, s.disputes,
		func(d *dispute) int64 { return d.Seq },
		func(d *dispute) int64 { return d.Created },
		func(d *dispute) bool { return wanted(d.PaymentIntent, d.Charge) })
	return listAnswer("/v1/disputes", page, more, e, func(d *dispute) any { return s.renderDispute(d) })
}

func disputeClosed(d *dispute) bool {
	return d.Status == stripe.DisputeStatusWon || d.Status == stripe.DisputeStatusLost
}

func (s *Server) closedDispute(d *dispute) *apiError {
	return &apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "dispute_already_closed",
		Message: fmt.Sprintf("This dispute (%s) is already closed (%s) and cannot be updated.", d.ID, d.Status)}}
}

// updateDispute takes evidence; submitted winning_evidence or
// losing_evidence closes the dispute, other evidence puts it under review.
func (s *Server) updateDispute(c *apiCall) apiResult {
	d, missing := inPath(c, s.disputes, "dispute", "dispute")
	if d == nil {
		return missing
	}
	submit, hasSubmit, e := formBool(c.form, "submit")
	if e != nil {
		return errResult(e, false)
	}
	if !hasSubmit {
		submit = true
	}
	meta, e := applyMetadata(copyMeta(d.Metadata), c.form)
	if e != nil {
		return errResult(e, false)
	}
	if disputeClosed(d) {
		return errResult(s.closedDispute(d), true)
	}
	d.Metadata = meta
	if v, ok := c.form["evidence[uncategorized_text]"]; ok && len(v) > 0 {
		d.Evidence = v[len(v)-1]
	}
	if !submit {
		return okResult(s.renderDispute(d))
	}
	d.Submissions++
	switch strings.TrimSpace(d.Evidence) {
	case WinningEvidence:
		s.closeDisputeLocked(&c.emitCtx, d, stripe.DisputeStatusWon)
	case LosingEvidence:
		s.closeDisputeLocked(&c.emitCtx, d, stripe.DisputeStatusLost)
	default:
		if d.Status != stripe.DisputeStatusUnderReview {
			d.Status = stripe.DisputeStatusUnderReview
			s.emitLocked(&c.emitCtx, EventChargeDisputeUpdated, d.PaymentIntent, s.renderDispute(d))
		}
	}
	return okResult(s.renderDispute(d))
}

// closeDispute accepts the dispute: it is lost.
func (s *Server) closeDispute(c *apiCall) apiResult {
	d, missing := inPath(c, s.disputes, "dispute", "dispute")
	if d == nil {
		return missing
	}
	if disputeClosed(d) {
		return errResult(s.closedDispute(d), true)
	}
	s.closeDisputeLocked(&c.emitCtx, d, stripe.DisputeStatusLost)
	return okResult(s.renderDispute(d))
}

func (s *Server) closeDisputeLocked(ec *emitCtx, d *dispute, status stripe.DisputeStatus) {
	d.Status = status
	s.emitLocked(ec, EventChargeDisputeClosed, d.PaymentIntent, s.renderDispute(d))
	s.log.Info("dispute closed", "dispute", d.ID, "status", status)
}
