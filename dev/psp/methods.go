package psp

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Card PaymentMethods created from a card number (POST /v1/payment_methods),
// beside the fixed test methods of testCards. Load tests create one per fan
// to get as many distinct cards, and so fingerprints, as they need.

// paymentMethod is the stored form of a card PaymentMethod created with
// POST /v1/payment_methods. The card number and CVC are not kept: Card holds
// what the API renders (brand, last4, expiry, the fingerprint computed from
// the number) and the behaviour the number gave it.
type paymentMethod struct {
	ID       string            `json:"id"`
	Seq      int64             `json:"seq"`
	Created  int64             `json:"created"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Card     testCard          `json:"card"`
}

// card resolves a payment method ID to its card: a fixed test method first,
// then a created one. Every place that takes or renders a payment method
// goes through it. The caller holds s.mu.
func (s *Server) card(pm string) (testCard, bool) {
	if c, ok := testCards[pm]; ok {
		return c, true
	}
	if pm == DisputeCard {
		return disputeCard, true
	}
	if m := s.methods[pm]; m != nil {
		return m.Card, true
	}
	return testCard{}, false
}

// getPaymentMethod serves a payment method, so that a client can read its
// card (fingerprint included) before or without confirming an intent.
func (s *Server) getPaymentMethod(c *apiCall) apiResult {
	id := c.r.PathValue("id")
	if _, known := s.card(id); !known {
		return errResult(noSuch("PaymentMethod", id, "payment_method"), false)
	}
	return okResult(s.renderPaymentMethod(id, s.now().Unix()))
}

// createPaymentMethod creates a card PaymentMethod from card[number],
// card[exp_month], card[exp_year] and card[cvc]. It emits no event: Stripe
// has none for a created PaymentMethod either.
func (s *Server) createPaymentMethod(c *apiCall) apiResult {
	now := s.now()
	card, e := parseCardParams(c.form, now)
	if e != nil {
		return errResult(e, false)
	}
	meta, e := applyMetadata(nil, c.form)
	if e != nil {
		return errResult(e, false)
	}
	m := &paymentMethod{ID: newID("pm"), Seq: s.nextSeq(), Created: now.Unix(), Metadata: meta, Card: card}
	s.methods[m.ID] = m
	s.logRec(record{Op: opPutMethod, Method: m})
	return okResult(s.renderPaymentMethod(m.ID, m.Created))
}

// parseCardParams validates the parameters of POST /v1/payment_methods as
// Stripe does and returns the card they describe. now decides whether the
// expiry is in the past.
func parseCardParams(f url.Values, now time.Time) (testCard, *apiError) {
	switch typ := f.Get("type"); typ {
	case "card":
	case "":
		return testCard{}, missingParam("type")
	default:
		return testCard{}, invalidParam("type", "The payment sandbox only creates card PaymentMethods; type must be card, not "+strconv.Quote(typ)+".")
	}
	if f.Get("card[token]") != "" {
		return testCard{}, invalidParam("card[token]", "The payment sandbox does not take card tokens; send card[number], card[exp_month], card[exp_year] and card[cvc].")
	}
	number := f.Get("card[number]")
	if number == "" {
		return testCard{}, missingParam("card[number]")
	}
	if !allDigits(number) || len(number) < 12 || len(number) > 19 {
		return testCard{}, cardError("invalid_number", "card[number]", "Your card number is invalid.")
	}
	if !luhnValid(number) {
		return testCard{}, cardError("incorrect_number", "card[number]", "Your card number is incorrect.")
	}
	month, e := formNeededInt(f, "card[exp_month]")
	if e != nil {
		return testCard{}, e
	}
	if month < 1 || month > 12 {
		return testCard{}, cardError("invalid_expiry_month", "card[exp_month]", "Your card's expiration month is invalid.")
	}
	year, e := formNeededInt(f, "card[exp_year]")
	if e != nil {
		return testCard{}, e
	}
	if year >= 0 && year < 100 { // Stripe takes two-digit years too
		year += 2000
	}
	now = now.UTC()
	thisYear, thisMonth := int64(now.Year()), int64(now.Month())
	if year < thisYear || year > thisYear+50 {
		return testCard{}, cardError("invalid_expiry_year", "card[exp_year]", "Your card's expiration year is invalid.")
	}
	if year == thisYear && month < thisMonth {
		return testCard{}, cardError("invalid_expiry_month", "card[exp_month]", "Your card's expiration month is invalid.")
	}
	cvc := f.Get("card[cvc]")
	if cvc != "" && (!allDigits(cvc) || len(cvc) < 3 || len(cvc) > 4) {
		return testCard{}, cardError("invalid_cvc", "card[cvc]", "Your card's security code is invalid.")
	}
	card := cardForNumber(number)
	card.ExpMonth, card.ExpYear, card.NoCVC = month, year, cvc == ""
	return card, nil
}

// cardForNumber is the card behind a valid number: a fixed test card's
// behaviour (outcome, decline codes, 3-D Secure, brand, funding, country)
// when the number is one of theirs, else a plain successful card with the
// brand its prefix says. The number itself is dropped; only its fingerprint
// and last four digits are kept.
func cardForNumber(number string) testCard {
	c, known := testCardsByNumber[number]
	if number == DisputeCardNumber {
		c, known = disputeCard, true
	}
	if !known {
		c = testCard{Brand: brandOf(number), Funding: "credit", Outcome: "succeed"}
	}
	c.Number = ""
	c.Last4 = number[len(number)-4:]
	c.Fingerprint = fingerprintOf(number)
	return c
}

// testCardsByNumber indexes testCards by card number. Where two test
// methods share a number (pm_card_us and pm_card_visa), the first in ID
// order wins; they behave the same.
var testCardsByNumber = func() map[string]testCard {
	ids := make([]string, 0, len(testCards))
	for id := range testCards {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make(map[string]testCard, len(ids))
	for _, id := range ids {
		c := testCards[id]
		if _, dup := out[c.Number]; !dup {
			out[c.Number] = c
		}
	}
	return out
}()

// brandOf guesses a card's brand from its number's prefix (the issuer
// identification number), as far as the sandbox needs it.
func brandOf(number string) string {
	switch {
	case strings.HasPrefix(number, "4"):
		return "visa"
	case prefixBetween(number, 2, 51, 55), prefixBetween(number, 4, 2221, 2720):
		return "mastercard"
	case strings.HasPrefix(number, "34"), strings.HasPrefix(number, "37"):
		return "amex"
	case strings.HasPrefix(number, "6011"), strings.HasPrefix(number, "65"):
		return "discover"
	}
	return "unknown"
}

// prefixBetween reports whether the first n digits of number, read as an
// integer, lie in [lo, hi].
func prefixBetween(number string, n, lo, hi int) bool {
	if len(number) < n {
		return false
	}
	v, err := strconv.Atoi(number[:n])
	return err == nil && v >= lo && v <= hi
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// luhnValid reports whether a string of digits passes the Luhn check.
func luhnValid(number string) bool {
	sum := 0
	double := false
	for i := len(number) - 1; i >= 0; i-- {
		d := int(number[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// cardError is a 402 card_error about one card[...] parameter, as Stripe
// answers an unusable card number, expiry or CVC.
func cardError(code, param, msg string) *apiError {
	return &apiError{Status: http.StatusPaymentRequired, Err: jsonError{Type: "card_error", Code: code, Param: param, Message: msg}}
}

// sensitiveParams are replaced by a hash in the parameters an idempotency
// record keeps, so that no card number or CVC reaches the state file.
var sensitiveParams = []string{"card[number]", "card[cvc]"}
