package api

import (
	"net"
	"net/url"
	"strings"
)

// ReturnURLs are where a checkout's return_url may send the fan back after
// the payment provider's page: the provider redirects the fan's browser
// there, so any other place would make Encore an open redirect (or, to
// loopback, a way to reach whatever listens on the fan's own machine).
//
// The zero value accepts loopback hosts only (a test server).
type ReturnURLs struct {
	// Origin is ENCORE_PUBLIC_URL's origin (scheme://host[:port]), where
	// the web app's booking page is; empty: none.
	Origin string
	// NoLoopback refuses a loopback host (http://127.0.0.1, localhost,
	// [::1]): production, where the app is never on the fan's machine.
	NoLoopback bool
}

// check returns the field error of a return_url it does not accept; an
// empty one is accepted (the configured return page is used).
func (p ReturnURLs) check(raw string) *FieldError {
	if raw == "" {
		return nil
	}
	if len(raw) > 2000 {
		return &FieldError{"return_url", "at most 2000 characters"}
	}
	where := "on " + p.Origin
	switch {
	case p.Origin == "":
		where = "on a loopback host"
	case !p.NoLoopback:
		where += " or a loopback host"
	}
	refuse := &FieldError{"return_url", "an absolute http(s) URL " + where}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return refuse
	}
	if own, err := url.Parse(p.Origin); err == nil && p.Origin != "" &&
		strings.EqualFold(own.Scheme, u.Scheme) && strings.EqualFold(own.Host, u.Host) {
		return nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); !p.NoLoopback && ((ip != nil && ip.IsLoopback()) || strings.EqualFold(host, "localhost")) {
		return nil
	}
	return refuse
}
