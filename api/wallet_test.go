package api_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/tickets"
)

// walletOf opens the ticket's wallet on device and returns what it says.
type walletBody struct {
	TicketID      string `json:"ticket_id"`
	Key           string `json:"key"`
	PeriodSeconds int64  `json:"period_seconds"`
	Algorithm     string `json:"algorithm"`
	Generation    int64  `json:"generation"`
}

func (s *qrStack) wallet(t *testing.T, device string) walletBody {
	t.Helper()
	resp, body := s.getOn(t, s.owner, device, "/v1/tickets/"+s.ticketID+"/wallet")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	var w walletBody
	require.NoError(t, json.Unmarshal(body, &w))
	return w
}

// phoneCode computes a code from the wallet the way the fan app does
// offline: the window, the generation, HMAC-SHA256(key, "id:window").
func phoneCode(t *testing.T, w walletBody, at time.Time) string {
	t.Helper()
	key, err := hex.DecodeString(w.Key)
	require.NoError(t, err)
	window := at.Unix() / w.PeriodSeconds
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s:%d", w.TicketID, window)
	return fmt.Sprintf("%s.%d.%d.%s", w.TicketID, window, w.Generation, hex.EncodeToString(m.Sum(nil)))
}

// TestATicketsWalletGivesOnePhoneAKeyWhoseCodesTheGateAcceptsAndMovingItEndsTheOldPhones:
// the key is not the secret, the phone's own codes verify with the secret
// and equal the server's for that phone, and opening the wallet on another
// device moves the codes there: the old phone is told so at once.
func TestATicketsWalletGivesOnePhoneAKeyWhoseCodesTheGateAcceptsAndMovingItEndsTheOldPhones(t *testing.T) {
	t.Parallel()
	s := newQRStack(t)
	now := time.Now()

	w := s.wallet(t, "phone")
	require.Equal(t, s.ticketID, w.TicketID)
	require.Equal(t, int64(15), w.PeriodSeconds)
	require.Equal(t, "HMAC-SHA256", w.Algorithm)
	require.Equal(t, int64(1), w.Generation)
	require.NotEqual(t, hex.EncodeToString(s.secret), w.Key, "the device gets a derived key, never the ticket's secret")
	code := phoneCode(t, w, now)
	c, err := tickets.Verify(code, s.secret, now)
	require.NoError(t, err, "the phone's own code verifies with the ticket's secret, as the gate checks it")
	require.Equal(t, int64(1), c.Generation)
	require.Equal(t, w, s.wallet(t, "phone"), "opening it again on the same phone changes nothing")

	resp, body := s.getOn(t, s.owner, "phone", "/v1/tickets/"+s.ticketID+"/qr")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var online struct{ Payload string }
	require.NoError(t, json.Unmarshal(body, &online))
	require.Equal(t, phoneCode(t, w, time.Now()), online.Payload, "online and offline, the phone shows the same code")

	moved := s.wallet(t, "new-phone")
	require.Equal(t, int64(2), moved.Generation)
	require.NotEqual(t, w.Key, moved.Key)
	resp, body = s.getOn(t, s.owner, "phone", "/v1/tickets/"+s.ticketID+"/qr")
	require.Equal(t, http.StatusConflict, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"type":"/problems/ticket-on-another-device"`)
	var device string
	var generation int64
	require.NoError(t, s.store.Pool().QueryRow(context.Background(),
		`SELECT device_id, key_generation FROM tickets WHERE id = $1`, s.ticketID).Scan(&device, &generation))
	require.Equal(t, "new-phone", device)
	require.Equal(t, int64(2), generation)

	t.Run("refused", func(t *testing.T) {
		cases := []struct {
			name, user, path string
			status           int
			problem          string
		}{
			{"another fan", "fan_someone_else", "/v1/tickets/" + s.ticketID + "/wallet", http.StatusNotFound, "not-found"},
			{"no token", "", "/v1/tickets/" + s.ticketID + "/wallet", http.StatusUnauthorized, "unauthorized"},
			{"unknown ticket", s.owner, "/v1/tickets/" + tickets.NewTicketID() + "/wallet", http.StatusNotFound, "not-found"},
		}
		for _, tc := range cases {
			resp, body := s.get(t, tc.user, tc.path)
			require.Equal(t, tc.status, resp.StatusCode, "%s: %s", tc.name, body)
			require.Contains(t, string(body), `"type":"/problems/`+tc.problem+`"`, tc.name)
		}
		_, err := s.store.Tickets.RevokeTickets(context.Background(), s.booking)
		require.NoError(t, err)
		resp, body := s.getOn(t, s.owner, "new-phone", "/v1/tickets/"+s.ticketID+"/wallet")
		require.Equal(t, http.StatusNotFound, resp.StatusCode, string(body))
		require.Contains(t, string(body), "revoked")
	})
}
