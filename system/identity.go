package system

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/session"
)

// ErrNoIdentityProvider: the API would accept no token at all.
var ErrNoIdentityProvider = errors.New("no identity provider: set ENCORE_OIDC_ISSUER (and ENCORE_OIDC_AUDIENCE) " +
	"to the OpenID Connect issuer of fans' tokens, or ENCORE_DEMO_LOGIN=true for development")

// PublicURL is the origin at which fans reach the API (see
// config.EffectivePublicURL; New refuses a value that does not parse).
func PublicURL(cfg config.Config) string {
	if u, err := cfg.EffectivePublicURL(); err == nil {
		return u
	}
	return HTTPURL(cfg.HTTPAddr)
}

// DemoIssuer is the development issuer behind the demo login, or nil when
// the demo login is off or a real issuer is configured.
func DemoIssuer(cfg config.Config) *session.Issuer {
	if !cfg.DemoLogin || cfg.OIDCIssuer != "" {
		return nil
	}
	return session.NewIssuerAt(cfg.SessionSecret.Reveal(), PublicURL(cfg)+session.DevIssuerPath, cfg.OIDCAudience)
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
