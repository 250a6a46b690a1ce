package pass_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/waitingroom/pass"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var now = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func claims() pass.Claims {
	return pass.Claims{UserID: "asha", DeviceID: "phone", EventID: "evt_flash_sale", LeaseID: "42", IssuedAt: now}
}

func TestAPassVerifiesAndIsBoundToItsUserDeviceAndEvent(t *testing.T) {
	t.Parallel()
	s := pass.NewSigner(pass.KeyFromSeed("test"), 5*time.Minute)
	tok, exp, err := s.Sign(claims())
	require.NoError(t, err)
	require.Equal(t, now.Add(5*time.Minute), exp)

	// The verifier holds only the public key.
	v := pass.NewVerifier(s.PublicKey())
	c, err := v.Verify(tok, now.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, "asha", c.UserID)
	require.Equal(t, "42", c.LeaseID)
	require.NoError(t, c.Bound("asha", "phone", "evt_flash_sale"))

	for _, tc := range []struct{ name, user, device, event string }{
		{"other user", "bo", "phone", "evt_flash_sale"},
		{"other device", "asha", "laptop", "evt_flash_sale"},
		{"other event", "asha", "phone", "evt_demo_night"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, c.Bound(tc.user, tc.device, tc.event), pass.ErrMismatch)
		})
	}
}

func TestSignerCapsLifetimeAtFiveMinutes(t *testing.T) {
	t.Parallel()
	s := pass.NewSigner(pass.KeyFromSeed("test"), time.Hour)
	require.Equal(t, pass.MaxTTL, s.TTL())
	c := claims()
	c.ExpiresAt = now.Add(2 * time.Minute) // the lease ends first
	_, exp, err := s.Sign(c)
	require.NoError(t, err)
	require.Equal(t, now.Add(2*time.Minute), exp)
}

func TestForgedExpiredAndMalformedPassesAreRefused(t *testing.T) {
	t.Parallel()
	key := pass.KeyFromSeed("test")
	s := pass.NewSigner(key, 5*time.Minute)
	v := s.Verifier()
	good, _, err := s.Sign(claims())
	require.NoError(t, err)

	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	forged, _, err := pass.NewSigner(otherKey, 5*time.Minute).Sign(claims())
	require.NoError(t, err)

	mapClaims := func(exp time.Duration) jwt.MapClaims {
		return jwt.MapClaims{"iss": "encore-waiting-room", "aud": "encore-holds", "sub": "asha", "evt": "evt_flash_sale",
			"dev": "phone", "jti": "42", "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(exp).Unix()}
	}
	// Algorithm confusion: the public key used as an HMAC secret.
	hs, err := jwt.NewWithClaims(jwt.SigningMethodHS256, mapClaims(time.Minute)).SignedString([]byte(key.Public().(ed25519.PublicKey)))
	require.NoError(t, err)
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, mapClaims(time.Minute)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	// Signed with the right key but living an hour: not one of ours.
	long, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, mapClaims(time.Hour)).SignedString(key)
	require.NoError(t, err)
	noLease := mapClaims(time.Minute)
	delete(noLease, "jti")
	missing, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, noLease).SignedString(key)
	require.NoError(t, err)
	wrongAud := mapClaims(time.Minute)
	wrongAud["aud"] = "someone-else"
	aud, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, wrongAud).SignedString(key)
	require.NoError(t, err)

	parts := strings.Split(good, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	tamperedPayload := strings.Replace(string(payload), `"sub":"asha"`, `"sub":"bo"`, 1)
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(tamperedPayload)) + "." + parts[2]

	for _, tc := range []struct {
		name  string
		token string
		at    time.Time
	}{
		{"empty", "", now},
		{"garbage", "not-a-jwt", now},
		{"forged with another key", forged, now},
		{"expired", good, now.Add(5*time.Minute + 6*time.Second)},
		{"not yet valid", good, now.Add(-time.Minute)},
		{"HS256 with the public key", hs, now},
		{"alg none", none, now},
		{"lifetime over five minutes", long, now},
		{"no lease id", missing, now},
		{"wrong audience", aud, now},
		{"tampered subject", tampered, now},
		{"too long", good + strings.Repeat("A", pass.MaxLen), now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(tc.token, tc.at)
			require.ErrorIs(t, err, pass.ErrInvalid)
		})
	}
}

func TestSignerNeverPrintsItsKey(t *testing.T) {
	t.Parallel()
	s := pass.NewSigner(pass.KeyFromSeed("test"), 0)
	require.Equal(t, "pass.Signer{[redacted]}", s.String())
}

// FuzzPass feeds the parser arbitrary input: it must never panic, and the
// only tokens it accepts are ones the signer minted, with their claims intact.
func FuzzPass(f *testing.F) {
	s := pass.NewSigner(pass.KeyFromSeed("fuzz"), 5*time.Minute)
	v := s.Verifier()
	good, _, err := s.Sign(claims())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-2])
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhc2hhIn0.")
	f.Add("a.b.c")
	f.Add("..")
	f.Add(strings.Repeat(".", 100))
	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Verify(token, now.Add(time.Minute))
		if err != nil {
			if !strings.Contains(err.Error(), "pass: invalid") {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		if token != good {
			t.Fatalf("accepted a token the signer never minted: %q", token)
		}
		if c.Bound("asha", "phone", "evt_flash_sale") != nil || c.LeaseID != "42" {
			t.Fatalf("claims changed: %+v", c)
		}
	})
}
