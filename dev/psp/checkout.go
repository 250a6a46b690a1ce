package psp

import (
	"crypto/subtle"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

// The hosted test checkout: a browser page where a tester picks a test card
// for an intent created without a payment method, and the 3-D Secure
// challenge page with Complete and Fail buttons. No API key is needed: the
// client secret identifies the payer, as with Stripe.js. The challenge page
// also accepts requests without the client secret, so the next_action URL
// works as handed out.

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · Encore payment sandbox</title>
<style>
body{font-family:system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem;color:#0e1a2b}
.box{border:1px solid #ccd;border-radius:.5rem;padding:1rem 1.25rem;margin:1rem 0}
.amount{font-size:2rem;font-weight:600}.muted{color:#667}.err{color:#b00020}
label{display:block;margin:.4rem 0}button{font-size:1rem;padding:.5rem 1.25rem;margin:.5rem .5rem 0 0;cursor:pointer}
code{background:#f3f3f7;padding:0 .25rem}
</style></head><body>
<p class="muted">Encore payment sandbox: test mode, no real money moves.</p>
<h1>{{.Title}}</h1>
{{if .Intent}}<div class="box">
<div class="amount">{{.Amount}}</div>
{{if .Intent.Description}}<div>{{.Intent.Description}}</div>{{end}}
<div class="muted">PaymentIntent <code>{{.Intent.ID}}</code>, status <code id="status">{{.Intent.Status}}</code></div>
</div>{{end}}
{{if .Error}}<p class="err" id="error">{{.Error}}</p>{{end}}
{{if .Message}}<p id="message">{{.Message}}</p>{{end}}
{{if .PayForm}}<form method="post" action="{{.PayAction}}">
<input type="hidden" name="client_secret" value="{{.ClientSecret}}">
<fieldset class="box"><legend>Test card</legend>
{{range $i, $c := .Cards}}<label><input type="radio" name="payment_method" value="{{$c.ID}}"{{if eq $i 0}} checked{{end}}> {{$c.Label}}</label>{{end}}
</fieldset>
<button type="submit">Pay {{.Amount}}</button>
</form>{{end}}
{{if .Challenge}}<div class="box"><p>Your bank asks you to confirm this payment (3-D Secure test).</p>
<form method="post" action="{{.ChallengeAction}}">
<input type="hidden" name="client_secret" value="{{.ClientSecret}}">
<button type="submit" name="action" value="complete">Complete</button>
<button type="submit" name="action" value="fail">Fail</button>
</form></div>{{end}}
{{if .ChallengeLink}}<p><a href="{{.ChallengeLink}}">Continue to the 3-D Secure challenge</a></p>{{end}}
{{if .ReturnLink}}<p><a href="{{.ReturnLink}}">Return to the merchant</a></p>{{end}}
</body></html>
`))

type pageData struct {
	Title           string
	Intent          *intent
	Amount          string
	Error           string
	Message         string
	PayForm         bool
	PayAction       string
	ClientSecret    string
	Cards           []struct{ ID, Label string }
	Challenge       bool
	ChallengeAction string
	ChallengeLink   string
	ReturnLink      string
}

var zeroDecimal = map[string]bool{"bif": true, "clp": true, "djf": true, "gnf": true, "jpy": true, "kmf": true, "krw": true,
	"mga": true, "pyg": true, "rwf": true, "ugx": true, "vnd": true, "vuv": true, "xaf": true, "xof": true, "xpf": true}

func formatAmount(amount int64, currency string) string {
	cur := strings.ToUpper(currency)
	if zeroDecimal[currency] {
		return fmt.Sprintf("%d %s", amount, cur)
	}
	sign := ""
	if amount < 0 {
		sign, amount = "-", -amount
	}
	return fmt.Sprintf("%s%d.%02d %s", sign, amount/100, amount%100, cur)
}

func renderPage(w http.ResponseWriter, status int, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = pageTmpl.Execute(w, d)
}

func secretOK(pi *intent, secret string) bool {
	return secret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(pi.ClientSecret)) == 1
}

// wantsJSON reports whether a programmatic caller asked for the intent as
// JSON instead of HTML.
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func (s *Server) intentPage(pi *intent, title string) pageData {
	cp := *pi
	return pageData{Title: title, Intent: &cp, Amount: formatAmount(pi.Amount, pi.Currency)}
}

// settled makes d the page of an intent with nothing pending: message, and
// the link back to the merchant if the intent has a return_url.
func (d *pageData) settled(message string) {
	d.Message = message
	d.ReturnLink = returnLink(d.Intent)
}

// returnLink builds the return_url redirect the way Stripe does, with the
// intent's outcome as redirect_status.
func returnLink(pi *intent) string {
	if pi.ReturnURL == "" {
		return ""
	}
	u, err := url.Parse(pi.ReturnURL)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Set("payment_intent", pi.ID)
	q.Set("payment_intent_client_secret", pi.ClientSecret)
	q.Set("redirect_status", redirectStatus(pi))
	u.RawQuery = q.Encode()
	return u.String()
}

func redirectStatus(pi *intent) string {
	switch pi.Status {
	case StatusSucceeded, StatusRequiresCapture, StatusProcessing:
		return "succeeded"
	}
	return "failed"
}

func (s *Server) checkoutPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	secret := r.URL.Query().Get("client_secret")
	s.mu.Lock()
	pi := s.intents[id]
	if pi == nil || !secretOK(pi, secret) {
		s.mu.Unlock()
		renderPage(w, http.StatusNotFound, pageData{Title: "Checkout not found",
			Error: "No payment matches this link. Open it with ?client_secret=<the PaymentIntent's client secret>."})
		return
	}
	d := s.intentPage(pi, "Pay")
	status := pi.Status
	s.mu.Unlock()
	d.ClientSecret = secret
	switch status {
	case StatusRequiresPaymentMethod, StatusRequiresConfirmation:
		d.PayForm = true
		d.PayAction = "/checkout/" + url.PathEscape(id)
		d.Cards = checkoutCards
		if d.Intent.LastPaymentError != nil {
			d.Error = d.Intent.LastPaymentError.Message + " Try another card."
		}
	case StatusRequiresAction:
		d.ChallengeLink = "/checkout/" + url.PathEscape(id) + "/challenge?client_secret=" + url.QueryEscape(secret)
	default:
		d.Title = "Payment " + status
		d.settled("Nothing left to pay here.")
	}
	renderPage(w, http.StatusOK, d)
}

// checkoutPay answers the pay form; see hostedForm.
func (s *Server) checkoutPay(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	secret, pm := r.PostForm.Get("client_secret"), r.PostForm.Get("payment_method")
	s.mu.Lock()
	pi := s.intents[id]
	if pi == nil || !secretOK(pi, secret) {
		s.mu.Unlock()
		renderPage(w, http.StatusNotFound, pageData{Title: "Checkout not found", Error: "No payment matches this link."})
		return
	}
	ec := &emitCtx{faults: metadataFaults(pi.Metadata)}
	apiErr := s.confirmLocked(ec, pi, pm, "", s.baseURL(r))
	s.commitLocked()
	rendered := s.renderIntent(pi, nil)
	d := s.intentPage(pi, "Payment")
	s.mu.Unlock()
	if wantsJSON(r) {
		if apiErr != nil {
			writeJSON(w, apiErr.Status, errorBody(apiErr.Err))
			return
		}
		writeJSON(w, http.StatusOK, mustJSON(rendered))
		return
	}
	d.ClientSecret = secret
	switch {
	case d.Intent.Status == StatusRequiresAction:
		http.Redirect(w, r, "/checkout/"+url.PathEscape(id)+"/challenge?client_secret="+url.QueryEscape(secret), http.StatusSeeOther)
		return
	case apiErr != nil && apiErr.Status != http.StatusPaymentRequired:
		d.Title = "Payment not possible"
		d.Error = apiErr.Err.Message
		renderPage(w, apiErr.Status, d)
		return
	}
	if link := returnLink(d.Intent); link != "" {
		http.Redirect(w, r, link, http.StatusSeeOther)
		return
	}
	if apiErr != nil {
		// Declined: offer the form again.
		d.Title = "Payment declined"
		d.Error = apiErr.Err.Message + " Try another card."
		d.PayForm = true
		d.PayAction = "/checkout/" + url.PathEscape(id)
		d.Cards = checkoutCards
		renderPage(w, http.StatusPaymentRequired, d)
		return
	}
	d.Title = "Payment authorised"
	if d.Intent.Status == StatusSucceeded {
		d.Title = "Payment succeeded"
	}
	d.Message = "You can close this page."
	renderPage(w, http.StatusOK, d)
}

func (s *Server) challengePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	secret := r.URL.Query().Get("client_secret")
	s.mu.Lock()
	pi := s.intents[id]
	if pi == nil || (secret != "" && !secretOK(pi, secret)) {
		s.mu.Unlock()
		renderPage(w, http.StatusNotFound, pageData{Title: "Challenge not found", Error: "No payment matches this link."})
		return
	}
	d := s.intentPage(pi, "3-D Secure")
	s.mu.Unlock()
	d.ClientSecret = secret
	if d.Intent.Status == StatusRequiresAction {
		d.Challenge = true
		d.ChallengeAction = "/checkout/" + url.PathEscape(id) + "/challenge"
	} else {
		d.settled("No authentication is pending for this payment.")
	}
	renderPage(w, http.StatusOK, d)
}

// challengeSubmit answers the 3-D Secure form; see hostedForm.
func (s *Server) challengeSubmit(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	secret, action := r.Form.Get("client_secret"), r.Form.Get("action")
	if action != "complete" && action != "fail" {
		if wantsJSON(r) {
			writeJSON(w, http.StatusBadRequest, errorBody(jsonError{Type: "invalid_request_error", Param: "action", Message: "action must be complete or fail."}))
			return
		}
		renderPage(w, http.StatusBadRequest, pageData{Title: "Bad request", Error: "action must be complete or fail."})
		return
	}
	s.mu.Lock()
	pi := s.intents[id]
	if pi == nil || (secret != "" && !secretOK(pi, secret)) {
		s.mu.Unlock()
		if wantsJSON(r) {
			writeJSON(w, http.StatusNotFound, errorBody(noSuch("payment_intent", id, "intent").Err))
			return
		}
		renderPage(w, http.StatusNotFound, pageData{Title: "Challenge not found", Error: "No payment matches this link."})
		return
	}
	if pi.Status != StatusRequiresAction {
		e := s.unexpectedState(pi, fmt.Sprintf("This PaymentIntent has a status of %s; no 3-D Secure challenge is pending.", pi.Status))
		d := s.intentPage(pi, "3-D Secure")
		s.mu.Unlock()
		if wantsJSON(r) {
			writeJSON(w, e.Status, errorBody(e.Err))
			return
		}
		d.Error = e.Err.Message
		renderPage(w, http.StatusConflict, d)
		return
	}
	ec := &emitCtx{faults: metadataFaults(pi.Metadata)}
	if action == "complete" {
		s.authorizeLocked(ec, pi, pi.PaymentMethod)
	} else {
		s.failAuthenticationLocked(ec, pi)
	}
	s.commitLocked()
	rendered := s.renderIntent(pi, nil)
	d := s.intentPage(pi, "3-D Secure")
	s.mu.Unlock()
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, mustJSON(rendered))
		return
	}
	if link := returnLink(d.Intent); link != "" {
		http.Redirect(w, r, link, http.StatusSeeOther)
		return
	}
	if action == "complete" {
		d.Title = "Authentication complete"
		d.Message = "The payment is authorised. You can close this page."
	} else {
		d.Title = "Authentication failed"
		d.Error = d.Intent.LastPaymentError.Message
	}
	renderPage(w, http.StatusOK, d)
}

// hostedForm wraps the handler of a hosted page's form: while
// authorise_unavailable is on it answers with the fault, and a form that
// does not parse gets a 400 page; h runs with the form parsed.
func (s *Server) hostedForm(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.hostedUnavailable(w, r) {
			return
		}
		if err := r.ParseForm(); err != nil {
			renderPage(w, http.StatusBadRequest, pageData{Title: "Bad request", Error: err.Error()})
			return
		}
		h(w, r)
	}
}

// hostedUnavailable answers a hosted page's payment or 3-D Secure answer
// while authorise_unavailable is on (a 503 api_error to a JSON caller, a 503
// page to a browser) and reports whether it did; the intent is untouched, so
// the fan may try again once the switch is off.
func (s *Server) hostedUnavailable(w http.ResponseWriter, r *http.Request) bool {
	kind := s.unavailable(r.Pattern)
	if kind == "" {
		return false
	}
	if wantsJSON(r) {
		s.writeUnavailableFault(w, r, kind)
		return true
	}
	s.log.Info("sandbox fault: unavailable", "kind", kind, "method", r.Method, "path", r.URL.Path)
	renderPage(w, http.StatusServiceUnavailable, pageData{Title: "Payment unavailable",
		Error: "The payment service is unavailable (sandbox fault " + kind + "_unavailable). Nothing was charged; try again later."})
	return true
}
