package api_test

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
)

func TestEverySpellingOfOneClientAddressParsesToTheSameAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"1.2.3.4", "1.2.3.4"},
		{" 1.2.3.4 ", "1.2.3.4"},
		{"1.2.3.4:5555", "1.2.3.4"},
		{"1.2.3.4:0", "1.2.3.4"},
		{"::ffff:1.2.3.4", "1.2.3.4"},
		{"[::ffff:1.2.3.4]:80", "1.2.3.4"},
		{"::ffff:102:304", "1.2.3.4"},
		{"2001:db8::1", "2001:db8::1"},
		{"2001:DB8:0:0::1", "2001:db8::1"},
		{"[2001:db8::1]", "2001:db8::1"},
		{"[2001:db8::1]:443", "2001:db8::1"},
		{"fe80::1%eth0", "fe80::1"},
		{"[fe80::1%25eth0]:8080", "fe80::1"},
		{"[fe80::1%eth0]:8080", "fe80::1"},
		{"::1", "::1"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, ok := api.ParseClientAddr(tc.in)
			require.True(t, ok)
			require.Equal(t, tc.want, got.String())
		})
	}
}

func TestAnythingButAnAddressWithAnOptionalPortIsRefused(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", " ", "unknown", "example.com", "example.com:80", "1.2.3", "1.2.3.4.5", "1.2.3.4:", "1.2.3.4:http",
		"1.2.3.4:123456", "1.2.3.4:-1", "[1.2.3.4]", "[1.2.3.4]:80", "[2001:db8::1", "[2001:db8::1]80",
		"[2001:db8::1]:", "[2001:db8::1]:x", "2001:db8::1]", "1.2.3.4%eth0", "_hidden", "[]", "[]:80",
	} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			_, ok := api.ParseClientAddr(in)
			require.False(t, ok, "%q", in)
		})
	}
}

func TestPerAddressLimitsCountIPv4ByAddressAndIPv6ByItsSlash64(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"1.2.3.4", "1.2.3.4"},
		{"1.2.3.4:5555", "1.2.3.4"},
		{"::ffff:1.2.3.4", "1.2.3.4"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:443", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"@", "@"}, // a Unix socket's peer is its own key
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, api.LimitKey(tc.in))
		})
	}
}

// forwarded is a request from peer with the X-Forwarded-For headers xff,
// whose client address is want.
type forwarded struct {
	name, peer string
	xff        []string
	want       string
}

// requireClientAddresses runs each case, as a parallel subtest, behind the
// trusted proxies.
func requireClientAddresses(t *testing.T, trusted string, cases []forwarded) {
	t.Helper()
	prefixes, err := api.ParseTrustedProxies(trusted)
	require.NoError(t, err)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			require.Equal(t, tc.want, api.ClientAddress(req, prefixes))
		})
	}
}

func TestTheClientAddressBelievesForwardedForOnlyFromATrustedProxy(t *testing.T) {
	t.Parallel()
	requireClientAddresses(t, "10.0.0.0/8, 192.0.2.7 ,::1", []forwarded{
		{"no proxy: the peer", "203.0.113.5:4000", nil, "203.0.113.5"},
		{"an untrusted peer's header is ignored", "203.0.113.5:4000", []string{"198.51.100.1"}, "203.0.113.5"},
		{"a trusted proxy names the client", "10.1.2.3:4000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"a hop the client forged left of the real one is ignored", "10.1.2.3:4000", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1"},
		{"trusted hops are skipped from the right", "10.1.2.3:4000", []string{"198.51.100.1, 10.9.9.9", "192.0.2.7"}, "198.51.100.1"},
		{"a single trusted address", "192.0.2.7:4000", []string{"198.51.100.2"}, "198.51.100.2"},
		{"IPv6 loopback proxy", "[::1]:4000", []string{"2001:db8::1"}, "2001:db8::1"},
		{"a malformed hop stops the walk", "10.1.2.3:4000", []string{"198.51.100.1, not-an-ip"}, "10.1.2.3"},
		{"only trusted hops: the left-most", "10.1.2.3:4000", []string{"10.4.4.4"}, "10.4.4.4"},
	})
}

func TestATrustedProxyMayWriteHopsWithPortsAndBrackets(t *testing.T) {
	t.Parallel()
	requireClientAddresses(t, "10.0.0.0/8, 2001:db8:ffff::/48", []forwarded{
		{"an IPv4 hop with a port", "10.1.2.3:4000", []string{"198.51.100.1:5555"}, "198.51.100.1"},
		{"a bracketed IPv6 hop with a port", "10.1.2.3:4000", []string{"[2001:db8::7]:443"}, "2001:db8::7"},
		{"a mapped hop", "10.1.2.3:4000", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"a trusted hop with a port is skipped", "10.1.2.3:4000", []string{"198.51.100.1, 10.9.9.9:80"}, "198.51.100.1"},
		{"a mapped trusted peer", "[::ffff:10.1.2.3]:4000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"an IPv6 proxy", "[2001:db8:ffff::1]:4000", []string{"[2001:db8::9]:1"}, "2001:db8::9"},
		{"an untrusted peer's ported hop is still ignored", "203.0.113.5:4000", []string{"198.51.100.1:5555"}, "203.0.113.5"},
		{"an untrusted mapped peer is itself, unmapped", "[::ffff:203.0.113.5]:4000", nil, "203.0.113.5"},
	})
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

// FuzzParseClientAddr: the parser faces the network. Whatever it is given,
// an address it accepts has no zone and is never IPv4-mapped, reads back as
// itself, and is the same address with a port or (IPv6) brackets added.
func FuzzParseClientAddr(f *testing.F) {
	for _, seed := range []string{
		"1.2.3.4", "1.2.3.4:5555", "::ffff:1.2.3.4", "[::ffff:1.2.3.4]:80", "2001:db8::1", "[2001:db8::1]:443",
		"fe80::1%eth0", "[fe80::1%25eth0]:1", "[1.2.3.4]", "1.2.3.4:", "[::1", "::1]:80", "unknown", "", " :",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, ok := api.ParseClientAddr(in)
		if !ok {
			return
		}
		if !a.IsValid() || a.Zone() != "" || a.Is4In6() {
			t.Fatalf("%q parsed to %v (zone %q)", in, a, a.Zone())
		}
		again, ok := api.ParseClientAddr(a.String())
		if !ok || again != a {
			t.Fatalf("%q parsed to %v, which reads back as %v, %v", in, a, again, ok)
		}
		withPort := netip.AddrPortFrom(a, 8080).String()
		if p, ok := api.ParseClientAddr(withPort); !ok || p != a {
			t.Fatalf("%q with a port reads as %v, %v", a, p, ok)
		}
		key := api.LimitKey(a.String())
		if a.Is6() && !strings.HasSuffix(key, "/64") || a.Is4() && key != a.String() {
			t.Fatalf("%v limited as %q", a, key)
		}
	})
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
