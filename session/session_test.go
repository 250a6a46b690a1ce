package session_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/session"
)

const audience = "encore-test"

// testIssuer is an OpenID Connect issuer on loopback with its own RSA, ECDSA
// and Ed25519 keys; it counts how often its key set is fetched.
type testIssuer struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	keys    map[string]testKey // every key it can sign with, by kid
	jwks    []byte             // the published set
	fetches atomic.Int64
}

type testKey struct {
	method jwt.SigningMethod
	key    crypto.Signer
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	ti := &testIssuer{t: t, keys: map[string]testKey{}}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	ti.keys["rsa-1"] = testKey{jwt.SigningMethodRS256, rsaKey}
	ti.keys["ec-1"] = testKey{jwt.SigningMethodES256, ecKey}
	ti.keys["ed-1"] = testKey{jwt.SigningMethodEdDSA, edKey}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": ti.srv.URL, "jwks_uri": ti.srv.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		ti.fetches.Add(1)
		ti.mu.Lock()
		defer ti.mu.Unlock()
		_, _ = w.Write(ti.jwks)
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(ti.srv.Close)
	ti.publish("rsa-1", "ec-1", "ed-1")
	return ti
}

// publish makes the named keys the issuer's key set.
func (ti *testIssuer) publish(kids ...string) {
	ti.t.Helper()
	set := jwkset.NewMemoryStorage()
	for _, kid := range kids {
		k := ti.keys[kid]
		jwk, err := jwkset.NewJWKFromKey(k.key.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
			KID: kid, ALG: jwkset.ALG(k.method.Alg()), USE: jwkset.UseSig}})
		require.NoError(ti.t, err)
		require.NoError(ti.t, set.KeyWrite(context.Background(), jwk))
	}
	raw, err := set.JSONPublic(context.Background())
	require.NoError(ti.t, err)
	ti.mu.Lock()
	ti.jwks = raw
	ti.mu.Unlock()
}

// verifier discovers the issuer as the API does.
func (ti *testIssuer) verifier(refetch time.Duration) *session.Verifier {
	ti.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ti.t.Cleanup(cancel)
	v, err := session.Discover(ctx, session.Options{Issuer: ti.srv.URL, Audience: audience,
		Client: ti.srv.Client(), RefetchInterval: refetch})
	require.NoError(ti.t, err)
	return v
}

// claims are a valid token's claims for sub.
func (ti *testIssuer) claims(sub string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"iss": ti.srv.URL, "aud": audience, "sub": sub,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// sign signs claims with the issuer's key kid, naming kid in the header.
func (ti *testIssuer) sign(kid string, c jwt.MapClaims) string {
	ti.t.Helper()
	k := ti.keys[kid]
	return signWith(ti.t, k.method, k.key, kid, c)
}

func signWith(t *testing.T, m jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func with(c jwt.MapClaims, k string, v any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for kk, vv := range c {
		out[kk] = vv
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func TestATokenOfEachPinnedAlgorithmVerifiesAndYieldsItsClaims(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := ti.verifier(time.Hour)
	for _, kid := range []string{"rsa-1", "ec-1", "ed-1"} {
		t.Run(kid, func(t *testing.T) {
			t.Parallel()
			c := ti.claims("auth0|asha")
			c["email"] = "asha@example.com"
			c["roles"] = []string{"organiser", "wizard", "admin", "organiser"}
			c["org"] = "org-7"
			c["sid"] = "session-1"
			id, err := v.Verify(context.Background(), ti.sign(kid, c))
			require.NoError(t, err)
			require.Equal(t, session.Identity{UserID: "auth0|asha", DeviceID: "session-1", Email: "asha@example.com",
				Roles: []session.Role{session.Organiser, session.Admin}, Org: "org-7", IssuedAt: c["iat"].(int64)}, id)
		})
	}
}

func TestATokenWithoutRolesIsAFansAndAMalformedEmailIsDropped(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := ti.verifier(time.Hour)
	c := ti.claims("bo")
	c["email"] = "Bo <bo@example.com>\r\nBcc: all@example.com"
	id, err := v.Verify(context.Background(), ti.sign("ed-1", c))
	require.NoError(t, err)
	require.Equal(t, []session.Role{session.Fan}, id.Roles)
	require.Empty(t, id.Email)
	require.Equal(t, session.DefaultDevice, id.DeviceID)
	require.True(t, id.Has(session.Fan))
	require.False(t, id.Has(session.Admin))
}

func TestForgedOrStaleTokensAreRefused(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := ti.verifier(time.Hour)
	good := ti.claims("mallory")
	rsaPub := ti.keys["rsa-1"].key.Public()
	der, err := x509.MarshalPKIXPublicKey(rsaPub)
	require.NoError(t, err)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	foreign, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	valid := ti.sign("rsa-1", good)
	parts := strings.Split(valid, ".")

	cases := map[string]string{
		"alg none": func() string {
			s, err := jwt.NewWithClaims(jwt.SigningMethodNone, good).SignedString(jwt.UnsafeAllowNoneSignatureType)
			require.NoError(t, err)
			return s
		}(),
		"HS256 keyed with the public key's PEM (algorithm confusion)": signWith(t, jwt.SigningMethodHS256, pubPEM, "rsa-1", good),
		"HS256 keyed with the published key set":                      signWith(t, jwt.SigningMethodHS256, ti.jwks, "rsa-1", good),
		"an algorithm outside the pinned set (RS384)":                 signWith(t, jwt.SigningMethodRS384, ti.keys["rsa-1"].key, "rsa-1", good),
		"an unknown kid":                     signWith(t, jwt.SigningMethodRS256, foreign, "ghost", good),
		"a known kid, another key":           signWith(t, jwt.SigningMethodRS256, foreign, "rsa-1", good),
		"no kid, another key":                signWith(t, jwt.SigningMethodRS256, foreign, "", good),
		"a known kid of another algorithm":   signWith(t, jwt.SigningMethodES256, ti.keys["ec-1"].key, "rsa-1", good),
		"the wrong issuer":                   ti.sign("rsa-1", with(good, "iss", "https://evil.example")),
		"the wrong audience":                 ti.sign("rsa-1", with(good, "aud", "someone-else")),
		"expired beyond the leeway":          ti.sign("rsa-1", with(good, "exp", time.Now().Add(-2*session.Leeway).Unix())),
		"no expiry":                          ti.sign("rsa-1", with(good, "exp", nil)),
		"not valid yet":                      ti.sign("rsa-1", with(good, "nbf", time.Now().Add(time.Hour).Unix())),
		"issued in the future":               ti.sign("rsa-1", with(good, "iat", time.Now().Add(time.Hour).Unix())),
		"no subject":                         ti.sign("rsa-1", with(good, "sub", nil)),
		"an empty subject":                   ti.sign("rsa-1", with(good, "sub", "")),
		"a subject with a newline":           ti.sign("rsa-1", with(good, "sub", "a\nb")),
		"a tampered payload":                 parts[0] + "." + encodeClaims(t, with(good, "sub", "admin")) + "." + parts[2],
		"a signature with its last bit flip": parts[0] + "." + parts[1] + "." + flipLast(parts[2]),
		"garbage":                            "not.a.token",
		"empty":                              "",
		"too long":                           valid + strings.Repeat("A", 9000),
	}
	// The edge over the same verifier: every forged token is a 401
	// unauthorized problem on a fan route, the untampered one is let in.
	edge := httptest.NewServer((&api.Server{Tokens: v}).Handler())
	t.Cleanup(edge.Close)
	me := func(token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, edge.URL+"/v1/me", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var p struct{ Type string }
		_ = json.NewDecoder(resp.Body).Decode(&p)
		return resp.StatusCode, p.Type
	}
	for name, token := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(context.Background(), token)
			require.ErrorIs(t, err, session.ErrInvalid)
			status, typ := me(token)
			require.Equal(t, http.StatusUnauthorized, status)
			require.Equal(t, "/problems/unauthorized", typ)
		})
	}
	_, err = v.Verify(context.Background(), valid)
	require.NoError(t, err, "the untampered token verifies")
	status, _ := me(valid)
	require.Equal(t, http.StatusOK, status, "and the edge lets it in")
}

func encodeClaims(t *testing.T, c jwt.MapClaims) string {
	raw, err := json.Marshal(c)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(raw)
}

func flipLast(seg string) string {
	last := seg[len(seg)-1]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return seg[:len(seg)-1] + string(repl)
}

func TestUnknownKeyIDsRefetchTheKeySetAtMostOncePerInterval(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := ti.verifier(time.Hour)
	require.EqualValues(t, 1, ti.fetches.Load(), "the key set is fetched once at start")
	foreign, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var accepted atomic.Int64
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := signWith(t, jwt.SigningMethodRS256, foreign, fmt.Sprintf("made-up-%d", i), ti.claims("flood"))
			if _, err := v.Verify(context.Background(), tok); err == nil {
				accepted.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Zero(t, accepted.Load())
	require.LessOrEqual(t, ti.fetches.Load(), int64(2), "a hundred unknown key IDs cause at most one refetch")
}

func TestARotatedInKeyVerifiesAfterARefetchAndTheRotatedOutOneNoLonger(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := ti.verifier(time.Hour)
	oldToken := ti.sign("ed-1", ti.claims("asha"))
	_, err := v.Verify(context.Background(), oldToken)
	require.NoError(t, err)

	_, next, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	ti.keys["ed-2"] = testKey{jwt.SigningMethodEdDSA, next}
	ti.publish("rsa-1", "ec-1", "ed-2")

	id, err := v.Verify(context.Background(), ti.sign("ed-2", ti.claims("asha")))
	require.NoError(t, err, "the new kid triggers a refetch")
	require.Equal(t, "asha", id.UserID)
	require.EqualValues(t, 2, ti.fetches.Load())
	_, err = v.Verify(context.Background(), oldToken)
	require.ErrorIs(t, err, session.ErrInvalid, "the retired key is gone from the refetched set")
}

func TestDiscoveryRefusesADocumentOfAnotherIssuerAndPlainHTTPOffLoopback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": "https://elsewhere.example", "jwks_uri": "https://elsewhere.example/keys"})
	}))
	defer srv.Close()
	_, err := session.Discover(context.Background(), session.Options{Issuer: srv.URL, Audience: audience, Client: srv.Client()})
	require.ErrorContains(t, err, "names issuer")
	_, err = session.Discover(context.Background(), session.Options{Issuer: "http://idp.example", Audience: audience})
	require.ErrorContains(t, err, "not an https URL")
}

func TestTheDevelopmentIssuersTokensVerifyWithItsPublishedKeySet(t *testing.T) {
	t.Parallel()
	var dev *session.Issuer
	var fetches atomic.Int64
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dev = session.NewIssuerAt("dev-secret", srv.URL+session.DevIssuerPath, "encore")
	mux.HandleFunc(session.DevIssuerPath+"/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(dev.Discovery())
	})
	mux.HandleFunc(session.DevIssuerPath+"/jwks.json", func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(dev.JWKS())
	})
	tok, err := dev.Mint(session.Identity{UserID: "asha", DeviceID: "phone", Email: "asha@example.com",
		Roles: []session.Role{session.Support}}, time.Now())
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := session.Discover(ctx, session.Options{Issuer: dev.URL(), Audience: "encore", Client: srv.Client()})
	require.NoError(t, err)
	id, err := v.Verify(ctx, tok)
	require.NoError(t, err)
	require.Equal(t, "phone", id.DeviceID)
	require.Equal(t, []session.Role{session.Support}, id.Roles)
	require.EqualValues(t, 1, fetches.Load())

	again, err := dev.Verifier().Verify(ctx, tok)
	require.NoError(t, err)
	require.Equal(t, id, again, "the in-memory key set is the served one")

	restarted := session.NewIssuerAt("dev-secret", dev.URL(), "encore")
	_, err = restarted.Verifier().Verify(ctx, tok)
	require.NoError(t, err, "the key is derived from the secret: tokens survive a restart")
	_, err = session.NewIssuerAt("other-secret", dev.URL(), "encore").Verifier().Verify(ctx, tok)
	require.ErrorIs(t, err, session.ErrInvalid)
}

func TestRolesAndOrganiserScope(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		id        session.Identity
		org       string
		canManage bool
	}{
		"an admin manages any organiser":           {session.Identity{UserID: "a", Roles: []session.Role{session.Admin}}, "org-1", true},
		"an organiser manages their own":           {session.Identity{UserID: "o", Roles: []session.Role{session.Organiser}, Org: "org-1"}, "org-1", true},
		"an organiser does not manage another's":   {session.Identity{UserID: "o", Roles: []session.Role{session.Organiser}, Org: "org-1"}, "org-2", false},
		"an organiser without an org manages none": {session.Identity{UserID: "o", Roles: []session.Role{session.Organiser}}, "", false},
		"a fan naming an org manages nothing":      {session.Identity{UserID: "f", Roles: []session.Role{session.Fan}, Org: "org-1"}, "org-1", false},
		"support manages nothing":                  {session.Identity{UserID: "s", Roles: []session.Role{session.Support}}, "org-1", false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.canManage, c.id.CanManage(c.org))
		})
	}
	require.Equal(t, []session.Role{session.Fan}, session.ParseRoles([]string{"root", ""}))
	require.Equal(t, []session.Role{session.Operator}, session.ParseRoles([]string{"operator", "operator"}))
}

// A token verified once is answered from memory the next times, without
// the signature's arithmetic or the claims' parsing: a handful of
// allocations where a verification makes dozens. What it says is the same,
// and a caller changing its roles changes nobody else's.
func TestAVerifiedTokenIsAnsweredFromMemoryTheNextTimes(t *testing.T) { // not parallel: AllocsPerRun refuses
	ti := newTestIssuer(t)
	v := ti.verifier(time.Hour)
	tok := ti.sign("ed-1", with(ti.claims("asha"), "roles", []string{"support"}))
	first, err := v.Verify(context.Background(), tok)
	require.NoError(t, err)
	first.Roles[0] = session.Organiser

	var id session.Identity
	allocs := testing.AllocsPerRun(50, func() { id, err = v.Verify(context.Background(), tok) })
	require.NoError(t, err)
	require.Equal(t, "asha", id.UserID)
	require.Equal(t, []session.Role{session.Support}, id.Roles)
	require.Less(t, allocs, 20.0, "allocations of a remembered token's verification")

	// AllocsPerRun calls once to warm up, then once measured: a token each.
	fresh := []string{ti.sign("ed-1", ti.claims("ben")), ti.sign("ed-1", ti.claims("chen"))}
	allocs = testing.AllocsPerRun(1, func() {
		_, err = v.Verify(context.Background(), fresh[0])
		fresh = fresh[1:]
	})
	require.NoError(t, err)
	require.Greater(t, allocs, 40.0, "allocations of a token's first verification")
}

// A remembered token stops verifying when its key leaves the issuer's set,
// when its kid comes to name other key material, and once it expires.
func TestARememberedTokenIsRefusedOnceItsKeyOrItsLifetimeEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ti := newTestIssuer(t)
	v := ti.verifier(time.Hour)

	replaced := ti.sign("ec-1", ti.claims("asha"))
	_, err := v.Verify(ctx, replaced)
	require.NoError(t, err)
	ecNext, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ti.keys["ec-1"] = testKey{jwt.SigningMethodES256, ecNext}
	ti.keys["ed-2"] = ti.keys["ed-1"]
	ti.publish("rsa-1", "ec-1", "ed-2")
	_, err = v.Verify(ctx, ti.sign("ed-2", ti.claims("asha"))) // a new kid: the set is fetched again
	require.NoError(t, err)
	_, err = v.Verify(ctx, replaced)
	require.ErrorIs(t, err, session.ErrInvalid, "signed by the key its kid named before")

	// Expired 29.5 s ago, inside the leeway of 30 s: accepted, remembered
	// until the leeway ends half a second later, then refused.
	late := ti.sign("rsa-1", with(ti.claims("ben"), "exp", time.Now().Add(-session.Leeway+500*time.Millisecond).Unix()))
	if _, err := v.Verify(ctx, late); err == nil { // the second may have turned already
		require.Eventually(t, func() bool {
			_, err := v.Verify(ctx, late)
			return errors.Is(err, session.ErrInvalid)
		}, 5*time.Second, 50*time.Millisecond, "refused once the leeway ends")
	}
}
