package gate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/tickets"
)

// clock is a settable scanner clock.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

var showtime = time.Date(2026, 12, 31, 20, 0, 3, 0, time.UTC)

func devKeys(t testing.TB) manifest.Keys {
	t.Helper()
	k, err := manifest.KeysFromConfig(config.Default())
	require.NoError(t, err)
	return k
}

// ticket is a ticket the test can show codes for.
type ticket struct {
	manifest.Entry
}

func (tk ticket) code(at time.Time) string {
	p, _ := tickets.Payload(tk.ID, tk.Secret, at)
	return p
}

func makeTickets(t testing.TB, n int, section string) []ticket {
	t.Helper()
	out := make([]ticket, n)
	for i := range out {
		secret, err := tickets.NewSecret()
		require.NoError(t, err)
		out[i] = ticket{manifest.Entry{ID: tickets.NewTicketID(), SectionID: section,
			SeatID: fmt.Sprintf("%s-A-%d", section, i+1), Secret: secret}}
	}
	return out
}

func entries(ts []ticket) []manifest.Entry {
	out := make([]manifest.Entry, len(ts))
	for i, t := range ts {
		out[i] = t.Entry
	}
	return out
}

// sealed builds a manifest file.
func sealed(t testing.TB, keys manifest.Keys, h manifest.Header, ts []ticket, revoked ...string) []byte {
	t.Helper()
	if h.Kind == "" {
		h.Kind = manifest.KindFull
	}
	if h.Version == 0 {
		h.Version = showtime.Add(-24 * time.Hour).UnixMicro()
	}
	if h.CreatedAt.IsZero() {
		h.CreatedAt = time.UnixMicro(h.Version).UTC()
	}
	if h.ExpiresAt.IsZero() {
		h.ExpiresAt = showtime.Add(12 * time.Hour)
	}
	data, err := manifest.Seal(manifest.Manifest{Header: h, Body: manifest.Body{Tickets: entries(ts), Revoked: revoked}}, keys)
	require.NoError(t, err)
	return data
}

// deviceCode is the code a phone holding generation's device key shows.
func (tk ticket) deviceCode(generation int64, at time.Time) string {
	p, _ := tickets.DevicePayload(tk.ID, tk.Secret, generation, at)
	return p
}
