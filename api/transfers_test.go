package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/tickets"
)

// as is a token of user on a device, signed in with email.
func (s *qrStack) as(t *testing.T, user, email string) string {
	t.Helper()
	tok, err := s.issuer.Mint(session.Identity{UserID: user, DeviceID: "phone-" + user, Email: email}, time.Now())
	require.NoError(t, err)
	return tok
}

// TestAFanSendsATicketByEmailTheRecipientAcceptsItAndHoldsANewTicketTheOldOneDead:
// the sender offers the ticket, the recipient (signed in with that address)
// accepts and holds a new ticket with its own ID and codes; the old ticket
// reads TRANSFERRED and shows no code, its codes refused; both are
// emailed; the sender can no longer cancel the booking for a refund.
func TestAFanSendsATicketByEmailTheRecipientAcceptsItAndHoldsANewTicketTheOldOneDead(t *testing.T) {
	t.Parallel()
	s := newQRStack(t)
	aliceMail, bobMail := s.owner+"@example.com", "bob_"+s.owner+"@example.com" // the package's tests share one database
	alice := s.as(t, s.owner, aliceMail)
	bob := s.as(t, "bob_"+s.owner, bobMail)

	r := apitest.Do(t, http.MethodPost, s.url+"/v1/tickets/"+s.ticketID+"/transfer", alice, map[string]any{"to_email": bobMail})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Equal(t, "PENDING", r.Body["status"])
	require.NotEmpty(t, r.Body["expires_at"])
	transfer := r.Body["transfer_id"].(string)
	require.Equal(t, []string{"A ticket was sent to you"}, s.mails.to(bobMail))

	r = apitest.Do(t, http.MethodGet, s.url+"/v1/me/transfers", bob, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	list := r.Body["transfers"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, "received", list[0].(map[string]any)["direction"])

	r = apitest.Do(t, http.MethodPost, s.url+"/v1/transfers/"+transfer+"/accept", s.as(t, "mallory", "mallory@example.com"), nil)
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
	require.Equal(t, problemName("wrong-recipient"), problemType(r))

	r = apitest.Do(t, http.MethodPost, s.url+"/v1/transfers/"+transfer+"/accept", bob, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	ticket := r.Body["ticket"].(map[string]any)
	newID := ticket["ticket_id"].(string)
	require.NotEqual(t, s.ticketID, newID, "a new ticket, with new key material")
	require.Equal(t, "VALID", ticket["status"])
	require.Equal(t, "ACCEPTED", r.Body["transfer"].(map[string]any)["status"])
	require.Equal(t, []string{"Your ticket was accepted"}, s.mails.to(aliceMail))
	require.Contains(t, s.mails.to(bobMail), "Your ticket is ready")

	r = apitest.Do(t, http.MethodGet, s.url+"/v1/tickets/"+s.ticketID+"/qr", alice, nil)
	require.Equal(t, http.StatusGone, r.Status, "the old ticket shows no code: %s", r.Raw)
	require.Equal(t, problemName("ticket-transferred"), problemType(r))
	r = apitest.Do(t, http.MethodGet, s.url+"/v1/tickets/"+newID+"/qr", bob, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	c, err := tickets.ParsePayload(r.Body["payload"].(string))
	require.NoError(t, err)
	require.Equal(t, newID, c.TicketID)

	r = apitest.Do(t, http.MethodPost, s.url+"/v1/transfers/"+transfer+"/accept", bob, nil)
	require.Equal(t, http.StatusConflict, r.Status, "accepting twice: %s", r.Raw)
	require.Equal(t, problemName("transfer-not-pending"), problemType(r))
	r = apitest.Do(t, http.MethodPost, s.url+"/v1/tickets/"+s.ticketID+"/transfer", alice, map[string]any{"to_email": "carol@example.com"})
	require.Equal(t, http.StatusConflict, r.Status, "the old ticket cannot be sent again: %s", r.Raw)
	require.Equal(t, problemName("ticket-not-transferable"), problemType(r))

	var status string
	require.NoError(t, s.store.Pool().QueryRow(t.Context(), `SELECT status FROM tickets WHERE id = $1`, s.ticketID).Scan(&status))
	require.Equal(t, "TRANSFERRED", status)
	handed, err := s.store.Tickets.Transferred(t.Context(), s.booking)
	require.NoError(t, err)
	require.True(t, handed, "the buyer's booking is no longer theirs to cancel for a refund")
}

func TestATransferIsWithdrawnByItsSenderOnlyAndBadOffersAreProblems(t *testing.T) {
	t.Parallel()
	s := newQRStack(t)
	aliceMail, bobMail := s.owner+"@example.com", "bob_"+s.owner+"@example.com"
	alice := s.as(t, s.owner, aliceMail)
	path := "/v1/tickets/" + s.ticketID + "/transfer"
	cases := []struct {
		name    string
		token   string
		body    any
		status  int
		problem string
	}{
		{"not an address", alice, map[string]any{"to_email": "bob"}, http.StatusUnprocessableEntity, "invalid-request"},
		{"a name with it", alice, map[string]any{"to_email": "Bob <bob@example.com>"}, http.StatusUnprocessableEntity, "invalid-request"},
		{"to oneself", alice, map[string]any{"to_email": strings.ToUpper(aliceMail)}, http.StatusUnprocessableEntity, "invalid-request"},
		{"not json", alice, "nope", http.StatusUnprocessableEntity, "invalid-request"},
		{"another fan's ticket", s.as(t, "mallory", "m@example.com"), map[string]any{"to_email": bobMail}, http.StatusNotFound, "not-found"},
	}
	for _, tc := range cases {
		r := apitest.Do(t, http.MethodPost, s.url+path, tc.token, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Raw)
		require.Equal(t, problemName(tc.problem), problemType(r), tc.name)
	}

	r := apitest.Do(t, http.MethodPost, s.url+path, alice, map[string]any{"to_email": bobMail})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	transfer := r.Body["transfer_id"].(string)
	r = apitest.Do(t, http.MethodDelete, s.url+"/v1/transfers/"+transfer, s.as(t, "bob_x", bobMail), nil)
	require.Equal(t, http.StatusNotFound, r.Status, "only the sender withdraws: %s", r.Raw)
	r = apitest.Do(t, http.MethodDelete, s.url+"/v1/transfers/"+transfer, alice, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "CANCELLED", r.Body["status"])
	r = apitest.Do(t, http.MethodPost, s.url+"/v1/transfers/"+transfer+"/accept", s.as(t, "bob_x", bobMail), nil)
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	r = apitest.Do(t, http.MethodPost, s.url+"/v1/transfers/not-a-uuid/accept", alice, nil)
	require.Equal(t, http.StatusNotFound, r.Status)
}
