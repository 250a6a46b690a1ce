package psp

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

var currencyRE = regexp.MustCompile(`^[a-z]{3}$`)

const maxAmount = 99999999

func validCaptureMethod(m string) bool {
	return m == "automatic" || m == "automatic_async" || m == "manual"
}

// applyMetadata merges metadata[...] parameters into m (an empty value
// deletes a key, a bare "metadata=" clears all), as Stripe does.
func applyMetadata(m map[string]string, form map[string][]string) (map[string]string, *apiError) {
	upd, present, clear := formMap(form, "metadata")
	if !present {
		return m, nil
	}
	if clear {
		m = map[string]string{}
	}
	if m == nil {
		m = map[string]string{}
	}
	for k, v := range upd {
		if len(k) > 40 {
			return m, invalidParam("metadata", "Metadata keys can have up to 40 characters.")
		}
		if len(v) > 500 {
			return m, invalidParam("metadata", "Metadata values can have up to 500 characters.")
		}
		if k == FaultMetadataKey && v != "" {
			if _, err := parseFaults(v); err != nil {
				return m, invalidParam("metadata["+FaultMetadataKey+"]", err.Error())
			}
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	if len(m) > 50 {
		return m, invalidParam("metadata", "Metadata can have up to 50 keys.")
	}
	return m, nil
}

func (s *Server) nextSeq() int64 {
	s.seq++
	return s.seq
}

func (s *Server) putIntentLocked(pi *intent) { s.logRec(record{Op: opPutIntent, Intent: pi}) }

func (s *Server) createIntent(c *apiCall) apiResult {
	f := c.form
	amount, e := formNeededInt(f, "amount")
	if e != nil {
		return errResult(e, false)
	}
	if amount < 1 {
		return errResult(&apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "amount_too_small", Param: "amount",
			Message: "Amount must be at least 1 minor unit."}}, false)
	}
	if amount > maxAmount {
		return errResult(&apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "amount_too_large", Param: "amount",
			Message: fmt.Sprintf("Amount must be no more than %d minor units.", maxAmount)}}, false)
	}
	currency := strings.ToLower(f.Get("currency"))
	if currency == "" {
		return errResult(missingParam("currency"), false)
	}
	if !currencyRE.MatchString(currency) {
		return errResult(invalidParam("currency", "Invalid currency: "+f.Get("currency")+"."), false)
	}
	captureMethod := f.Get("capture_method")
	if captureMethod == "" {
		captureMethod = "automatic_async"
	}
	if !validCaptureMethod(captureMethod) {
		return errResult(invalidParam("capture_method", "Invalid capture_method: must be one of automatic, automatic_async, or manual."), false)
	}
	confirmationMethod := f.Get("confirmation_method")
	if confirmationMethod == "" {
		confirmationMethod = "automatic"
	}
	if confirmationMethod != "automatic" && confirmationMethod != "manual" {
		return errResult(invalidParam("confirmation_method", "Invalid confirmation_method: must be one of automatic or manual."), false)
	}
	confirm, _, e := formBool(f, "confirm")
	if e != nil {
		return errResult(e, false)
	}
	pm := f.Get("payment_method")
	if pm != "" {
		if _, known := s.card(pm); !known {
			return errResult(noSuch("PaymentMethod", pm, "payment_method"), false)
		}
	}
	threeDS, e := requestThreeDSecure(f)
	if e != nil {
		return errResult(e, false)
	}
	if confirm && pm == "" {
		return errResult(&apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "payment_intent_unexpected_state", Param: "payment_method",
			Message: "You cannot confirm this PaymentIntent because it's missing a payment method. To confirm the PaymentIntent, pass a payment_method."}}, false)
	}
	meta, e := applyMetadata(nil, f)
	if e != nil {
		return errResult(e, false)
	}
	now := s.now().Unix()
	id := newID("pi")
	pi := &intent{
		ID:                  id,
		Seq:                 s.nextSeq(),
		ClientSecret:        id + "_secret_" + randomString(24),
		Amount:              amount,
		Currency:            currency,
		CaptureMethod:       captureMethod,
		ConfirmationMethod:  confirmationMethod,
		Status:              StatusRequiresPaymentMethod,
		PaymentMethod:       pm,
		Metadata:            meta,
		Description:         f.Get("description"),
		ReturnURL:           f.Get("return_url"),
		RequestThreeDSecure: threeDS,
		ReceiptEmail:        f.Get("receipt_email"),
		Created:             now,
	}
	if pm != "" {
		pi.Status = StatusRequiresConfirmation
	}
	s.intents[id] = pi
	s.intentOrder = append(s.intentOrder, pi)
	s.putIntentLocked(pi)
	s.emitLocked(&c.emitCtx, EventPaymentIntentCreated, pi.ID, s.renderIntent(pi, nil))
	if confirm {
		res := s.confirmAndRespond(c, pi, pm, pi.ReturnURL)
		return res
	}
	return okResult(s.renderIntent(pi, formExpand(f)))
}

// inPath is the object of m that the request's path names: nil, with the
// 404 Stripe answers (naming it as what, in param), when there is none.
func inPath[T any](c *apiCall, m map[string]*T, what, param string) (*T, apiResult) {
	id := c.r.PathValue("id")
	if x := m[id]; x != nil {
		return x, apiResult{}
	}
	return nil, errResult(noSuch(what, id, param), false)
}

// answerInPath is a retrieve endpoint: answer on the object the path
// names, or resource_missing.
func answerInPath[T any](c *apiCall, m map[string]*T, what, param string, answer func(*T) apiResult) apiResult {
	x, missing := inPath(c, m, what, param)
	if x == nil {
		return missing
	}
	return answer(x)
}

func (s *Server) getIntent(c *apiCall) apiResult {
	return answerInPath(c, s.intents, "payment_intent", "intent", func(pi *intent) apiResult {
		return okResult(s.renderIntent(pi, formExpand(c.form)))
	})
}

func (s *Server) updateIntent(c *apiCall) apiResult {
	pi, missing := inPath(c, s.intents, "payment_intent", "intent")
	if pi == nil {
		return missing
	}
	f := c.form
	editable := pi.Status == StatusRequiresPaymentMethod || pi.Status == StatusRequiresConfirmation || pi.Status == StatusRequiresAction
	for _, p := range []string{"amount", "currency", "payment_method", "capture_method"} {
		if _, ok := f[p]; ok && !editable {
			return errResult(s.unexpectedState(pi, fmt.Sprintf("You cannot update %s on a PaymentIntent with a status of %s.", p, pi.Status)), true)
		}
	}
	amount, hasAmount, e := formInt(f, "amount")
	if e != nil {
		return errResult(e, false)
	}
	if hasAmount && (amount < 1 || amount > maxAmount) {
		return errResult(invalidParam("amount", "Invalid amount."), false)
	}
	currency := strings.ToLower(f.Get("currency"))
	if currency != "" && !currencyRE.MatchString(currency) {
		return errResult(invalidParam("currency", "Invalid currency: "+f.Get("currency")+"."), false)
	}
	cm := f.Get("capture_method")
	if cm != "" && !validCaptureMethod(cm) {
		return errResult(invalidParam("capture_method", "Invalid capture_method: must be one of automatic, automatic_async, or manual."), false)
	}
	pm := f.Get("payment_method")
	if pm != "" {
		if _, known := s.card(pm); !known {
			return errResult(noSuch("PaymentMethod", pm, "payment_method"), false)
		}
	}
	meta, e := applyMetadata(copyMeta(pi.Metadata), f)
	if e != nil {
		return errResult(e, false)
	}
	pi.Metadata = meta
	if hasAmount {
		pi.Amount = amount
	}
	if currency != "" {
		pi.Currency = currency
	}
	if cm != "" {
		pi.CaptureMethod = cm
	}
	if v, ok := f["description"]; ok && len(v) > 0 {
		pi.Description = v[len(v)-1]
	}
	if v, ok := f["receipt_email"]; ok && len(v) > 0 {
		pi.ReceiptEmail = v[len(v)-1]
	}
	if pm != "" {
		pi.PaymentMethod = pm
		pi.Status = StatusRequiresConfirmation
		pi.NextActionURL = ""
	}
	s.putIntentLocked(pi)
	return okResult(s.renderIntent(pi, formExpand(f)))
}

func (s *Server) confirmIntent(c *apiCall) apiResult {
	pi, missing := inPath(c, s.intents, "payment_intent", "intent")
	if pi == nil {
		return missing
	}
	pm := c.form.Get("payment_method")
	if pm != "" {
		if _, known := s.card(pm); !known {
			return errResult(noSuch("PaymentMethod", pm, "payment_method"), false)
		}
	}
	if cm := c.form.Get("capture_method"); cm != "" {
		if !validCaptureMethod(cm) {
			return errResult(invalidParam("capture_method", "Invalid capture_method: must be one of automatic, automatic_async, or manual."), false)
		}
		if confirmable(pi.Status) {
			pi.CaptureMethod = cm
		}
	}
	returnURL := c.form.Get("return_url")
	if returnURL == "" {
		returnURL = pi.ReturnURL
	}
	threeDS, e := requestThreeDSecure(c.form)
	if e != nil {
		return errResult(e, false)
	}
	if threeDS != "" && confirmable(pi.Status) {
		pi.RequestThreeDSecure = threeDS
	}
	return s.confirmAndRespond(c, pi, pm, returnURL)
}

// requestThreeDSecure reads payment_method_options[card][request_three_d_secure].
func requestThreeDSecure(f url.Values) (string, *apiError) {
	v := f.Get("payment_method_options[card][request_three_d_secure]")
	switch v {
	case "", "automatic", "any", "challenge":
		return v, nil
	}
	return "", invalidParam("payment_method_options[card][request_three_d_secure]", "Invalid request_three_d_secure: must be one of automatic, any or challenge.")
}

func confirmable(status string) bool {
	return status == StatusRequiresPaymentMethod || status == StatusRequiresConfirmation || status == StatusRequiresAction
}

// confirmAndRespond runs a confirmation and renders its API result.
func (s *Server) confirmAndRespond(c *apiCall, pi *intent, pm, returnURL string) apiResult {
	if e := s.confirmLocked(&c.emitCtx, pi, pm, returnURL, s.baseURL(c.r)); e != nil {
		return errResult(e, true)
	}
	res := okResult(s.renderIntent(pi, formExpand(c.form)))
	res.losable = true
	return res
}

// confirmLocked confirms pi with payment method pm (or the one attached).
// A decline returns the 402 card error; the intent is updated either way.
func (s *Server) confirmLocked(ec *emitCtx, pi *intent, pm, returnURL, base string) *apiError {
	if !confirmable(pi.Status) {
		return s.unexpectedState(pi, fmt.Sprintf("You cannot confirm this PaymentIntent because it has a status of %s. Only a PaymentIntent with one of the following statuses may be confirmed: requires_payment_method, requires_confirmation, requires_action.", pi.Status))
	}
	if pm == "" {
		pm = pi.PaymentMethod
	}
	if pm == "" {
		return &apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "payment_intent_unexpected_state", Param: "payment_method",
			Message:       "You cannot confirm this PaymentIntent because it's missing a payment method. To confirm the PaymentIntent, pass a payment_method.",
			PaymentIntent: mustJSON(s.renderIntent(pi, nil))}}
	}
	card, known := s.card(pm)
	if !known {
		return noSuch("PaymentMethod", pm, "payment_method")
	}
	if returnURL != "" {
		pi.ReturnURL = returnURL
	}
	pi.PaymentMethod = pm
	pi.LastPaymentError = nil
	pi.NextActionURL = ""
	outcome := card.Outcome
	if outcome != "decline" && (pi.RequestThreeDSecure == "any" || pi.RequestThreeDSecure == "challenge") {
		outcome = "3ds" // asked for: every card is challenged
	}
	switch outcome {
	case "3ds":
		pi.Status = StatusRequiresAction
		pi.NextActionURL = base + "/checkout/" + pi.ID + "/challenge"
		s.putIntentLocked(pi)
		s.emitLocked(ec, EventPaymentIntentRequiresAction, pi.ID, s.renderIntent(pi, nil))
		return nil
	case "decline":
		return s.declineLocked(ec, pi, pm, card)
	default:
		s.authorizeLocked(ec, pi, pm)
		return nil
	}
}

// newCharge is a new attempt to charge the intent's amount to payment
// method pm, succeeded or failed; the caller records the outcome.
func (s *Server) newCharge(pi *intent, pm, status string) *charge {
	return &charge{
		ID:            newID("ch"),
		Seq:           s.nextSeq(),
		PaymentIntent: pi.ID,
		PaymentMethod: pm,
		Amount:        pi.Amount,
		Status:        status,
		Currency:      pi.Currency,
		Created:       s.now().Unix(),
		Description:   pi.Description,
	}
}

// authorizeLocked records a successful authorisation: requires_capture for
// manual capture (amount_capturable_updated), succeeded otherwise.
func (s *Server) authorizeLocked(ec *emitCtx, pi *intent, pm string) {
	ch := s.newCharge(pi, pm, "succeeded")
	ch.Paid = true
	s.charges[ch.ID] = ch
	pi.LatestCharge = ch.ID
	pi.PaymentMethod = pm
	pi.LastPaymentError = nil
	pi.NextActionURL = ""
	if pi.manual() {
		pi.Status = StatusRequiresCapture
		pi.AmountCapturable = pi.Amount
		s.logRec(record{Op: opPutCharge, Charge: ch})
		s.putIntentLocked(pi)
		s.emitLocked(ec, EventPaymentIntentAmountCapturableUpdated, pi.ID, s.renderIntent(pi, nil))
		return
	}
	ch.Captured = true
	ch.AmountCaptured = pi.Amount
	pi.Status = StatusSucceeded
	pi.AmountReceived = pi.Amount
	s.logRec(record{Op: opPutCharge, Charge: ch})
	s.putIntentLocked(pi)
	s.emitLocked(ec, EventPaymentIntentSucceeded, pi.ID, s.renderIntent(pi, nil))
	s.disputeLaterLocked(ch)
}

// declineLocked records a declined attempt and returns the card error.
func (s *Server) declineLocked(ec *emitCtx, pi *intent, pm string, card testCard) *apiError {
	ch := s.newCharge(pi, pm, "failed")
	ch.FailureCode, ch.FailureMessage, ch.DeclineCode = card.Code, card.Message, card.DeclineCode
	s.charges[ch.ID] = ch
	s.logRec(record{Op: opPutCharge, Charge: ch})
	pi.LatestCharge = ch.ID
	pi.Status = StatusRequiresPaymentMethod
	pi.PaymentMethod = ""
	pi.NextActionURL = ""
	pi.LastPaymentError = &paymentError{Type: "card_error", Code: card.Code, DeclineCode: card.DeclineCode, Message: card.Message, Charge: ch.ID, PaymentMethod: pm}
	s.putIntentLocked(pi)
	rendered := s.renderIntent(pi, nil)
	s.emitLocked(ec, EventPaymentIntentPaymentFailed, pi.ID, rendered)
	return &apiError{Status: http.StatusPaymentRequired, Err: jsonError{
		Type:          "card_error",
		Code:          card.Code,
		DeclineCode:   card.DeclineCode,
		Message:       card.Message,
		Charge:        ch.ID,
		PaymentIntent: mustJSON(rendered),
		PaymentMethod: s.renderPaymentMethod(pm, pi.Created),
	}}
}

// failAuthenticationLocked records a failed 3-D Secure challenge.
func (s *Server) failAuthenticationLocked(ec *emitCtx, pi *intent) {
	pm := pi.PaymentMethod
	pi.Status = StatusRequiresPaymentMethod
	pi.PaymentMethod = ""
	pi.NextActionURL = ""
	pi.LastPaymentError = &paymentError{Type: "invalid_request_error", Code: "payment_intent_authentication_failure", PaymentMethod: pm,
		Message: "The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again."}
	s.putIntentLocked(pi)
	s.emitLocked(ec, EventPaymentIntentPaymentFailed, pi.ID, s.renderIntent(pi, nil))
}

func (s *Server) captureIntent(c *apiCall) apiResult {
	pi, missing := inPath(c, s.intents, "payment_intent", "intent")
	if pi == nil {
		return missing
	}
	amt, has, e := formInt(c.form, "amount_to_capture")
	if e != nil {
		return errResult(e, false)
	}
	if pi.Status != StatusRequiresCapture {
		return errResult(s.unexpectedState(pi, fmt.Sprintf("This PaymentIntent could not be captured because it has a status of %s. Only a PaymentIntent with one of the following statuses may be captured: requires_capture.", pi.Status)), true)
	}
	if !has {
		amt = pi.AmountCapturable
	}
	if amt < 1 {
		return errResult(invalidParam("amount_to_capture", "amount_to_capture must be a positive integer."), false)
	}
	if amt > pi.AmountCapturable {
		return errResult(&apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "amount_too_large", Param: "amount_to_capture",
			Message: fmt.Sprintf("The amount to capture (%d) is greater than the amount capturable (%d).", amt, pi.AmountCapturable)}}, true)
	}
	meta, e := applyMetadata(copyMeta(pi.Metadata), c.form)
	if e != nil {
		return errResult(e, false)
	}
	pi.Metadata = meta
	if ch := s.charges[pi.LatestCharge]; ch != nil {
		ch.Captured = true
		ch.AmountCaptured = amt
		s.logRec(record{Op: opPutCharge, Charge: ch})
	}
	pi.Status = StatusSucceeded
	pi.AmountReceived = amt
	pi.AmountCapturable = 0
	s.putIntentLocked(pi)
	s.emitLocked(&c.emitCtx, EventPaymentIntentSucceeded, pi.ID, s.renderIntent(pi, nil))
	s.disputeLaterLocked(s.charges[pi.LatestCharge])
	res := okResult(s.renderIntent(pi, formExpand(c.form)))
	res.losable = true
	return res
}

var cancellationReasons = map[string]bool{"duplicate": true, "fraudulent": true, "requested_by_customer": true, "abandoned": true}

func (s *Server) cancelIntent(c *apiCall) apiResult {
	pi, missing := inPath(c, s.intents, "payment_intent", "intent")
	if pi == nil {
		return missing
	}
	reason := c.form.Get("cancellation_reason")
	if reason != "" && !cancellationReasons[reason] {
		return errResult(invalidParam("cancellation_reason", "Invalid cancellation_reason: must be one of duplicate, fraudulent, requested_by_customer, or abandoned."), false)
	}
	switch pi.Status {
	case StatusRequiresPaymentMethod, StatusRequiresCapture, StatusRequiresConfirmation, StatusRequiresAction, StatusProcessing:
	default:
		return errResult(s.unexpectedState(pi, fmt.Sprintf("You cannot cancel this PaymentIntent because it has a status of %s. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.", pi.Status)), true)
	}
	if pi.Status == StatusRequiresCapture {
		// Voiding the authorisation releases the held funds.
		if ch := s.charges[pi.LatestCharge]; ch != nil {
			ch.AmountRefunded = ch.Amount
			ch.Refunded = true
			s.logRec(record{Op: opPutCharge, Charge: ch})
		}
	}
	pi.Status = StatusCanceled
	pi.CanceledAt = s.now().Unix()
	pi.CancellationReason = reason
	pi.AmountCapturable = 0
	pi.NextActionURL = ""
	s.putIntentLocked(pi)
	s.emitLocked(&c.emitCtx, EventPaymentIntentCanceled, pi.ID, s.renderIntent(pi, nil))
	return okResult(s.renderIntent(pi, formExpand(c.form)))
}

// ---- lists and search ----

const (
	defaultLimit = 10
	maxLimit     = 100
)

func listLimit(c *apiCall) (int, *apiError) {
	n, ok, e := formInt(c.form, "limit")
	if e != nil {
		return 0, e
	}
	if !ok {
		return defaultLimit, nil
	}
	if n < 1 || n > maxLimit {
		return 0, invalidParam("limit", "Invalid limit: must be between 1 and 100.")
	}
	return int(n), nil
}

type listPage struct {
	Object  string `json:"object"`
	Data    []any  `json:"data"`
	HasMore bool   `json:"has_more"`
	URL     string `json:"url"`
}

type searchPage struct {
	Object   string  `json:"object"`
	Data     []any   `json:"data"`
	HasMore  bool    `json:"has_more"`
	NextPage *string `json:"next_page"`
	URL      string  `json:"url"`
}

// createdFilter implements created=, created[gt]=, [gte], [lt], [lte].
func createdFilter(c *apiCall) (func(int64) bool, *apiError) {
	var preds []func(int64) bool
	for _, op := range []string{"", "gt", "gte", "lt", "lte"} {
		key := "created"
		if op != "" {
			key = "created[" + op + "]"
		}
		v, ok, e := formInt(c.form, key)
		if e != nil {
			return nil, e
		}
		if !ok {
			continue
		}
		switch op {
		case "":
			preds = append(preds, func(x int64) bool { return x == v })
		case "gt":
			preds = append(preds, func(x int64) bool { return x > v })
		case "gte":
			preds = append(preds, func(x int64) bool { return x >= v })
		case "lt":
			preds = append(preds, func(x int64) bool { return x < v })
		case "lte":
			preds = append(preds, func(x int64) bool { return x <= v })
		}
	}
	return func(x int64) bool {
		for _, p := range preds {
			if !p(x) {
				return false
			}
		}
		return true
	}, nil
}

// paginate walks items (ascending Seq) newest first honouring limit,
// starting_after and ending_before; byID finds a cursor's item, seq an
// item's Seq. Every list filters on created (createdFilter, on the time
// created reads), and on keep when it is not nil.
func paginate[E any](c *apiCall, items []*E, byID map[string]*E, seq, created func(*E) int64, keep func(*E) bool) ([]*E, bool, *apiError) {
	inCreated, e := createdFilter(c)
	if e != nil {
		return nil, false, e
	}
	limit, e := listLimit(c)
	if e != nil {
		return nil, false, e
	}
	after, before := c.form.Get("starting_after"), c.form.Get("ending_before")
	if after != "" && before != "" {
		return nil, false, invalidParam("starting_after", "You may only specify one of these parameters: starting_after, ending_before.")
	}
	var out []*E
	// take adds items[i] to the page if keep wants it; false when the
	// page is already full (so there are more).
	take := func(i int) bool {
		if !inCreated(created(items[i])) || (keep != nil && !keep(items[i])) {
			return true
		}
		if len(out) == limit {
			return false
		}
		out = append(out, items[i])
		return true
	}
	if before != "" {
		x := byID[before]
		if x == nil {
			return nil, false, noSuch("object", before, "ending_before")
		}
		// Items newer than the cursor, the `limit` closest to it, newest first.
		start := sort.Search(len(items), func(i int) bool { return seq(items[i]) > seq(x) })
		hasMore := false
		for i := start; i < len(items); i++ {
			if !take(i) {
				hasMore = true
				break
			}
		}
		slices.Reverse(out)
		return out, hasMore, nil
	}
	end := len(items)
	if after != "" {
		x := byID[after]
		if x == nil {
			return nil, false, noSuch("object", after, "starting_after")
		}
		end = sort.Search(len(items), func(i int) bool { return seq(items[i]) >= seq(x) })
	}
	hasMore := false
	for i := end - 1; i >= 0; i-- {
		if !take(i) {
			hasMore = true
			break
		}
	}
	return out, hasMore, nil
}

func (s *Server) listIntents(c *apiCall) apiResult {
	page, more, e := paginate(c, s.intentOrder, s.intents,
		func(pi *intent) int64 { return pi.Seq },
		func(pi *intent) int64 { return pi.Created }, nil)
	expand := expandData(c)
	return listAnswer("/v1/payment_intents", page, more, e, func(pi *intent) any { return s.renderIntent(pi, expand) })
}

// listAnswer answers a list endpoint at url with the page paginate cut, each
// object rendered by render, or with paginate's error.
func listAnswer[E any](url string, page []*E, more bool, e *apiError, render func(*E) any) apiResult {
	if e != nil {
		return errResult(e, false)
	}
	out := listPage{Object: "list", Data: make([]any, 0, len(page)), HasMore: more, URL: url}
	for _, x := range page {
		out.Data = append(out.Data, render(x))
	}
	return okResult(out)
}

// ofPayment is the payment_intent and charge filters of a list: whether an
// object of that intent and charge is wanted (an absent filter wants all).
func ofPayment(c *apiCall) func(intentID, chargeID string) bool {
	piID, chID := c.form.Get("payment_intent"), c.form.Get("charge")
	return func(intentID, chargeID string) bool {
		return (piID == "" || intentID == piID) && (chID == "" || chargeID == chID)
	}
}

// expandData maps expand[]=data.latest_charge to latest_charge for lists.
func expandData(c *apiCall) expandSet {
	e := expandSet{}
	for k := range formExpand(c.form) {
		e[strings.TrimPrefix(k, "data.")] = true
	}
	return e
}

func (s *Server) searchIntents(c *apiCall) apiResult {
	q := c.form.Get("query")
	if strings.TrimSpace(q) == "" {
		return errResult(missingParam("query"), false)
	}
	match, err := parseSearch(q)
	if err != nil {
		return errResult(&apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "parameter_invalid", Param: "query", Message: err.Error()}}, false)
	}
	limit, e := listLimit(c)
	if e != nil {
		return errResult(e, false)
	}
	end := len(s.intentOrder)
	if p := c.form.Get("page"); p != "" {
		var seq int64
		if _, err := fmt.Sscanf(p, "page_%d", &seq); err != nil {
			return errResult(invalidParam("page", "Invalid page token."), false)
		}
		end = sort.Search(len(s.intentOrder), func(i int) bool { return s.intentOrder[i].Seq >= seq })
	}
	out := searchPage{Object: "search_result", Data: []any{}, URL: "/v1/payment_intents/search"}
	var last *intent
	expand := expandData(c)
	for i := end - 1; i >= 0; i-- {
		pi := s.intentOrder[i]
		if !match(pi) {
			continue
		}
		if len(out.Data) == limit {
			out.HasMore = true
			next := fmt.Sprintf("page_%d", last.Seq)
			out.NextPage = &next
			break
		}
		out.Data = append(out.Data, s.renderIntent(pi, expand))
		last = pi
	}
	return okResult(out)
}
