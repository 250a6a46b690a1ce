package psp

import (
	"fmt"
	"sort"
)

var refundReasons = map[string]bool{"duplicate": true, "fraudulent": true, "requested_by_customer": true}

func (s *Server) createRefund(c *apiCall) apiResult {
	f := c.form
	piID, chID := f.Get("payment_intent"), f.Get("charge")
	if piID == "" && chID == "" {
		return errResult(&apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "parameter_missing", Param: "payment_intent",
			Message: "One of the following params should be provided for this request: payment_intent or charge."}}, false)
	}
	var pi *intent
	var ch *charge
	if chID != "" {
		ch = s.charges[chID]
		if ch == nil {
			return errResult(noSuch("charge", chID, "charge"), false)
		}
		pi = s.intents[ch.PaymentIntent]
		if piID != "" && piID != ch.PaymentIntent {
			return errResult(invalidParam("payment_intent", "The charge does not belong to this PaymentIntent."), false)
		}
	} else {
		pi = s.intents[piID]
		if pi == nil {
			return errResult(noSuch("payment_intent", piID, "payment_intent"), false)
		}
		ch = s.charges[pi.LatestCharge]
	}
	amount, hasAmount, e := formInt(f, "amount")
	if e != nil {
		return errResult(e, false)
	}
	reason := f.Get("reason")
	if reason != "" && !refundReasons[reason] {
		return errResult(invalidParam("reason", "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer."), false)
	}
	meta, e := applyMetadata(nil, f)
	if e != nil {
		return errResult(e, false)
	}
	if pi == nil || ch == nil || ch.Status != "succeeded" {
		id := piID
		if id == "" {
			id = chID
		}
		return errResult(&apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "charge_not_refundable",
			Message: fmt.Sprintf("This PaymentIntent (%s) does not have a successful charge to refund.", id)}}, true)
	}
	if !ch.Captured {
		return errResult(&apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "charge_not_refundable",
			Message:       fmt.Sprintf("This PaymentIntent (%s) has not been captured, so it cannot be refunded. Cancel the PaymentIntent to release the authorization instead.", pi.ID),
			PaymentIntent: mustJSON(s.renderIntent(pi, nil))}}, true)
	}
	remaining := ch.AmountCaptured - ch.AmountRefunded
	if remaining <= 0 {
		return errResult(&apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "charge_already_refunded", Charge: ch.ID,
			Message: fmt.Sprintf("Charge %s has already been refunded.", ch.ID)}}, true)
	}
	if !hasAmount {
		amount = remaining
	}
	if amount < 1 {
		return errResult(invalidParam("amount", "Refund amount must be a positive integer."), false)
	}
	if amount > remaining {
		return errResult(&apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "amount_too_large", Param: "amount", Charge: ch.ID,
			Message: fmt.Sprintf("Refund amount (%d) is greater than unrefunded amount on charge (%d)", amount, remaining)}}, true)
	}
	rf := &refund{
		ID:            newID("re"),
		Seq:           s.nextSeq(),
		Amount:        amount,
		Charge:        ch.ID,
		PaymentIntent: pi.ID,
		Currency:      ch.Currency,
		Created:       s.now().Unix(),
		Metadata:      meta,
		Reason:        reason,
		Status:        "succeeded",
	}
	ch.AmountRefunded += amount
	ch.Refunded = ch.AmountRefunded >= ch.AmountCaptured
	s.refunds[rf.ID] = rf
	s.refundOrder = append(s.refundOrder, rf)
	s.logRec(record{Op: opPutRefund, Refund: rf})
	s.logRec(record{Op: opPutCharge, Charge: ch})
	s.emitLocked(&c.emitCtx, EventRefundCreated, pi.ID, s.renderRefund(rf))
	s.emitLocked(&c.emitCtx, EventChargeRefunded, pi.ID, s.renderCharge(ch))
	return okResult(s.renderRefund(rf))
}

func (s *Server) getRefund(c *apiCall) apiResult {
	return answerInPath(c, s.refunds, "refund", "id", func(rf *refund) apiResult {
		return okResult(s.renderRefund(rf))
	})
}

func (s *Server) listRefunds(c *apiCall) apiResult {
	wanted := ofPayment(c)
	page, more, e := paginate(c, s.refundOrder, s.refunds,
		func(rf *refund) int64 { return rf.Seq },
		func(rf *refund) int64 { return rf.Created },
		func(rf *refund) bool { return wanted(rf.PaymentIntent, rf.Charge) })
	return listAnswer("/v1/refunds", page, more, e, func(rf *refund) any { return s.renderRefund(rf) })
}

func (s *Server) getCharge(c *apiCall) apiResult {
	return answerInPath(c, s.charges, "charge", "id", func(ch *charge) apiResult {
		return okResult(s.renderCharge(ch))
	})
}

func (s *Server) getEvent(c *apiCall) apiResult {
	return answerInPath(c, s.eventByID, "event", "id", func(ev *event) apiResult {
		return apiResult{status: 200, body: []byte(ev.Payload), store: true}
	})
}

// listEvents lists the retained recent events, newest first; filter with
// type= (a trailing ".*" wildcard is allowed) or types[]=.
func (s *Server) listEvents(c *apiCall) apiResult {
	types := map[string]bool{}
	for _, t := range formList(c.form, "types") {
		types[t] = true
	}
	typ := c.form.Get("type")
	prefix := ""
	if len(typ) > 2 && typ[len(typ)-2:] == ".*" {
		prefix, typ = typ[:len(typ)-1], ""
	}
	page, more, e := paginate(c, s.events, s.eventByID,
		func(ev *event) int64 { return ev.Seq },
		func(ev *event) int64 { return ev.Created },
		func(ev *event) bool {
			if typ != "" && ev.Type != typ {
				return false
			}
			if prefix != "" && (len(ev.Type) < len(prefix) || ev.Type[:len(prefix)] != prefix) {
				return false
			}
			return len(types) == 0 || types[ev.Type]
		})
	// Events are stored pre-rendered; splice them in verbatim.
	return listAnswer("/v1/events", page, more, e, func(ev *event) any { return rawJSON(ev.Payload) })
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// sortEvents keeps s.events ordered by Seq after a load.
func sortEvents(evs []*event) {
	sort.Slice(evs, func(i, j int) bool { return evs[i].Seq < evs[j].Seq })
}
