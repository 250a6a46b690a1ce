package tickets_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/tickets"
)

var t0 = time.Date(2026, 11, 30, 20, 0, 7, 0, time.UTC) // 7s into a window

func newSecret(t *testing.T) []byte {
	t.Helper()
	s, err := tickets.NewSecret()
	require.NoError(t, err)
	require.Len(t, s, tickets.SecretSize)
	return s
}

func TestACodeIsAcceptedOneWindowEitherWayAndNoFurther(t *testing.T) {
	t.Parallel()
	id, secret := tickets.NewTicketID(), newSecret(t)
	payload, expires := tickets.Payload(id, secret, t0)
	require.Equal(t, time.Date(2026, 11, 30, 20, 0, 15, 0, time.UTC), expires, "the code changes at the next 15-second boundary")

	cases := []struct {
		name    string
		scanner time.Duration // scanner clock minus phone clock
		want    error
	}{
		{"same instant", 0, nil},
		{"scanner 15s ahead (phone clock slow)", 15 * time.Second, nil},
		{"scanner 15s behind (phone clock fast)", -15 * time.Second, nil},
		{"one window later", tickets.WindowLength, nil},
		{"two windows old", 2 * tickets.WindowLength, tickets.ErrStale},
		{"a screenshot a minute old", time.Minute, tickets.ErrStale},
		{"two windows in the future", -2 * tickets.WindowLength, tickets.ErrStale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := tickets.Verify(payload, secret, t0.Add(tc.scanner))
			if tc.want == nil {
				require.NoError(t, err)
				require.Equal(t, id, c.TicketID)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestSkewOfFifteenSecondsIsAcceptedAtEveryOffsetInTheWindow(t *testing.T) {
	t.Parallel()
	id, secret := tickets.NewTicketID(), newSecret(t)
	base := t0.Truncate(tickets.WindowLength)
	for ms := 0; ms < 15000; ms += 250 {
		phone := base.Add(time.Duration(ms) * time.Millisecond)
		payload, _ := tickets.Payload(id, secret, phone)
		for _, skew := range []time.Duration{-15 * time.Second, 15 * time.Second} {
			_, err := tickets.Verify(payload, secret, phone.Add(skew))
			require.NoError(t, err, "phone at +%dms, skew %s", ms, skew)
		}
		_, err := tickets.Verify(payload, secret, phone.Add(2*tickets.WindowLength))
		require.ErrorIs(t, err, tickets.ErrStale, "two windows old at +%dms", ms)
	}
}

func TestCodeUnderAnotherSecretOrTicketIsRefused(t *testing.T) {
	t.Parallel()
	id, secret := tickets.NewTicketID(), newSecret(t)
	payload, _ := tickets.Payload(id, secret, t0)

	_, err := tickets.Verify(payload, newSecret(t), t0)
	require.ErrorIs(t, err, tickets.ErrBadMAC)

	other := tickets.NewTicketID()
	swapped := other + strings.TrimPrefix(payload, id)
	_, err = tickets.Verify(swapped, secret, t0)
	require.ErrorIs(t, err, tickets.ErrBadMAC, "a code moved to another ticket ID")

	c, err := tickets.ParsePayload(payload)
	require.NoError(t, err)
	c.Window++
	require.ErrorIs(t, c.Verify(secret, t0), tickets.ErrBadMAC, "a window cannot be moved forward")
}

func TestParsePayloadIsStrict(t *testing.T) {
	t.Parallel()
	id, secret := tickets.NewTicketID(), newSecret(t)
	good, _ := tickets.Payload(id, secret, t0)
	parts := strings.Split(good, ".")
	hexMAC := parts[2]
	cases := map[string]string{
		"empty":              "",
		"no dots":            id,
		"two parts":          id + "." + parts[1],
		"four parts":         good + ".x",
		"bad prefix":         "tik_" + good[4:],
		"uppercase id":       strings.ToUpper(id) + good[len(id):],
		"short id":           id[:len(id)-1] + "." + parts[1] + "." + hexMAC,
		"leading zero":       id + ".0" + parts[1] + "." + hexMAC,
		"signed window":      id + ".+" + parts[1] + "." + hexMAC,
		"negative window":    id + ".-" + parts[1] + "." + hexMAC,
		"empty window":       id + ".." + hexMAC,
		"window overflow":    id + ".9999999999999999999." + hexMAC,
		"uppercase hex":      id + "." + parts[1] + "." + strings.ToUpper(hexMAC),
		"short mac":          id + "." + parts[1] + "." + hexMAC[:62],
		"long mac":           id + "." + parts[1] + "." + hexMAC + "00",
		"non-hex mac":        id + "." + parts[1] + "." + "g" + hexMAC[1:],
		"space":              good + " ",
		"newline in payload": id + "\n." + parts[1] + "." + hexMAC,
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := tickets.ParsePayload(p)
			require.ErrorIs(t, err, tickets.ErrMalformed)
		})
	}
	c, err := tickets.ParsePayload(good)
	require.NoError(t, err)
	require.Equal(t, good, c.String())
}

func FuzzParsePayload(f *testing.F) {
	secret := bytes.Repeat([]byte{7}, tickets.SecretSize)
	good, _ := tickets.Payload("tkt_abcdefghijklmnopqrst", secret, t0)
	device, _ := tickets.DevicePayload("tkt_abcdefghijklmnopqrst", secret, 3, t0)
	for _, s := range []string{good, device, "", ".", "..", "...", "tkt_.1.", good[:40], strings.ToUpper(good), good + good,
		"tkt_abcdefghijklmnopqrst.0." + strings.Repeat("0", 64), "tkt_abcdefghijklmnopqrst.-1." + strings.Repeat("f", 64),
		"tkt_abcdefghijklmnopqrst.1.0." + strings.Repeat("0", 64), "tkt_abcdefghijklmnopqrst.1.01." + strings.Repeat("0", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := tickets.ParsePayload(s)
		if err != nil {
			require.ErrorIs(t, err, tickets.ErrMalformed)
			return
		}
		// Canonical: what parses renders back to the same bytes, and only
		// the real secret's MAC verifies.
		require.Equal(t, s, c.String())
		require.True(t, tickets.ValidID(c.TicketID))
		require.GreaterOrEqual(t, c.Window, int64(0))
		require.GreaterOrEqual(t, c.Generation, int64(0))
		if err := c.Verify(secret, t0); err == nil {
			want, _ := tickets.DevicePayload(c.TicketID, secret, c.Generation, time.Unix(c.Window*15, 0))
			require.Equal(t, want, s)
		}
	})
}

func TestTicketIDsAreUniqueAndWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := tickets.NewTicketID()
		require.Regexp(t, `^tkt_[a-z2-7]{20}$`, id)
		require.True(t, tickets.ValidID(id))
		require.False(t, seen[id])
		seen[id] = true
	}
	require.False(t, tickets.ValidID("tkt_abc"))
	require.False(t, tickets.ValidID("tkt_abcdefghijklmnopqrs1")) // '1' is not base32
}

func TestKeyringSealsPerTicket(t *testing.T) {
	t.Parallel()
	key, _ := tickets.NewSecret()
	kr, err := tickets.NewKeyring(key)
	require.NoError(t, err)
	id, secret := tickets.NewTicketID(), newSecret(t)
	sealed, err := kr.Seal(secret, id)
	require.NoError(t, err)
	require.NotContains(t, string(sealed), string(secret))

	got, err := kr.Open(sealed, id)
	require.NoError(t, err)
	require.Equal(t, secret, got)

	again, err := kr.Seal(secret, id)
	require.NoError(t, err)
	require.NotEqual(t, sealed, again, "a fresh nonce every time")

	_, err = kr.Open(sealed, tickets.NewTicketID())
	require.ErrorIs(t, err, tickets.ErrSealed, "bound to its ticket ID")

	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-5] ^= 1
	_, err = kr.Open(flipped, id)
	require.ErrorIs(t, err, tickets.ErrSealed)

	_, err = kr.Open(sealed[:10], id)
	require.ErrorIs(t, err, tickets.ErrSealed)

	otherKey, _ := tickets.NewSecret()
	other, err := tickets.NewKeyring(otherKey)
	require.NoError(t, err)
	_, err = other.Open(sealed, id)
	require.ErrorIs(t, err, tickets.ErrWrongKey)

	rotated, err := tickets.NewKeyring(otherKey, key)
	require.NoError(t, err)
	got, err = rotated.Open(sealed, id)
	require.NoError(t, err, "old keys still open after rotation")
	require.Equal(t, secret, got)

	_, err = tickets.NewKeyring(key[:16])
	require.Error(t, err)
}

func TestAKeyParsesFromHexOrBase64AndMustBe32Bytes(t *testing.T) {
	t.Parallel()
	k, err := tickets.ParseKey(strings.Repeat("ab", 32))
	require.NoError(t, err)
	require.Len(t, k, 32)
	k, err = tickets.ParseKey("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	require.NoError(t, err)
	require.Equal(t, byte(31), k[31])
	_, err = tickets.ParseKey("too short")
	require.Error(t, err)
}

// TestADeviceCodeVerifiesWithTheSecretAndNamesItsGeneration: what the phone
// computes offline from its device key is what the server would make from
// the secret, the gate (holding only the secret) verifies it, and the
// generation travels in the code.
func TestADeviceCodeVerifiesWithTheSecretAndNamesItsGeneration(t *testing.T) {
	t.Parallel()
	id, secret := tickets.NewTicketID(), newSecret(t)
	payload, _ := tickets.DevicePayload(id, secret, 2, t0)
	c, err := tickets.Verify(payload, secret, t0)
	require.NoError(t, err)
	require.Equal(t, int64(2), c.Generation)
	require.Len(t, strings.Split(payload, "."), 4)

	server, _ := tickets.Payload(id, secret, t0)
	require.Len(t, strings.Split(server, "."), 3, "the server's own code keeps the three-part form")
	require.NotEqual(t, server, payload)
}

// TestADeviceKeyOpensNothingElse: each generation has its own key, none of
// them the secret, so a device that lost the ticket cannot make the next
// device's codes, and a code altered to claim another generation fails.
func TestADeviceKeyOpensNothingElse(t *testing.T) {
	t.Parallel()
	id, secret := tickets.NewTicketID(), newSecret(t)
	k1, k2 := tickets.DeviceKey(secret, id, 1), tickets.DeviceKey(secret, id, 2)
	require.NotEqual(t, k1, k2)
	require.NotEqual(t, secret, k1)
	require.Equal(t, secret, tickets.DeviceKey(secret, id, 0), "generation 0 is the server's own key")
	require.NotEqual(t, k1, tickets.DeviceKey(secret, tickets.NewTicketID(), 1), "keys are bound to the ticket")

	old, _ := tickets.DevicePayload(id, secret, 1, t0)
	c, err := tickets.ParsePayload(old)
	require.NoError(t, err)
	c.Generation = 2
	require.ErrorIs(t, c.Verify(secret, t0), tickets.ErrBadMAC, "a generation is not a label the phone can change")
}
