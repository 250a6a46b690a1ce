package workflows

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/vocab"
)

// Typed keys of the saga's search attributes.
var (
	statusAttr    = temporal.NewSearchAttributeKeyKeyword(SearchAttrStatus)
	stepAttr      = temporal.NewSearchAttributeKeyKeyword(SearchAttrStep)
	amountAttr    = temporal.NewSearchAttributeKeyInt64(SearchAttrAmount)
	attentionAttr = temporal.NewSearchAttributeKeyBool(SearchAttrAttention)
	emailHashAttr = temporal.NewSearchAttributeKeyKeyword(SearchAttrEmailHash)
)

// emailHashDomain separates the e-mail's hash from any other use of the
// same key (the key also makes fraud.IPRef).
const emailHashDomain = "encore-email-v1\x00"

// EmailHash is the keyed hash of a fan's e-mail that the EncoreEmailHash
// search attribute holds: HMAC-SHA256 under key of the trimmed, lower-cased
// address, hex, first 32 characters. Without the key nobody can test an
// address against it; support computes it with `encore` tooling or the
// recipe in docs/OPERATIONS.md. Empty for an empty address or key.
func EmailHash(key []byte, email string) string {
	email = strings.ToLower(strings.TrimSpace(email))
	if email == "" || len(key) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(emailHashDomain + email))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// staticSummary is the one line the Temporal UI shows for the booking's
// workflow: fixed at start, encrypted by the codec with the payloads.
func staticSummary(in BookingInput) string {
	s := "booking " + in.ReservationID
	if in.Seats > 0 {
		s += fmt.Sprintf(" · %d seat(s)", in.Seats)
	}
	if in.Total.Currency != "" {
		s += " · " + formatMoney(in.Total)
	}
	return s
}

// staticDetails is the booking as it was checked out, for support.
func staticDetails(in BookingInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Booking** %s\n\n", in.ReservationID)
	fmt.Fprintf(&b, "- fan: %s\n", in.UserID)
	if in.Email != "" {
		fmt.Fprintf(&b, "- e-mail: %s\n", in.Email)
	}
	fmt.Fprintf(&b, "- event: %s\n", in.EventID)
	if in.Seats > 0 {
		fmt.Fprintf(&b, "- seats: %d\n", in.Seats)
	}
	if in.Total.Currency != "" {
		fmt.Fprintf(&b, "- total: %s\n", formatMoney(in.Total))
	}
	fmt.Fprintf(&b, "- hold expires: %s\n", in.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	return b.String()
}

// startAttributes are the search attributes a booking starts with: what
// support filters by before the saga has done anything.
func startAttributes(in BookingInput) temporal.SearchAttributes {
	updates := []temporal.SearchAttributeUpdate{
		temporal.NewSearchAttributeKeyKeyword(SearchAttrEvent).ValueSet(in.EventID),
		temporal.NewSearchAttributeKeyKeyword(SearchAttrUser).ValueSet(in.UserID),
		statusAttr.ValueSet(string(vocab.BookingPendingPayment)),
		stepAttr.ValueSet(string(vocab.StepAdopting)),
		attentionAttr.ValueSet(false),
	}
	if in.Total.Currency != "" {
		updates = append(updates, amountAttr.ValueSet(in.Total.Amount))
	}
	if in.EmailHash != "" {
		updates = append(updates, emailHashAttr.ValueSet(in.EmailHash))
	}
	return temporal.NewSearchAttributes(updates...)
}
