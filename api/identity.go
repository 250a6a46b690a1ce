package api

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/session"
)

const identityKey = "encore.identity"

// authenticate verifies the bearer token and records the caller.
func (s *Server) authenticate(c *gin.Context) {
	token, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if !ok {
		writeProblem(c, NewProblem(http.StatusUnauthorized, ProbUnauthorized, "send Authorization: Bearer <token> from the identity provider"))
		return
	}
	v := s.Tokens
	if v == nil && s.Sessions != nil {
		v = s.Sessions.Verifier()
	}
	if v == nil {
		writeProblem(c, NewProblem(http.StatusUnauthorized, ProbUnauthorized, "no identity provider is configured"))
		return
	}
	id, err := v.Verify(c.Request.Context(), token)
	if err != nil {
		writeProblem(c, NewProblem(http.StatusUnauthorized, ProbUnauthorized, "the token is invalid or expired"))
		return
	}
	c.Set(identityKey, id)
	c.Next()
}

// requireRole lets through a caller who holds any of roles; it runs behind
// authenticate.
func requireRole(roles []session.Role) gin.HandlerFunc {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	detail := "this needs the role " + strings.Join(names, " or ")
	return func(c *gin.Context) {
		id := identity(c)
		for _, r := range roles {
			if id.Has(r) {
				c.Next()
				return
			}
		}
		writeProblem(c, NewProblem(http.StatusForbidden, ProbForbidden, detail))
	}
}

// me is who the token says the caller is, for the web app.
func me(c *gin.Context) {
	id := identity(c)
	c.JSON(http.StatusOK, gin.H{"user_id": id.UserID, "device_id": id.DeviceID, "email": id.Email, "roles": id.Roles, "org": id.Org})
}

// tokenFromQuery lets a browser's WebSocket, which cannot set headers, send
// its token as ?access_token=.
func tokenFromQuery(c *gin.Context) {
	if c.GetHeader("Authorization") == "" {
		if t := c.Query("access_token"); t != "" {
			c.Request.Header.Set("Authorization", "Bearer "+t)
		}
	}
	c.Next()
}

// identity is the caller authenticate verified; the zero identity on a
// public route.
func identity(c *gin.Context) session.Identity {
	v, _ := c.Get(identityKey)
	id, _ := v.(session.Identity)
	return id
}

// clientKeys carries the resolved client address and its limit key in a
// request's context.
type clientKeys struct{}

type resolvedClient struct{ addr, key string }

// resolveClient resolves the request's client address once, at the edge,
// for every rate limit and fraud rule after it (clientIP, clientKey).
func (s *Server) resolveClient(c *gin.Context) {
	addr := ClientAddress(c.Request, s.TrustedProxies)
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), clientKeys{},
		resolvedClient{addr: addr, key: LimitKey(addr)}))
	c.Next()
}

// clientIP is the client's address, as resolveClient found it, for the
// fraud rules (which hash it; fraud.IPRef).
func clientIP(req *http.Request) string {
	if rc, ok := req.Context().Value(clientKeys{}).(resolvedClient); ok {
		return rc.addr
	}
	return peer(req)
}

// clientKey is what every per-address limit counts (LimitKey of the
// client's address): the socket cap, the waiting room's and buy plane's
// per-IP limits and the anonymous read limits all call it and nothing
// else, so one client is one key everywhere.
func clientKey(req *http.Request) string {
	if rc, ok := req.Context().Value(clientKeys{}).(resolvedClient); ok {
		return rc.key
	}
	return LimitKey(peer(req))
}

// ClientAddress is the address of the client behind req, normalised by
// ParseClientAddr. The TCP peer, unless the peer is a trusted proxy: then
// the right-most X-Forwarded-For hop that is not itself a trusted proxy,
// since every hop left of it was written by whoever the untrusted client is
// and proves nothing. A forwarded header from an untrusted peer is ignored.
func ClientAddress(req *http.Request, trusted []netip.Prefix) string {
	host := peer(req)
	if !isTrusted(host, trusted) {
		return host
	}
	hops := req.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, ok := ParseClientAddr(parts[j])
			if !ok {
				return host // a malformed hop: trust nothing left of it
			}
			if !isTrusted(a.String(), trusted) {
				return a.String()
			}
			host = a.String()
		}
	}
	return host // every hop is a trusted proxy: the left-most one
}

func isTrusted(host string, trusted []netip.Prefix) bool {
	a, ok := ParseClientAddr(host)
	if !ok {
		return false
	}
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peer is the TCP peer's address, normalised; a peer that is no IP address
// (a Unix socket's) is returned as it is.
func peer(req *http.Request) string {
	if a, ok := ParseClientAddr(req.RemoteAddr); ok {
		return a.String()
	}
	return req.RemoteAddr
}

// ParseTrustedProxies parses a comma-separated list of CIDRs or addresses
// (ENCORE_TRUSTED_PROXIES).
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is neither a CIDR nor an address", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
