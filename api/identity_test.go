package api_test

import (
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
)

func TestTheClientAddressBelievesForwardedForOnlyFromATrustedProxy(t *testing.T) {
	t.Parallel()
	trusted, err := api.ParseTrustedProxies("10.0.0.0/8, 192.0.2.7 ,::1")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"no proxy: the peer", "203.0.113.5:4000", nil, "203.0.113.5"},
		{"an untrusted peer's header is ignored", "203.0.113.5:4000", []string{"198.51.100.1"}, "203.0.113.5"},
		{"a trusted proxy names the client", "10.1.2.3:4000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"a hop the client forged left of the real one is ignored", "10.1.2.3:4000", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1"},
		{"trusted hops are skipped from the right", "10.1.2.3:4000", []string{"198.51.100.1, 10.9.9.9", "192.0.2.7"}, "198.51.100.1"},
		{"a single trusted address", "192.0.2.7:4000", []string{"198.51.100.2"}, "198.51.100.2"},
		{"IPv6 loopback proxy", "[::1]:4000", []string{"2001:db8::1"}, "2001:db8::1"},
		{"a malformed hop stops the walk", "10.1.2.3:4000", []string{"198.51.100.1, not-an-ip"}, "10.1.2.3"},
		{"only trusted hops: the left-most", "10.1.2.3:4000", []string{"10.4.4.4"}, "10.4.4.4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			require.Equal(t, tc.want, api.ClientAddress(req, trusted))
		})
	}
}

func TestTrustedProxiesMustBeCIDRsOrAddresses(t *testing.T) {
	t.Parallel()
	_, err := api.ParseTrustedProxies("10.0.0.0/8,lb.internal")
	require.ErrorContains(t, err, "lb.internal")
	none, err := api.ParseTrustedProxies("")
	require.NoError(t, err)
	require.Empty(t, none)
	one, err := api.ParseTrustedProxies("10.0.0.1")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}, one)
}

// FuzzClientAddress: whatever X-Forwarded-For says, the answer is the peer
// or a well-formed address, and an untrusted peer is always itself.
func FuzzClientAddress(f *testing.F) {
	f.Add("198.51.100.1", true)
	f.Add("6.6.6.6, 10.0.0.1", true)
	f.Add(",,, ::ffff:1.2.3.4 ,", false)
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, xff string, fromProxy bool) {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "203.0.113.9:1"
		if fromProxy {
			req.RemoteAddr = "10.0.0.2:1"
		}
		req.Header.Set("X-Forwarded-For", xff)
		got := api.ClientAddress(req, trusted)
		if !fromProxy && got != "203.0.113.9" {
			t.Fatalf("an untrusted peer's header moved the address to %q", got)
		}
		if _, err := netip.ParseAddr(got); err != nil {
			t.Fatalf("not an address: %q", got)
		}
	})
}
