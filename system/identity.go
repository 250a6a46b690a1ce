package system

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/session"
)

// ErrNoIdentityProvider: the API would accept no token at all.
var ErrNoIdentityProvider = errors.New("no identity provider: set ENCORE_OIDC_ISSUER (and ENCORE_OIDC_AUDIENCE) " +
	"to the OpenID Connect issuer of fans' tokens, or ENCORE_DEMO_LOGIN=true with ENCORE_ENV=development")

// PublicURL is the origin at which fans reach the API (see
// config.EffectivePublicURL; New refuses a value that does not parse).
func PublicURL(cfg config.Config) string {
	if u, err := cfg.EffectivePublicURL(); err == nil {
		return u
	}
	return HTTPURL(cfg.HTTPAddr)
}

// ErrDemoLoginOutsideDevelopment: the demo login hands anyone any role, so
// only a development machine may serve it.
var ErrDemoLoginOutsideDevelopment = errors.New("ENCORE_DEMO_LOGIN is true outside development: anyone could mint " +
	"an admin token; set ENCORE_OIDC_ISSUER, or ENCORE_ENV=development on a development machine")

// ReturnURLs are where a checkout's return_url may point: the public
// origin, and loopback hosts too outside production (a development stack, a
// staging rehearsal on one machine).
func ReturnURLs(cfg config.Config) api.ReturnURLs {
	return api.ReturnURLs{Origin: PublicURL(cfg), NoLoopback: cfg.Env == config.Production}
}

// DemoIssuer is the development issuer behind the demo login, or nil when
// the demo login is off, a real issuer is configured, or the process is not
// a development one (CheckDemoLogin refuses that configuration at start).
func DemoIssuer(cfg config.Config) *session.Issuer {
	if !cfg.DemoLogin || cfg.OIDCIssuer != "" || !cfg.Development() {
		return nil
	}
	return session.NewIssuerAt(cfg.SessionSecret.Reveal(), PublicURL(cfg)+session.DevIssuerPath, cfg.OIDCAudience)
}

// CheckDemoLogin refuses the demo login outside development (staging
// included: a rehearsal needs an identity provider too).
func CheckDemoLogin(cfg config.Config) error {
	if cfg.DemoLogin && cfg.OIDCIssuer == "" && !cfg.Development() {
		return ErrDemoLoginOutsideDevelopment
	}
	return nil
}

// Identity is what verifies fans' bearer tokens: the configured OpenID
// Connect issuer's keys (fetched now, refreshed until ctx ends), else the
// development issuer's. With neither the API must not start.
func Identity(ctx context.Context, cfg config.Config, dev *session.Issuer, log *slog.Logger) (*session.Verifier, error) {
	if cfg.OIDCIssuer == "" {
		if dev == nil {
			return nil, ErrNoIdentityProvider
		}
		return dev.Verifier(), nil
	}
	if cfg.DemoLogin {
		log.Warn("ENCORE_DEMO_LOGIN is ignored: ENCORE_OIDC_ISSUER is set", "issuer", cfg.OIDCIssuer)
	}
	v, err := session.Discover(ctx, session.Options{Issuer: cfg.OIDCIssuer, Audience: cfg.OIDCAudience,
		JWKSURL: cfg.OIDCJWKSURL, Log: log.With("component", "oidc")})
	if err != nil {
		return nil, fmt.Errorf("ENCORE_OIDC_ISSUER %s: %w", cfg.OIDCIssuer, err)
	}
	return v, nil
}
