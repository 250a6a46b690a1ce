package rehearsal

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// loopbackURL parses an http URL and refuses it unless its host is a
// loopback address (127.0.0.0/8 or ::1; localhost is read as 127.0.0.1). A
// rehearsal is load: it must never leave this machine.
func loopbackURL(name, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s: an http:// URL, not %q", name, raw)
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		u.Host = net.JoinHostPort("127.0.0.1", portOf(u))
		return u, nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.IsLoopback() {
		return nil, fmt.Errorf("%s: %q is not a loopback address (127.0.0.0/8 or ::1): a rehearsal only plays against this machine", name, host)
	}
	return u, nil
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// isLoopbackURL says whether a URL the stack handed us (a 3-D Secure
// challenge page) may be followed.
func isLoopbackURL(raw string) bool {
	_, err := loopbackURL("url", raw)
	return err == nil
}

// sourceAddr is the loopback source address of fan group g: 127.1.0.1,
// 127.1.0.2, ... skipping the .0 and .255 of each /24. Every address of
// 127.0.0.0/8 reaches the loopback interface on Linux without setup.
func sourceAddr(g int) netip.Addr {
	n := g/254*256 + g%254 + 1 // 254 usable hosts a /24
	return netip.AddrFrom4([4]byte{127, byte(1 + n>>16), byte(n >> 8), byte(n)})
}

// clients are the HTTP clients of the fan groups: one connection pool per
// loopback source address, since a pooled connection carries whichever
// request comes next and the stack counts its limits per peer address. A
// stack on ::1 has one loopback address only: then every fan shares it.
type clients struct {
	groups []*http.Client
	spread bool
}

func newClients(api *url.URL, fans, perAddress, concurrency int) *clients {
	spread := true
	if a, err := netip.ParseAddr(api.Hostname()); err == nil && a.Is6() && !a.Is4In6() {
		spread = false
	}
	n := 1
	if spread {
		n = (fans + perAddress - 1) / perAddress
	}
	c := &clients{groups: make([]*http.Client, n), spread: spread}
	for g := range n {
		d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
		if spread {
			d.LocalAddr = &net.TCPAddr{IP: sourceAddr(g).AsSlice()}
		}
		idle := 1 // a household's fans come far apart: a warm connection rarely helps
		if !spread {
			idle = concurrency
		}
		tr := &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return d.DialContext(ctx, network, addr)
			},
			MaxIdleConns:        idle,
			MaxIdleConnsPerHost: idle,
			IdleConnTimeout:     5 * time.Second,
			ForceAttemptHTTP2:   false,
		}
		// Longer than the stack's own bound on a checkout (a minute), so a
		// slow answer is counted as what it is rather than cut off here.
		c.groups[g] = &http.Client{Transport: tr, Timeout: 90 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return c
}

// forFan is fan i's client. Fans are dealt to groups in turn, so the few
// fans of one address arrive far apart, as a household's would.
func (c *clients) forFan(i int) *http.Client { return c.groups[i%len(c.groups)] }

// addresses is how many source addresses the fans use.
func (c *clients) addresses() int { return len(c.groups) }

func (c *clients) close() {
	for _, g := range c.groups {
		g.CloseIdleConnections()
	}
}
