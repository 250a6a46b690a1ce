package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/encore-tickets/encore/session"
)

// FuzzTokenVerify feeds arbitrary strings to the verifier: it never panics,
// and whatever it accepts is byte for byte a token the issuer signed.
func FuzzTokenVerify(f *testing.F) {
	dev := session.NewIssuer("fuzz-secret")
	v := dev.Verifier()
	signed := map[string]bool{}
	// Every fuzzing worker mints the same tokens: the instant is fixed.
	now := time.Now().Truncate(time.Hour)
	for _, id := range []session.Identity{
		{UserID: "asha", DeviceID: "phone"},
		{UserID: "bo", Email: "bo@example.com", Roles: []session.Role{session.Admin, session.Organiser}, Org: "org-1"},
	} {
		tok, err := dev.Mint(id, now)
		if err != nil {
			f.Fatal(err)
		}
		signed[tok] = true
		f.Add(tok)
		parts := strings.Split(tok, ".")
		f.Add(parts[0] + "." + parts[1] + ".")
		f.Add("eyJhbGciOiJub25lIn0." + parts[1] + ".")
	}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "x"}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	f.Add(none)
	f.Add("")
	f.Add("...")
	f.Add("a.b.c.d")
	f.Fuzz(func(t *testing.T, token string) {
		id, err := v.Verify(context.Background(), token)
		if err != nil {
			return
		}
		if !signed[token] {
			t.Fatalf("accepted a token the issuer never signed: %q (as %+v)", token, id)
		}
	})
}
