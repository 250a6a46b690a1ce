package session_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/session"
)

func TestATokenVerifiesOnlyUnchangedUnexpiredAndUnderItsKey(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	iss := session.NewIssuer("k1")
	tok := iss.Issue("asha", "phone", now)
	id, err := iss.Verify(tok, now.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, "asha", id.UserID)
	require.Equal(t, "phone", id.DeviceID)

	cases := map[string]struct {
		token string
		at    time.Time
		iss   *session.Issuer
	}{
		"tampered":        {tok[:len(tok)-2] + "xx", now, iss},
		"another key":     {tok, now, session.NewIssuer("k2")},
		"expired":         {tok, now.Add(session.TTL + time.Minute), iss},
		"from the future": {tok, now.Add(-time.Hour), iss},
		"garbage":         {"not-a-token", now, iss},
		"empty":           {"", now, iss},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := c.iss.Verify(c.token, c.at)
			require.ErrorIs(t, err, session.ErrInvalid)
		})
	}
}
