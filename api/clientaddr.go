package api

import (
	"net/netip"
	"strings"
)

// ParseClientAddr is the one parser of a client address the network hands
// us, a TCP peer or an X-Forwarded-For hop, in any of the forms proxies
// write: "1.2.3.4", "1.2.3.4:5555", "2001:db8::1", "[2001:db8::1]:443",
// "[2001:db8::1]", "fe80::1%eth0" and "::ffff:1.2.3.4". It returns the
// address alone: no port, no brackets, no zone (an interface name on the
// proxy says nothing about the client), and an IPv4-mapped IPv6 address as
// the IPv4 address it is, so that every spelling of one client counts as
// one. ok is false for anything else, which the caller must not believe.
func ParseClientAddr(s string) (a netip.Addr, ok bool) {
	s = strings.TrimSpace(s)
	host := s
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 || !portSuffix(s[end+1:], true) {
			return netip.Addr{}, false
		}
		host = s[1:end]
	case strings.Count(s, ":") == 1:
		// One colon is an IPv4 address and its port; an IPv6 address has
		// at least two, and without brackets it has no port.
		i := strings.IndexByte(s, ':')
		if !portSuffix(s[i:], false) {
			return netip.Addr{}, false
		}
		host = s[:i]
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	a = a.WithZone("").Unmap()
	if a.Is4() && strings.HasPrefix(s, "[") && !strings.Contains(host, ":") {
		return netip.Addr{}, false // "[1.2.3.4]": brackets belong to IPv6 only
	}
	return a, true
}

// portSuffix reports whether rest is ":" and a port (1 to 5 digits), or,
// when empty is allowed, nothing.
func portSuffix(rest string, empty bool) bool {
	if rest == "" {
		return empty
	}
	digits, ok := strings.CutPrefix(rest, ":")
	if !ok || len(digits) == 0 || len(digits) > 5 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ipv6LimitBits is the prefix an IPv6 client is counted by: a /64 is one
// subscriber's LAN (RFC 6177's smallest assignment, and what SLAAC and
// privacy addresses rotate inside), so counting single IPv6 addresses would
// give one client 2^64 budgets.
const ipv6LimitBits = 64

// LimitKey is what every per-address limit counts for the client address
// addr: an IPv4 address itself, an IPv6 address its /64 ("2001:db8:1:2::/64").
// An address ParseClientAddr cannot read (a Unix socket's peer) is its own
// key.
func LimitKey(addr string) string {
	a, ok := ParseClientAddr(addr)
	if !ok {
		return addr
	}
	if a.Is6() {
		return netip.PrefixFrom(a, ipv6LimitBits).Masked().String()
	}
	return a.String()
}
